package conformance

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// chunked hides a reader's length so the client sends it with Transfer-Encoding: chunked, as a
// client streaming a body of unknown size does.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// An over-long body without Content-Length is cut while it is read; the answer is 413 whichever
// reader noticed (request validation for JSON operations, the multipart reader for uploads).
func TestChunkedBodyOverLimit(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "MAX_BODY_BYTES=2048", "MAX_UPLOAD_BYTES=8192")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "big.geojson")
	_, _ = fw.Write(pointsGeoJSON(400)) // about 40 KB
	_ = mw.Close()

	tests := []struct {
		name, path, ctype string
		body              []byte
		want              int
	}{
		{"JSON operation over MAX_BODY_BYTES", "/datasets/create/", "application/json",
			[]byte(`{"title":"t","summary":"` + strings.Repeat("x", 4096) + `"}`), 413},
		{"JSON operation within MAX_BODY_BYTES", "/datasets/create/", "application/json",
			[]byte(`{"title":"t","columns":[{"name":"a","type":"text"}]}`), 200},
		{"upload over MAX_UPLOAD_BYTES", "/ingest/upload", mw.FormDataContentType(), form.Bytes(), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.APIRoot+tt.path, chunked{bytes.NewReader(tt.body)})
			req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
			req.Header.Set("Content-Type", tt.ctype)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.want {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.want, b)
			}
			if tt.want == 413 {
				if p := problemOf(t, res); !strings.Contains(p["detail"].(string), "limit") {
					t.Fatalf("413 problem does not name the limit: %v", p)
				}
				return
			}
			res.Body.Close()
		})
	}
}

// loginAt signs in on another server and returns the access token.
func loginAt(t *testing.T, hc *http.Client, root, username, password string) string {
	t.Helper()
	r := callAt(t, hc, root, "POST", "/auth/login", url.Values{"username": {username}, "password": {password}})
	if r.Status != 200 {
		t.Fatalf("login %s: %d %s", username, r.Status, r.Body)
	}
	return r.JSON(t)["access_token"].(string)
}

// contractAt is a validating client for a server started by startFresh.
func contractAt(t *testing.T, s *Server) *http.Client {
	t.Helper()
	c, err := NewContract(mustDoc(t), s.APIRoot)
	if err != nil {
		t.Fatal(err)
	}
	return c.Client()
}
