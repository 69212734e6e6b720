package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"meridian/internal/apperr"
	"meridian/internal/db"
)

// ProblemMediaType is the media type of every error body (RFC 9457).
const ProblemMediaType = "application/problem+json"

// Problem is the error body of spec section 7.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   any    `json:"detail"` // a string, or []FieldError for request validation
	Instance string `json:"instance,omitempty"`
}

// FieldError is one item of a validation problem's detail array (spec section 4.4).
type FieldError struct {
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Type  string         `json:"type"`
	Input any            `json:"input,omitempty"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// ValidationFailure carries field errors from request validation to the error handler.
type ValidationFailure struct {
	Status int // 400 or 422
	Errors []FieldError
	// Cause is what the validator returned, kept so the mapper can tell a body that could not be
	// read at all (over its size limit) from one that broke a rule.
	Cause error
}

func (v *ValidationFailure) Unwrap() error { return v.Cause }

func (v *ValidationFailure) Error() string {
	if len(v.Errors) == 0 {
		return "request validation failed"
	}
	return "request validation failed: " + v.Errors[0].Msg
}

var kindStatus = map[apperr.Kind]int{
	apperr.KindInternal:       http.StatusInternalServerError,
	apperr.KindInvalid:        http.StatusBadRequest,
	apperr.KindUnauthorized:   http.StatusUnauthorized,
	apperr.KindForbidden:      http.StatusForbidden,
	apperr.KindNotFound:       http.StatusNotFound,
	apperr.KindConflict:       http.StatusConflict,
	apperr.KindGone:           http.StatusGone,
	apperr.KindTooLarge:       http.StatusRequestEntityTooLarge,
	apperr.KindUnprocessable:  http.StatusUnprocessableEntity,
	apperr.KindRateLimited:    http.StatusTooManyRequests,
	apperr.KindUpstream:       http.StatusBadGateway,
	apperr.KindUnavailable:    http.StatusServiceUnavailable,
	apperr.KindNotImplemented: http.StatusNotImplemented,
	apperr.KindTimeout:        http.StatusGatewayTimeout,
}

// ErrorHandler is the one place where an error becomes a response: binding, validation, domain,
// routing and panic errors all leave as application/problem+json.
// queryTimeout is QUERY_TIMEOUT, named in the 503 of a statement PostgreSQL cancelled.
func ErrorHandler(log *slog.Logger, queryTimeout time.Duration) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			// Headers are gone (a stream broke midway); all we can do is log.
			log.Warn("error after response started", "err", err, "request_id", requestID(c))
			return
		}
		if db.StatementTimeout(err) && c.Request().Context().Err() == nil {
			// PostgreSQL cut the statement at QUERY_TIMEOUT while the client still waits: say so.
			err = &apperr.Error{Kind: apperr.KindUnavailable, Title: "Query timeout", Detail: fmt.Sprintf(
				"the query took longer than the limit of %s and was cancelled; narrow the request or retry later", queryTimeout), Err: err}
		}
		p, retryAfter := toProblem(err)
		p.Instance = requestID(c)
		if p.Status >= 500 && p.Status != http.StatusNotImplemented {
			log.Error("request failed", "status", p.Status, "err", err, "request_id", p.Instance,
				"method", c.Request().Method, "path", c.Request().URL.Path)
		}
		if retryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
		}
		if p.Status == http.StatusUnauthorized && c.Response().Header().Get("WWW-Authenticate") == "" {
			// Every 401 names the scheme that would do (RFC 9110 15.5.2): clients sign in or
			// refresh their token on it, also when the domain refused an anonymous caller.
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="meridian"`)
		}
		writeProblem(c, p)
	}
}

// StatusOf is the status err answers with, for answers that report several outcomes in one body.
func StatusOf(err error) int {
	p, _ := toProblem(err)
	return p.Status
}

func writeProblem(c echo.Context, p Problem) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	body, _ := json.Marshal(p)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, ProblemMediaType)
	h.Del(echo.HeaderContentLength)
	c.Response().WriteHeader(p.Status)
	if c.Request().Method != http.MethodHead {
		_, _ = c.Response().Write(body)
	}
}

func toProblem(err error) (Problem, time.Duration) {
	var (
		ae   *apperr.Error
		vf   *ValidationFailure
		he   *echo.HTTPError
		mbe  *http.MaxBytesError
		prob = func(status int, detail string) Problem {
			return Problem{Title: http.StatusText(status), Status: status, Detail: detail}
		}
	)
	switch {
	// First: a body cut at its limit (no Content-Length, so BodyLimit could not refuse it up
	// front) surfaces wrapped in whatever was reading it, request validation included.
	case errors.As(err, &mbe):
		return prob(http.StatusRequestEntityTooLarge,
			"request body exceeds the limit of "+strconv.FormatInt(mbe.Limit, 10)+" bytes"), 0
	case errors.As(err, &vf):
		if vf.Status == http.StatusBadRequest {
			// Malformed syntax has no field locations worth an array: one sentence says it.
			msgs := make([]string, 0, len(vf.Errors))
			for _, fe := range vf.Errors {
				if len(fe.Loc) == 2 && fe.Loc[0] != "body" {
					msgs = append(msgs, fmt.Sprintf("%s parameter %v: %s", fe.Loc[0], fe.Loc[1], fe.Msg))
					continue
				}
				msgs = append(msgs, fe.Msg)
			}
			return prob(http.StatusBadRequest, "malformed request: "+strings.Join(msgs, "; ")), 0
		}
		return Problem{Title: "Validation error", Status: vf.Status, Detail: vf.Errors}, 0
	case errors.As(err, &ae):
		status := kindStatus[ae.Kind]
		p := prob(status, ae.Detail)
		if ae.Title != "" {
			p.Title = ae.Title
		}
		if status == http.StatusInternalServerError {
			p.Detail = "the server could not complete the request; the request id identifies it in the logs"
		}
		retry := ae.RetryAfter
		if status == http.StatusServiceUnavailable && retry == 0 {
			retry = 5 * time.Second
		}
		return p, retry
	case db.Unavailable(err):
		return prob(http.StatusServiceUnavailable, "the database could not serve the request; retry shortly"), 5 * time.Second
	case errors.Is(err, context.Canceled):
		// The client went away; the status is never seen but the log line stays honest.
		return prob(499, "client closed the request"), 0
	case errors.As(err, &he):
		status := he.Code
		detail := http.StatusText(status)
		if m, ok := he.Message.(string); ok && m != "" {
			detail = m
		}
		switch status {
		case http.StatusNotFound:
			detail = "no resource at this path"
		case http.StatusMethodNotAllowed:
			detail = "method not allowed on this path"
		case http.StatusInternalServerError:
			detail = "the server could not complete the request; the request id identifies it in the logs"
		}
		if status == http.StatusBadRequest && he.Internal != nil {
			// Binder errors: keep the parameter name, drop Go internals.
			detail = shortBindMessage(detail)
		}
		return prob(status, detail), 0
	default:
		return prob(http.StatusInternalServerError, "the server could not complete the request; the request id identifies it in the logs"), 0
	}
}

func shortBindMessage(s string) string {
	if len(s) > 300 {
		return s[:300]
	}
	return s
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
