package handlers

import "testing"

func TestSafeRedirect(t *testing.T) {
	tests := map[string]string{
		"":                     "/",
		"/maps/1?x=2":          "/maps/1?x=2",
		"//evil.example/":      "/",
		"https://evil.example": "/",
		`/\evil.example`:       "/",
		"maps":                 "/",
	}
	for in, want := range tests {
		if got := safeRedirect(in); got != want {
			t.Errorf("safeRedirect(%q) = %q, want %q", in, got, want)
		}
	}
}
