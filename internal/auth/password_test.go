package auth

import (
	"strings"
	"testing"
)

func TestHashAndVerify(t *testing.T) {
	h, err := HashPassword("Correct-Horse-9")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("unexpected hash format %q", h)
	}
	h2, _ := HashPassword("Correct-Horse-9")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: salt missing")
	}
	for _, tt := range []struct {
		pw   string
		want bool
	}{{"Correct-Horse-9", true}, {"correct-horse-9", false}, {"", false}} {
		ok, err := VerifyPassword(h, tt.pw)
		if err != nil || ok != tt.want {
			t.Errorf("VerifyPassword(%q) = %v, %v; want %v", tt.pw, ok, err, tt.want)
		}
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=1,t=1,p=1$AA$AA", "$argon2id$v=19$m=x$AA$AA", "$argon2id$v=19$m=1,t=1,p=1$!!$AA"} {
		if _, err := VerifyPassword(bad, "x"); err == nil {
			t.Errorf("VerifyPassword(%q) accepted a malformed hash", bad)
		}
	}
}

func TestPasswordPolicy(t *testing.T) {
	tests := []struct {
		pw string
		ok bool
	}{
		{"Short1!", false},             // too short
		{"alllowercaseletters", false}, // one class
		{"lowercase1234567", false},    // two classes
		{"Lowercase1234567", true},     // three classes
		{"lower-case-words!", false},   // lower + symbol only
		{"Lower-case-words", true},     // lower, upper, symbol
		{"ÄÖÜäöü123456", true},         // unicode letters count
		{"Ab1!Ab1!Ab1", false},         // 11 characters
		{"Ab1!Ab1!Ab1!", true},         // 12 characters
	}
	for _, tt := range tests {
		err := CheckPasswordPolicy(tt.pw)
		if (err == nil) != tt.ok {
			t.Errorf("CheckPasswordPolicy(%q) = %v, want ok=%v", tt.pw, err, tt.ok)
		}
	}
}
