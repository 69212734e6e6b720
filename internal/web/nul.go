package web

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// PostgreSQL cannot store the NUL character in text: a string holding it fails whichever
// statement meets it first, as a server error (issue 28: a map named "a\u0000b" answered 500).
// Every request is checked for it here, once, before any handler: path and query parameters,
// and every string (object keys included) of a JSON or form body. Streamed bodies (uploads) are
// left to their handlers, which read them as files.

const nulMsg = "must not contain the NUL character (\\u0000)"

// nulFailure reports where the request holds a NUL character, nil when nowhere. It reads the
// body only when it is JSON or a form, and puts it back for the validation and the handler
// (with the error that ended it, if any: a body over its size limit is theirs to answer).
func nulFailure(c echo.Context, streaming bool) *ValidationFailure {
	var items []FieldError
	for i, v := range c.ParamValues() {
		if strings.IndexByte(v, 0) >= 0 {
			items = append(items, nulItem([]any{"path", c.ParamNames()[i]}))
		}
	}
	for _, name := range sortedKeys(c.QueryParams()) {
		if slices.ContainsFunc(c.QueryParams()[name], hasNUL) || hasNUL(name) {
			items = append(items, nulItem([]any{"query", name}))
		}
	}
	req := c.Request()
	media, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	jsonBody := media == "application/json" || strings.HasSuffix(media, "+json")
	if !streaming && req.Body != nil && (jsonBody || media == echo.MIMEApplicationForm) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failing{err}))
			return nil
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case jsonBody && bytes.Contains(body, []byte(`\u0000`)):
			// Only an escape can put NUL in a JSON string (a raw one is invalid JSON); the text
			// may also be an escaped backslash before "u0000", so decode to be sure.
			var v any
			if json.Unmarshal(body, &v) == nil {
				items = nulStrings(v, []any{"body"}, items)
			}
		case media == echo.MIMEApplicationForm && bytes.Contains(body, []byte("%00")):
			form, err := url.ParseQuery(string(body))
			if err == nil {
				for _, name := range sortedKeys(form) {
					if slices.ContainsFunc(form[name], hasNUL) || hasNUL(name) {
						items = append(items, nulItem([]any{"body", name}))
					}
				}
			}
		}
	}
	if len(items) == 0 {
		return nil
	}
	return &ValidationFailure{Status: 422, Errors: items}
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// nulStrings adds an item for each string of v, or key of its objects, holding NUL.
func nulStrings(v any, loc []any, items []FieldError) []FieldError {
	switch x := v.(type) {
	case string:
		if hasNUL(x) {
			items = append(items, nulItem(loc))
		}
	case []any:
		for i, e := range x {
			items = nulStrings(e, append(slices.Clip(loc), i), items)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			at := append(slices.Clip(loc), k)
			if hasNUL(k) {
				items = append(items, nulItem(at))
			}
			items = nulStrings(x[k], at, items)
		}
	}
	return items
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

func nulItem(loc []any) FieldError {
	for i, l := range loc {
		if s, ok := l.(string); ok && hasNUL(s) {
			loc[i] = strings.ReplaceAll(s, "\x00", `\u0000`) // a key that holds it is named, not echoed raw
		}
	}
	return FieldError{Loc: loc, Msg: nulMsg, Type: "string_nul_character"}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
