// Package apperr defines the error values domain code returns. Only the HTTP layer turns them into
// statuses and problem documents (internal/web), so domain packages stay free of HTTP.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

const (
	KindInternal       Kind = iota
	KindInvalid             // malformed request: 400
	KindUnauthorized        // no or unresolvable credential: 401
	KindForbidden           // known caller, not allowed: 403
	KindNotFound            // missing or invisible to the caller: 404
	KindConflict            // state prevents the operation: 409
	KindGone                // existed, revoked: 410
	KindTooLarge            // payload or quota too large: 413
	KindUnprocessable       // well-formed but violates a rule: 422
	KindRateLimited         // 429, with RetryAfter
	KindUpstream            // an upstream provider failed: 502
	KindUnavailable         // the database or a dependency is down: 503
	KindNotImplemented      // operation not built: 501
	KindTimeout             // the work took longer than its limit and was stopped: 504
)

// Error is a domain error with a kind and a message safe to show to the caller.
type Error struct {
	Kind       Kind
	Title      string        // optional short summary; the HTTP layer has a default per kind
	Detail     string        // safe to show to the caller
	RetryAfter time.Duration // for KindRateLimited and KindUnavailable
	Err        error         // cause, logged but never shown
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Detail + ": " + e.Err.Error()
	}
	return e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind with a formatted detail.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Wrap keeps cause for the logs while showing detail to the caller.
func Wrap(kind Kind, cause error, detail string) *Error {
	return &Error{Kind: kind, Detail: detail, Err: cause}
}

// Convenience constructors for the common kinds.
func Invalid(format string, args ...any) *Error       { return New(KindInvalid, format, args...) }
func Unauthorized(format string, args ...any) *Error  { return New(KindUnauthorized, format, args...) }
func Forbidden(format string, args ...any) *Error     { return New(KindForbidden, format, args...) }
func NotFound(format string, args ...any) *Error      { return New(KindNotFound, format, args...) }
func Conflict(format string, args ...any) *Error      { return New(KindConflict, format, args...) }
func Gone(format string, args ...any) *Error          { return New(KindGone, format, args...) }
func TooLarge(format string, args ...any) *Error      { return New(KindTooLarge, format, args...) }
func Unprocessable(format string, args ...any) *Error { return New(KindUnprocessable, format, args...) }

// NotImplemented names the operation that is not built yet.
func NotImplemented(operationID string) *Error {
	return New(KindNotImplemented, "operation %s is not implemented yet", operationID)
}

// KindOf returns the kind of err, KindInternal when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}
