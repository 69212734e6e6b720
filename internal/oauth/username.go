package oauth

import (
	"strconv"
	"strings"
)

// Limits of the username schema in the contract (minLength 3, maxLength 150, ^[A-Za-z0-9._-]+$).
const (
	usernameMin = 3
	usernameMax = 150
)

// DeriveUsername picks the username of a user created by OAuth sign-in (spec 4.6 step 3c): the
// email's local part, or the display name when that leaves nothing, lowercased and reduced to
// [a-z0-9._-]. Short results are padded with zeros, long ones cut to 150 characters, and a suffix
// -2, -3, ... is appended until taken reports the name free. A nil taken treats every name as free.
//
// taken is called with candidates in order, so a caller backed by a database should expect a few
// look-ups for common names; the unique index remains the final arbiter under concurrency.
func DeriveUsername(email, name string, taken func(string) bool) string {
	local, _, _ := strings.Cut(email, "@")
	base := usernameChars(local)
	if base == "" {
		base = usernameChars(name)
	}
	if base == "" {
		base = "user"
	}
	if len(base) < usernameMin {
		base += strings.Repeat("0", usernameMin-len(base))
	}
	// Every byte left is ASCII, so cutting by bytes cannot split a character.
	base = base[:min(len(base), usernameMax)]
	if taken == nil || !taken(base) {
		return base
	}
	for n := 2; ; n++ {
		suffix := "-" + strconv.Itoa(n)
		candidate := base[:min(len(base), usernameMax-len(suffix))] + suffix
		if !taken(candidate) {
			return candidate
		}
	}
}

func usernameChars(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
