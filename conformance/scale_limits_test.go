//go:build scale

package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// crossSignInLimit: the sign-in limit (RATE_LIMITS login=5 a minute per address) holds across
// replicas: five wrong passwords sent alternately to A and B from one address, and the sixth is
// refused with 429 on either. With each replica's own buckets (RATE_LIMITS_SHARED=none), A and
// B would each allow five: ten guesses a minute from two replicas, N × 5 from N.
func crossSignInLimit(t *testing.T, hc *http.Client) {
	env := []string{"JWT_SECRET_KEY=" + serverSecret(t, server), "RATE_LIMIT_ENABLED=true", "RATE_LIMIT_PER_SECOND=1000",
		"RATE_LIMIT_BURST=10000", "RATE_LIMITS=login=5", "TRUST_FORWARDED_HEADERS=true"}
	env = append(env, strings.Fields(os.Getenv("SCALE_REPLICA_ENV"))...)
	var roots [2]string
	for i := range roots {
		s, err := Start(context.Background(), server.DBURL, env...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		roots[i] = s.APIRoot
	}
	// An address of its own, so no other sign-in of the run shares its bucket.
	addr := fmt.Sprintf("10.%d.%d.%d", rand.IntN(250), rand.IntN(250), 1+rand.IntN(250))
	u := newUser(t, "viewer")
	var got []int
	for i := range 8 {
		r := callAt(t, hc, roots[i%2], "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {"wrong-" + randomHex(3)}},
			"X-Forwarded-For", addr)
		got = append(got, r.Status)
		if r.Status == 429 && r.Header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After")
		}
	}
	want := []int{401, 401, 401, 401, 401, 429, 429, 429}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("wrong passwords sent alternately to A and B from one address: %v, want %v", got, want)
	}
	// The right password from that address is refused too until the bucket refills: the limit
	// counts attempts, not failures.
	if r := callAt(t, hc, roots[0], "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {u.Password}}, "X-Forwarded-For", addr); r.Status != 429 {
		t.Fatalf("the right password after the limit: %d", r.Status)
	}
}
