package web

import (
	"errors"
	"io"
	"log/slog"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func errorsNew(s string) error { return errors.New(s) }
