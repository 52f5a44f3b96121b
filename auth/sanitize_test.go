package auth_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shipkey/shipkey/auth"
)

// terminalUnsafe reports the first rune in s that could start or alter a
// terminal control sequence or reorder text: C0 controls, DEL, C1 controls,
// bidi overrides and marks, BOM; invalid UTF-8 counts too.
func terminalUnsafe(s string) (rune, bool) {
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

func requireTerminalSafe(t *testing.T, where, s string) {
	t.Helper()
	if r, bad := terminalUnsafe(s); bad {
		t.Errorf("%s: %q contains unsafe rune %U", where, s, r)
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text, ünïcödé ✓", "plain text, ünïcödé ✓"},
		{"a\nb\tc\rd", "a b c d"},
		{"\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`},
		{"\x1b[2J", `\x1b[2J`},
		{"del\x7f", `del\x7f`},
		{"nul\x00", `nul\x00`},
		{"\u009b31m", `\u009b31m`},
		{"\x9b31m", "\uFFFD31m"},
		{"\u202eevil", `\u202eevil`},
		{"\u2066x\u2069", `\u2066x\u2069`},
		{"\u200fmark", `\u200fmark`},
		{"\ufeffbom", `\ufeffbom`},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"ok \uFFFD", "ok \uFFFD"},
	}
	for _, tt := range tests {
		got := auth.Sanitize(tt.in)
		if got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		requireTerminalSafe(t, "Sanitize", got)
		if again := auth.Sanitize(got); again != got {
			t.Errorf("Sanitize is not idempotent on %q: %q then %q", tt.in, got, again)
		}
	}
}

func TestSanitizeLines(t *testing.T) {
	got := auth.SanitizeLines("{\r\n  \"a\": \"\x1b[31mred\"\n}")
	want := "{\n  \"a\": \"\\x1b[31mred\"\n}"
	if got != want {
		t.Errorf("SanitizeLines = %q, want %q", got, want)
	}
	for _, line := range strings.Split(got, "\n") {
		requireTerminalSafe(t, "SanitizeLines", line)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J", "\x9b31m", "\u009b31m", "\u202e",
		"\xc2", "\xe2\x80", "\xe2\x80\xae", "a\r\nb", "\x00\x7f\u0085", "\U0010FFFF",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := auth.Sanitize(in)
		if r, bad := terminalUnsafe(out); bad {
			t.Fatalf("Sanitize(%q) = %q contains unsafe rune %U", in, out, r)
		}
		if auth.Sanitize(out) != out {
			t.Fatalf("Sanitize(%q) = %q is not a fixed point", in, out)
		}
		lines := auth.SanitizeLines(in)
		for _, l := range strings.Split(lines, "\n") {
			if r, bad := terminalUnsafe(l); bad {
				t.Fatalf("SanitizeLines(%q) line %q contains unsafe rune %U", in, l, r)
			}
		}
	})
}
