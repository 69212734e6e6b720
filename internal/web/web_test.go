package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"meridian/internal/apperr"
)

func TestCompoundSegments(t *testing.T) {
	tests := []struct {
		route, url string
		want       map[string]string
		wantStatus int
	}{
		{"/tiles/:table_path/:z/:x/:y.pbf", "/tiles/abc/3/4/5.pbf", map[string]string{"table_path": "abc", "z": "3", "x": "4", "y": "5"}, 200},
		{"/tiles/:table_path/:z/:x/:y.pbf", "/tiles/abc/3/4/5.png", nil, 404},
		{"/raster/:id/:z/:x/:y.:fmt", "/raster/d1/1/2/3.webp", map[string]string{"id": "d1", "z": "1", "x": "2", "y": "3", "fmt": "webp"}, 200},
		{"/raster/:id/:z/:x/:y.:fmt", "/raster/d1/1/2/3", nil, 404},
		{"/plain/:id", "/plain/x.y", map[string]string{"id": "x.y"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			e := echo.New()
			e.HTTPErrorHandler = ErrorHandler(discardLogger(), time.Second)
			path, mw := compoundSegments(tt.route)
			var got map[string]string
			h := func(c echo.Context) error {
				got = map[string]string{}
				for i, n := range c.ParamNames() {
					got[n] = c.ParamValues()[i]
				}
				return c.NoContent(200)
			}
			if mw != nil {
				e.GET(path, h, mw)
			} else {
				e.GET(path, h)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.url, nil))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("param %s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestRedactQuery(t *testing.T) {
	got := redactQuery("api_key=supersecretvalue&limit=10&SIG=abc")
	if strings.Contains(got, "supersecretvalue") || strings.Contains(got, "abc") || !strings.Contains(got, "limit=10") {
		t.Fatalf("redactQuery leaked or lost parameters: %q", got)
	}
}

func TestRateLimiter(t *testing.T) {
	l := PerMinute(3)
	for i := 0; i < 3; i++ {
		if ok, _ := l.Allow("1.2.3.4"); !ok {
			t.Fatalf("request %d refused within the burst", i+1)
		}
	}
	ok, wait := l.Allow("1.2.3.4")
	if ok || wait < 15*time.Second || wait > 21*time.Second {
		t.Fatalf("4th request: ok=%v wait=%v, want refusal with ~20s wait", ok, wait)
	}
	if ok, _ := l.Allow("5.6.7.8"); !ok {
		t.Fatal("another client was limited by the first one's bucket")
	}
	err := Limited(context.Background(), l, "1.2.3.4")
	var ae *apperr.Error
	if err == nil || !errorsAs(err, &ae) || ae.Kind != apperr.KindRateLimited || ae.RetryAfter < time.Second {
		t.Fatalf("Limited = %v, want a rate-limit error with RetryAfter", err)
	}
}

const miniDoc = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /things/{thing_id}:
    post:
      operationId: makeThing
      parameters:
        - {name: thing_id, in: path, required: true, schema: {type: string, format: uuid}}
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 200}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties:
                name: {type: string, minLength: 1, maxLength: 5}
                kind: {type: string, enum: [a, b]}
      responses:
        "200": {description: ok}
`

func TestValidateRequest(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(miniDoc))
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(discardLogger(), time.Second)
	r := NewRouter(e, doc, "/api", func(op *Operation) []echo.MiddlewareFunc {
		return []echo.MiddlewareFunc{ValidateRequest(doc, op)}
	})
	r.POST("/api/things/:thing_id", func(c echo.Context) error { return c.NoContent(200) })

	const id = "0b7e7dd4-3f55-4c0e-9a4f-2d6f0f1d2c3b"
	tests := []struct {
		name, path, body string
		status           int
		loc              []any
		kind             string
	}{
		{"valid", "/api/things/" + id, `{"name":"abc"}`, 200, nil, ""},
		{"limit over maximum is clamped later, not refused", "/api/things/" + id + "?limit=100000", `{"name":"abc"}`, 200, nil, ""},
		{"too long", "/api/things/" + id, `{"name":"abcdef"}`, 422, []any{"body", "name"}, "string_too_long"},
		{"missing field", "/api/things/" + id, `{}`, 422, []any{"body", "name"}, "missing"},
		{"unknown enum", "/api/things/" + id, `{"name":"a","kind":"z"}`, 422, []any{"body", "kind"}, "enum"},
		{"wrong type", "/api/things/" + id, `{"name":5}`, 422, []any{"body", "name"}, "type_error"},
		{"bad uuid", "/api/things/not-a-uuid", `{"name":"abc"}`, 422, []any{"path", "thing_id"}, "format"},
		{"limit below minimum", "/api/things/" + id + "?limit=0", `{"name":"abc"}`, 422, []any{"query", "limit"}, "greater_than_equal"},
		{"malformed json", "/api/things/" + id, `{"name":`, 400, []any{"body"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 200 {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != ProblemMediaType {
				t.Fatalf("content type %q", ct)
			}
			if tt.status == 400 {
				var p Problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != 400 {
					t.Fatalf("400 problem %s: %v", rec.Body, err)
				}
				if _, ok := p.Detail.(string); !ok {
					t.Fatalf("400 detail is not a string: %s", rec.Body)
				}
				return
			}
			var p struct {
				Status int          `json:"status"`
				Detail []FieldError `json:"detail"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if p.Status != tt.status || len(p.Detail) == 0 {
				t.Fatalf("problem %+v", p)
			}
			d := p.Detail[0]
			if tt.kind != "" && d.Type != tt.kind {
				t.Errorf("type %q, want %q (%+v)", d.Type, tt.kind, d)
			}
			if len(d.Loc) < len(tt.loc) {
				t.Fatalf("loc %v, want prefix %v", d.Loc, tt.loc)
			}
			for i := range tt.loc {
				if d.Loc[i] != tt.loc[i] {
					t.Errorf("loc %v, want %v", d.Loc, tt.loc)
				}
			}
		})
	}
}

func TestErrorHandlerKinds(t *testing.T) {
	tests := []struct {
		err    error
		status int
		retry  string
	}{
		{apperr.NotFound("no dataset"), 404, ""},
		{apperr.NotImplemented("listMaps"), 501, ""},
		{&apperr.Error{Kind: apperr.KindRateLimited, Detail: "slow down", RetryAfter: 1500 * time.Millisecond}, 429, "2"},
		{echo.ErrNotFound, 404, ""},
		{echo.ErrMethodNotAllowed, 405, ""},
		{context.DeadlineExceeded, 503, "5"},
		{errorsNew("boom"), 500, ""},
		{fmt.Errorf("list: %w", &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}), 503, "5"},
		// A chunked body cut by http.MaxBytesReader while the validator read it.
		{&ValidationFailure{Status: 422, Errors: []FieldError{{Loc: []any{"body"}, Msg: "http: request body too large"}},
			Cause: fmt.Errorf("reading failed: %w", &http.MaxBytesError{Limit: 10})}, 413, ""},
	}
	for _, tt := range tests {
		e := echo.New()
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
		ErrorHandler(discardLogger(), time.Second)(tt.err, c)
		if rec.Code != tt.status || rec.Header().Get("Content-Type") != ProblemMediaType {
			t.Errorf("%v: status %d type %q, want %d problem", tt.err, rec.Code, rec.Header().Get("Content-Type"), tt.status)
		}
		if got := rec.Header().Get("Retry-After"); got != tt.retry {
			t.Errorf("%v: Retry-After %q, want %q", tt.err, got, tt.retry)
		}
		var p Problem
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		if p.Status != tt.status || p.Title == "" || p.Type != "about:blank" {
			t.Errorf("%v: problem %+v", tt.err, p)
		}
		if tt.status == 500 && strings.Contains(rec.Body.String(), "boom") {
			t.Errorf("internal error leaked its cause: %s", rec.Body)
		}
	}
}
