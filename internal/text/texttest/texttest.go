// Package texttest is the test oracle of terminal safety, written
// independently of text.Safe so that tests of every package can check what
// reaches the terminal.
package texttest

import (
	"testing"
	"unicode/utf8"
)

// Unsafe reports the first rune in s that could start or alter a terminal
// control sequence or reorder text: C0 controls, DEL, C1 controls, bidi
// overrides and marks, BOM; invalid UTF-8 counts too.
func Unsafe(s string) (rune, bool) {
	if !utf8.ValidString(s) {
		return utf8.RuneError, true
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f {
			return rune(b), true
		}
	}
	for _, r := range s {
		switch {
		case r >= 0x80 && r < 0xa0,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r == 0x200e, r == 0x200f, r == 0x061c, r == 0xfeff:
			return r, true
		}
	}
	return 0, false
}

// RequireSafe fails t when s holds a rune Unsafe reports.
func RequireSafe(t testing.TB, where, s string) {
	t.Helper()
	if r, bad := Unsafe(s); bad {
		t.Errorf("%s: %q contains unsafe rune %U", where, s, r)
	}
}
