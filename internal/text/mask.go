package text

import "strings"

// Mask shows the first and last few characters of a secret, enough to tell
// two apart and never enough to use one; the result is terminal-safe.
func Mask(s string) string {
	const keep = 6
	if s == "" {
		return ""
	}
	r := []rune(s)
	if len(r) <= 2*keep+3 {
		return "••••••"
	}
	return Safe(string(r[:keep])) + "…" + Safe(string(r[len(r)-keep:]))
}

// BearerToken takes what a person pastes — a bare token, "Bearer <token>" or
// a whole "Authorization: Bearer <token>" header line — and returns the
// token, with surrounding white space dropped. Both prefixes are matched
// case-insensitively.
func BearerToken(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := cutPrefixFold(s, "authorization:"); ok {
		s = strings.TrimSpace(rest)
	}
	if rest, ok := cutPrefixFold(s, "bearer "); ok {
		s = strings.TrimSpace(rest)
	}
	return s
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
