// Package conformance replays the contract against a running Meridian: every response that passes
// through Transport is validated against the OpenAPI document, and a response that disagrees with
// it (wrong field type, missing required field, undeclared status or media type) fails the call.
package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Contract validates responses against one OpenAPI document served at one API root.
type Contract struct {
	doc    *openapi3.T
	router routers.Router

	mu        sync.Mutex
	exercised map[string]int // operationId -> responses validated
}

// NewContract prepares validation of responses from the API rooted at apiRoot (".../api").
func NewContract(doc *openapi3.T, apiRoot string) (*Contract, error) {
	doc.Servers = openapi3.Servers{{URL: strings.TrimRight(apiRoot, "/")}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	registerDecoders(doc)
	return &Contract{doc: doc, router: router, exercised: map[string]int{}}, nil
}

// Transport wraps base so every response is validated before the caller sees it.
func (c *Contract) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		res, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		if err := c.Check(req, res); err != nil {
			return nil, err
		}
		return res, nil
	})
}

// Client is an HTTP client whose every response is validated. It does not follow redirects: a
// redirect's target (an identity provider, say) is outside the contract, and tests assert on the
// 3xx itself.
func (c *Contract) Client() *http.Client {
	return &http.Client{
		Transport:     c.Transport(nil),
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Violation is a response that breaks the contract.
type Violation struct {
	Method, URL string
	Status      int
	Err         error
}

func (v *Violation) Error() string {
	return fmt.Sprintf("contract violation: %s %s answered %d: %v", v.Method, v.URL, v.Status, v.Err)
}

// Check validates res (answering req) and restores its body for the caller.
func (c *Contract) Check(req *http.Request, res *http.Response) error {
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return &Violation{Method: req.Method, URL: req.URL.String(), Status: res.StatusCode, Err: err}
	}
	lookup := req
	if req.Method == http.MethodHead {
		// HEAD answers every GET: validate the status and headers against the GET operation.
		lookup = req.Clone(req.Context())
		lookup.Method = http.MethodGet
	}
	route, params, err := c.router.FindRoute(lookup)
	if err != nil {
		return fail(fmt.Errorf("no operation in the document for this request: %w", err))
	}
	c.mu.Lock()
	c.exercised[route.Operation.OperationID]++
	c.mu.Unlock()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: lookup, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: res.StatusCode,
		Header: res.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			ExcludeResponseBody:   req.Method == http.MethodHead,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fail(err)
	}
	return nil
}

// Exercised returns the operationIds that answered at least once, sorted.
func (c *Contract) Exercised() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.exercised))
	for id := range c.exercised {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// OperationIDs lists every operationId of the document, sorted.
func (c *Contract) OperationIDs() []string {
	var out []string
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			out = append(out, op.OperationID)
		}
	}
	sort.Strings(out)
	return out
}

// registerDecoders teaches kin-openapi the non-JSON media types of the document, so their bodies
// are checked for type (binary, text) instead of rejected as unsupported.
func registerDecoders(doc *openapi3.T) {
	seen := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for mt := range r.Value.Content {
					seen[mt] = true
				}
			}
		}
	}
	for mt := range seen {
		base := strings.TrimSpace(strings.SplitN(mt, ";", 2)[0])
		if openapi3filter.RegisteredBodyDecoder(base) != nil {
			continue
		}
		if strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "/json") {
			openapi3filter.RegisterBodyDecoder(base, jsonDecoder)
			continue
		}
		openapi3filter.RegisterBodyDecoder(base, rawDecoder)
	}
}

func jsonDecoder(body io.Reader, h http.Header, s *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
	return openapi3filter.JSONBodyDecoder(body, h, s, enc)
}

// rawDecoder hands the body over as a string: binary and text schemas are `type: string`.
func rawDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	b, err := io.ReadAll(body)
	return string(b), err
}
