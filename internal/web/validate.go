package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

func init() {
	// kin-openapi leaves format: uuid unchecked unless told; ids in paths and bodies must be UUIDs.
	openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(
		`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`))
	// Likewise format: email, so a malformed address is a 422 of the validation (spec 4.4)
	// rather than a binding error of the generated code.
	openapi3.DefineStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail))
}

// ValidateRequest checks parameters and JSON bodies against the operation before any handler runs,
// so malformed input never reaches domain code. File uploads are validated by their handlers while
// streaming, because kin-openapi would buffer the whole body.
func ValidateRequest(doc *openapi3.T, op *Operation) echo.MiddlewareFunc {
	// Credentials are checked by Authenticate. kin-openapi's own security check would read the
	// whole body into memory (to hand it to an authentication function), which must not happen
	// to a 500 MB upload, so validation sees the operation without security requirements.
	unsecured := *op.Spec
	unsecured.Security = &openapi3.SecurityRequirements{}
	route := &routers.Route{Spec: doc, Path: op.Template, PathItem: op.PathItem, Method: op.Method, Operation: &unsecured}
	opts := &openapi3filter.Options{
		MultiError:         true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody: op.Streaming,
	}
	// OGC API and STAC clients expect 400 for an invalid parameter (OGC API Features
	// /req/core/query-param-invalid); the rest of the API answers 422 with a detail array.
	standards := slices.ContainsFunc(op.Spec.Tags, func(tag string) bool { return strings.HasPrefix(tag, "OGC") || strings.HasPrefix(tag, "STAC") })
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			params := map[string]string{}
			for i, n := range c.ParamNames() {
				params[n] = c.ParamValues()[i]
			}
			if vf := nulFailure(c, op.Streaming); vf != nil {
				if standards {
					vf.Status = http.StatusBadRequest
				}
				return vf
			}
			in := &openapi3filter.RequestValidationInput{
				Request: c.Request(), PathParams: params, Route: route, Options: opts,
			}
			if err := openapi3filter.ValidateRequest(c.Request().Context(), in); err != nil {
				if vf := validationFailure(err); vf != nil {
					if standards {
						vf.Status = http.StatusBadRequest
					}
					return vf
				}
			}
			return next(c)
		}
	}
}

// validationFailure converts kin-openapi errors into the detail items of spec section 4.4. It
// returns nil when every error is one the server deliberately tolerates (an over-maximum limit,
// which is clamped instead, as OGC API Features requires).
func validationFailure(err error) *ValidationFailure {
	var items []FieldError
	status := http.StatusUnprocessableEntity
	var walk func(error)
	walk = func(err error) {
		// Type checks, not errors.As: a RequestError unwraps to its own MultiError of schema
		// errors, and errors.As would skip the RequestError that says where they happened.
		if multi, ok := err.(openapi3.MultiError); ok {
			for _, e := range multi {
				walk(e)
			}
			return
		}
		re, ok := err.(*openapi3filter.RequestError)
		if !ok {
			items = append(items, FieldError{Loc: []any{"request"}, Msg: trimMsg(err.Error()), Type: "invalid"})
			return
		}
		loc := []any{"body"}
		if re.Parameter != nil {
			loc = []any{re.Parameter.In, re.Parameter.Name}
		}
		if inner, ok := re.Err.(openapi3.MultiError); ok {
			for _, e := range inner {
				walk(&openapi3filter.RequestError{Input: re.Input, Parameter: re.Parameter, RequestBody: re.RequestBody, Reason: re.Reason, Err: e})
			}
			return
		}
		var se *openapi3.SchemaError
		if errors.As(re.Err, &se) {
			if re.Parameter != nil && re.Parameter.Name == "limit" && se.SchemaField == "maximum" {
				return // clamped by the handler
			}
			items = append(items, schemaItem(loc, se))
			return
		}
		var pe *openapi3filter.ParseError
		if errors.As(re.Err, &pe) && re.Parameter == nil {
			status = http.StatusBadRequest // unparseable body: malformed syntax, not a rule violation
		}
		msg := re.Reason
		if re.Err != nil {
			msg = re.Err.Error()
		}
		kind := "invalid"
		if strings.Contains(msg, "must have a value") || strings.Contains(msg, "value is required") {
			kind = "missing"
		}
		items = append(items, FieldError{Loc: loc, Msg: trimMsg(msg), Type: kind})
	}
	walk(err)
	if len(items) == 0 {
		return nil
	}
	return &ValidationFailure{Status: status, Errors: items, Cause: err}
}

func schemaItem(loc []any, se *openapi3.SchemaError) FieldError {
	for _, p := range se.JSONPointer() {
		loc = append(loc, p)
	}
	item := FieldError{Loc: loc, Msg: trimMsg(se.Reason), Input: shortInput(se.Value)}
	s := se.Schema
	switch se.SchemaField {
	case "required":
		item.Type = "missing"
		item.Msg = "field required"
		item.Input = nil
		if name := missingProperty(se.Reason); name != "" && (len(loc) == 0 || loc[len(loc)-1] != name) {
			item.Loc = append(item.Loc, name)
		}
	case "maxLength":
		item.Type, item.Ctx = "string_too_long", ctxOf("max_length", s.MaxLength)
	case "minLength":
		item.Type, item.Ctx = "string_too_short", map[string]any{"min_length": s.MinLength}
	case "maxItems":
		item.Type, item.Ctx = "too_long", ctxOf("max_length", s.MaxItems)
	case "minItems":
		item.Type, item.Ctx = "too_short", map[string]any{"min_length": s.MinItems}
	case "maximum":
		item.Type, item.Ctx = "less_than_equal", map[string]any{"le": s.Max}
	case "minimum":
		item.Type, item.Ctx = "greater_than_equal", map[string]any{"ge": s.Min}
	case "enum":
		item.Type, item.Ctx = "enum", map[string]any{"expected": s.Enum}
	case "pattern":
		item.Type, item.Ctx = "string_pattern_mismatch", map[string]any{"pattern": s.Pattern}
	case "format":
		item.Type, item.Ctx = "format", map[string]any{"format": s.Format}
	case "type":
		item.Type = "type_error"
		if s != nil && s.Type != nil && len(*s.Type) > 0 {
			item.Ctx = map[string]any{"expected": (*s.Type)[0]}
		}
	case "additionalProperties":
		item.Type = "extra_forbidden"
	case "nullable":
		item.Type = "none_forbidden"
	default:
		item.Type = "value_error"
	}
	return item
}

func ctxOf(key string, v *uint64) map[string]any {
	if v == nil {
		return nil
	}
	return map[string]any{key: *v}
}

func missingProperty(reason string) string {
	// kin-openapi: `property "name" is missing`
	if i := strings.Index(reason, `property "`); i >= 0 {
		rest := reason[i+len(`property "`):]
		if j := strings.Index(rest, `"`); j >= 0 {
			return rest[:j]
		}
	}
	return ""
}

// shortInput echoes the offending value back, cut so a huge payload is not mirrored.
func shortInput(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > 100 {
			return x[:100] + "…"
		}
		return x
	case map[string]any, []any:
		return nil
	default:
		return x
	}
}

func trimMsg(s string) string {
	// kin-openapi appends the whole schema to some messages; keep the first line.
	if i := strings.Index(s, "\nSchema:"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return strings.TrimSpace(s)
}
