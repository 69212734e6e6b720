package conformance

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"meridian/openapi"
)

// TestHarnessCatchesViolations proves the validating transport fails a test when a response breaks
// the contract: each case serves a deliberately wrong answer to GET /health.
func TestHarnessCatchesViolations(t *testing.T) {
	healthy := `{"status":"healthy","version":"1.14.2","build":"x","providers":{}}`
	tests := []struct {
		name, contentType, body string
		status                  int
		wantViolation           string // "" means the response is valid
	}{
		{"valid response passes", "application/json", healthy, 200, ""},
		{"field of the wrong type", "application/json", `{"status":5,"version":"1.14.2","build":"x","providers":{}}`, 200, "status"},
		{"missing required field", "application/json", `{"version":"1.14.2","build":"x","providers":{}}`, 200, "status"},
		{"undeclared status", "application/json", healthy, 418, "418"},
		{"undeclared media type", "text/html", "<p>ok</p>", 200, "text/html"},
		{"error status without a problem body", "application/problem+json", `{"oops":true}`, 500, "title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer fake.Close()
			doc, err := openapi.Load()
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewContract(doc, fake.URL+"/api")
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: c.Transport(nil)}
			res, err := hc.Get(fake.URL + "/api/health")
			if tt.wantViolation == "" {
				if err != nil {
					t.Fatalf("valid response reported as violation: %v", err)
				}
				res.Body.Close()
				return
			}
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("want a contract violation, got err=%v", err)
			}
			if !strings.Contains(v.Error(), tt.wantViolation) {
				t.Errorf("violation %q does not mention %q", v.Error(), tt.wantViolation)
			}
		})
	}
}

// TestHarnessRejectsUnknownOperations: a request outside the contract is itself a failure.
func TestHarnessRejectsUnknownOperations(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer fake.Close()
	doc, _ := openapi.Load()
	c, err := NewContract(doc, fake.URL+"/api")
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&http.Client{Transport: c.Transport(nil)}).Get(fake.URL + "/api/no-such-operation")
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("want a violation for an undocumented path, got %v", err)
	}
}
