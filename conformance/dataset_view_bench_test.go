package conformance

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
)

// BenchmarkGetSingleDataset measures Get Single Dataset, the dataset page's first call, under
// load: 16 clients signed in as 32 different users over 8 datasets, so most requests are the
// first view of a (user, dataset) pair within the hour in the first iteration and repeats
// afterwards. The view event (dataset.view in the dataset's history) must not add a write to
// the request's round trip; compare req/s and p50/p99 with the commit before it.
func BenchmarkGetSingleDataset(b *testing.B) {
	const users, datasets = 32, 8
	hc := benchClient(16)
	adminToken := newUserTB(b)
	tokens := make([]string, users)
	for i := range tokens {
		name := "viewbench" + randomHex(4)
		password := "Pass-word-" + randomHex(4)
		body := `{"username":"` + name + `","email":"` + name + `@example.org","password":"` + password + `","role":"viewer","email_verified":true}`
		res, err := hc.Do(authed("POST", server.APIRoot+"/admin/users/", body, adminToken))
		if err != nil || res.StatusCode != 201 {
			b.Fatalf("create user: %v %v", err, res)
		}
		res.Body.Close()
		res, err = hc.PostForm(server.APIRoot+"/auth/login", url.Values{"username": {name}, "password": {password}})
		if err != nil {
			b.Fatal(err)
		}
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		decode(b, res, &tok)
		tokens[i] = tok.AccessToken
	}
	ids := make([]string, datasets)
	for i := range ids {
		res, err := hc.Do(authed("POST", server.APIRoot+"/datasets/create/",
			`{"title":"View bench `+randomHex(3)+`","columns":[{"name":"name","type":"text"}]}`, adminToken))
		if err != nil {
			b.Fatal(err)
		}
		var d struct {
			ID string `json:"id"`
		}
		decode(b, res, &d)
		ids[i] = d.ID
		for _, req := range []*http.Request{authed("PATCH", server.APIRoot+"/datasets/"+d.ID, `{"visibility":"public"}`, adminToken),
			authed("PATCH", server.APIRoot+"/datasets/"+d.ID+"/target-status/", `{"status":"published"}`, adminToken)} {
			res, err := hc.Do(req)
			if err != nil || res.StatusCode != 200 {
				b.Fatalf("%s %s: %v %v", req.Method, req.URL, err, res)
			}
			res.Body.Close()
		}
	}
	const requests = 4000
	var lat []time.Duration
	var mu sync.Mutex
	var wall time.Duration
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		n := 0
		var next sync.Mutex
		start := time.Now()
		err := fixedRun(16, requests, func() error {
			next.Lock()
			k := n
			n++
			next.Unlock()
			req := authed("GET", server.APIRoot+"/datasets/"+ids[k%datasets], "", tokens[(k/datasets)%users])
			t0 := time.Now()
			res, err := hc.Do(req)
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err == nil && res.StatusCode != 200 {
				err = &statusError{"/datasets/{id}", res.StatusCode}
			}
			mu.Lock()
			lat = append(lat, time.Since(t0))
			mu.Unlock()
			return err
		})
		wall += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N*requests)/wall.Seconds(), "req/s")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(slices.Max(lat).Microseconds())/1000, "max-ms")
}
