package text_test

import (
	"testing"

	"github.com/shipkey/shipkey/internal/text"
)

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"prod":          "prod",
		"prod-eu_1.x@y": "prod-eu_1.x@y",
		"prod eu":       "'prod eu'",
		"it's":          `'it'\''s'`,
		"":              "''",
		"$(rm -rf ~)":   "'$(rm -rf ~)'",
		"a\x1b[2Jb":     `'a\x1b[2Jb'`,
		"-rf":           "-rf",
		"ünïcode":       "'ünïcode'",
	} {
		if got := text.ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
