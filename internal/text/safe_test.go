package text_test

import (
	"strings"
	"testing"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/internal/text/texttest"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
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
		got := text.Safe(tt.in)
		if got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		texttest.RequireSafe(t, "Sanitize", got)
		if text.IsClean(tt.in) != (got == tt.in) {
			t.Errorf("IsClean(%q) = %v, but Safe gives %q", tt.in, text.IsClean(tt.in), got)
		}
		if again := text.Safe(got); again != got {
			t.Errorf("Sanitize is not idempotent on %q: %q then %q", tt.in, got, again)
		}
	}
}

func TestSanitizeLines(t *testing.T) {
	t.Parallel()
	got := text.SafeLines("{\r\n  \"a\": \"\x1b[31mred\"\n}")
	want := "{\n  \"a\": \"\\x1b[31mred\"\n}"
	if got != want {
		t.Errorf("SanitizeLines = %q, want %q", got, want)
	}
	for _, line := range strings.Split(got, "\n") {
		texttest.RequireSafe(t, "SanitizeLines", line)
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
		out := text.Safe(in)
		if r, bad := texttest.Unsafe(out); bad {
			t.Fatalf("Sanitize(%q) = %q contains unsafe rune %U", in, out, r)
		}
		if text.Safe(out) != out {
			t.Fatalf("Sanitize(%q) = %q is not a fixed point", in, out)
		}
		if text.IsClean(in) != (out == in) {
			t.Fatalf("IsClean(%q) = %v, but Sanitize gives %q", in, text.IsClean(in), out)
		}
		lines := text.SafeLines(in)
		for _, l := range strings.Split(lines, "\n") {
			if r, bad := texttest.Unsafe(l); bad {
				t.Fatalf("SanitizeLines(%q) line %q contains unsafe rune %U", in, l, r)
			}
		}
	})
}
