package auth

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestDownloadTokens(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	d := NewDownloadTokens("download-secret-0123456789-abcdefghij")
	d.now = func() time.Time { return now }
	ds, user := uuid.New(), uuid.New()
	tok := d.Issue(ds, user)
	if got, err := d.Verify(tok, ds); err != nil || got != user {
		t.Fatalf("fresh token: %v %v", got, err)
	}
	tests := map[string]func() (string, uuid.UUID){
		"other dataset": func() (string, uuid.UUID) { return tok, uuid.New() },
		"tampered":      func() (string, uuid.UUID) { return tok[:5] + "A" + tok[6:], ds },
		"truncated":     func() (string, uuid.UUID) { return tok[:len(tok)-2], ds },
		"no separator":  func() (string, uuid.UUID) { return "abc", ds },
		"other key": func() (string, uuid.UUID) {
			o := NewDownloadTokens("another-secret-0123456789-abcdefghijk")
			return o.Issue(ds, user), ds
		},
	}
	for name, f := range tests {
		tk, id := f()
		if _, err := d.Verify(tk, id); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	now = now.Add(DownloadTokenTTL + time.Second)
	if _, err := d.Verify(tok, ds); err == nil {
		t.Error("expired token accepted")
	}
}
