package web

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// Operation describes the contract operation a route serves; handlers and middleware read it
// from the echo context.
type Operation struct {
	ID        string
	Method    string
	Template  string // OpenAPI path template, e.g. /datasets/{dataset_id}
	Spec      *openapi3.Operation
	PathItem  *openapi3.PathItem
	Anonymous bool // the operation serves callers without a credential
	NoCreds   bool // the operation reads no credential at all (security: [])
	Streaming bool // request body is a file stream: not buffered, not schema-validated
}

const operationKey = "meridian.operation"

// OperationOf returns the operation of the current route, or nil outside contract routes.
func OperationOf(c echo.Context) *Operation {
	op, _ := c.Get(operationKey).(*Operation)
	return op
}

// Router adapts the generated RegisterHandlers to the routing rules of the contract:
//   - every path ending in "/" also answers without it (same handler, no redirect);
//   - GET routes also answer HEAD;
//   - path segments with a suffix or several parameters ("{y}.pbf", "{y}.{fmt}") are matched as a
//     whole segment and split here, because echo parameters always run to the next "/";
//   - each route carries its Operation plus per-route middleware (validation, body limits).
type Router struct {
	echo     *echo.Echo
	doc      *openapi3.T
	base     string
	perRoute func(op *Operation) []echo.MiddlewareFunc
	ops      []*Operation
}

// NewRouter prepares registration of the document's operations under base (e.g. "/api").
func NewRouter(e *echo.Echo, doc *openapi3.T, base string, perRoute func(*Operation) []echo.MiddlewareFunc) *Router {
	return &Router{echo: e, doc: doc, base: base, perRoute: perRoute}
}

// Operations lists the operations registered so far.
func (r *Router) Operations() []*Operation { return r.ops }

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

func (r *Router) add(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	rel := strings.TrimPrefix(path, r.base)
	template := echoParam.ReplaceAllString(rel, "{$1}")
	op := r.operation(method, template)
	mws := append([]echo.MiddlewareFunc{func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(operationKey, op)
			return next(c)
		}
	}}, r.perRoute(op)...)

	echoPath, split := compoundSegments(rel)
	if split != nil {
		mws = append([]echo.MiddlewareFunc{split}, mws...)
	}
	mws = append(mws, m...)
	full := r.base + echoPath
	route := r.echo.Add(method, full, h, mws...)
	if method == http.MethodGet {
		r.echo.Add(http.MethodHead, full, h, mws...)
	}
	if strings.HasSuffix(full, "/") && len(full) > 1 {
		r.echo.Add(method, strings.TrimSuffix(full, "/"), h, mws...)
		if method == http.MethodGet {
			r.echo.Add(http.MethodHead, strings.TrimSuffix(full, "/"), h, mws...)
		}
	}
	return route
}

func (r *Router) operation(method, template string) *Operation {
	op := &Operation{Method: method, Template: template}
	if item := r.doc.Paths.Find(template); item != nil {
		op.PathItem = item
		op.Spec = item.GetOperation(method)
	}
	if op.Spec == nil {
		panic("web: route " + method + " " + template + " is not in the OpenAPI document")
	}
	op.ID = op.Spec.OperationID
	sec := r.doc.Security
	if op.Spec.Security != nil {
		sec = *op.Spec.Security
	}
	op.NoCreds = len(sec) == 0
	for _, req := range sec {
		if len(req) == 0 {
			op.Anonymous = true
		}
	}
	if rb := op.Spec.RequestBody; rb != nil && rb.Value != nil {
		for mt := range rb.Value.Content {
			if strings.HasPrefix(mt, "multipart/") || strings.HasPrefix(mt, "image/") || mt == "application/octet-stream" {
				op.Streaming = true
			}
		}
	}
	r.ops = append(r.ops, op)
	return op
}

// compoundSegments rewrites segments such as ":y.pbf" or ":y.:fmt" into one parameter and returns
// a middleware that splits the matched value back into the named parameters.
func compoundSegments(path string) (string, echo.MiddlewareFunc) {
	segs := strings.Split(path, "/")
	type compound struct {
		index int
		re    *regexp.Regexp
		names []string
	}
	var comps []compound
	for i, s := range segs {
		if !strings.Contains(s, ":") {
			continue
		}
		names := echoParam.FindAllStringSubmatch(s, -1)
		if len(names) == 1 && names[0][0] == s {
			continue // a plain parameter
		}
		pattern := "^"
		rest := s
		var ns []string
		for _, n := range names {
			at := strings.Index(rest, n[0])
			pattern += regexp.QuoteMeta(rest[:at]) + `([^/]+?)`
			rest = rest[at+len(n[0]):]
			ns = append(ns, n[1])
		}
		pattern += regexp.QuoteMeta(rest) + "$"
		comps = append(comps, compound{index: i, re: regexp.MustCompile(pattern), names: ns})
		segs[i] = ":seg" + ns[0]
	}
	if comps == nil {
		return path, nil
	}
	return strings.Join(segs, "/"), func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			names := append([]string(nil), c.ParamNames()...)
			values := append([]string(nil), c.ParamValues()...)
			for _, comp := range comps {
				key := "seg" + comp.names[0]
				for i, n := range names {
					if n != key {
						continue
					}
					m := comp.re.FindStringSubmatch(values[i])
					if m == nil {
						return echo.ErrNotFound
					}
					names[i], values[i] = comp.names[0], m[1]
					for j := 1; j < len(comp.names); j++ {
						names = append(names, comp.names[j])
						values = append(values, m[j+1])
					}
				}
			}
			c.SetParamNames(names...)
			c.SetParamValues(values...)
			return next(c)
		}
	}
}

// The methods below make *Router satisfy the generated EchoRouter interface.

func (r *Router) CONNECT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodConnect, p, h, m...)
}
func (r *Router) DELETE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodDelete, p, h, m...)
}
func (r *Router) GET(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodGet, p, h, m...)
}
func (r *Router) HEAD(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodHead, p, h, m...)
}
func (r *Router) OPTIONS(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodOptions, p, h, m...)
}
func (r *Router) PATCH(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPatch, p, h, m...)
}
func (r *Router) POST(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPost, p, h, m...)
}
func (r *Router) PUT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPut, p, h, m...)
}
func (r *Router) TRACE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodTrace, p, h, m...)
}
