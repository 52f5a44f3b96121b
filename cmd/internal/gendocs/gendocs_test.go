package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/cmd/internal/cli"
)

// Every command a user can run has its man page, carrying the release's
// version and date; aligned lines of a help text (the environment
// variables) stay lines in man, inside a preformatted block, instead of one
// reflowed paragraph; both programs get completions for bash, zsh and fish.
func TestGenerateManPagesAndCompletions(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	date := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	if err := generate(options{Out: out, Version: "v1.2.3", Date: &date}); err != nil {
		t.Fatal(err)
	}
	forEach(cli.CommandTree("shipkey"), func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		page, err := os.ReadFile(filepath.Join(out, "man", name))
		if err != nil {
			t.Errorf("no man page for %q: %v", c.CommandPath(), err)
			return
		}
		if !strings.Contains(string(page), `"Nov 2026" "shipkey v1.2.3" "shipkey manual"`) {
			t.Errorf("%s: no version and date in its header:\n%s", name, firstLines(string(page), 3))
		}
	})
	root, err := os.ReadFile(filepath.Join(out, "man", "shipkey.1"))
	if err != nil {
		t.Fatal(err)
	}
	env := "  SHIPKEY_KEY            label of the key to use when none is given\n  SHIPKEY_CLIENT_SECRET"
	if i, j := strings.Index(string(root), ".EX\n"), strings.Index(string(root), env); i < 0 || j < i {
		t.Errorf("shipkey.1: the environment variables are not a preformatted block (.EX, then the lines as written):\n%s", root)
	}
	for _, prog := range programs {
		for file, want := range map[string]string{
			filepath.Join("bash", prog):         "bash completion V2 for " + prog,
			filepath.Join("zsh", "_"+prog):      "#compdef " + prog,
			filepath.Join("fish", prog+".fish"): "complete -c " + prog,
		} {
			data, err := os.ReadFile(filepath.Join(out, "completions", file))
			if err != nil || !strings.Contains(string(data), want) {
				t.Errorf("completions/%s: %v, want it to contain %q", file, err, want)
			}
		}
	}
}

// manText keeps indented lines as written in a block of their own and
// escapes Markdown in running text.
func TestManTextKeepsAlignedLines(t *testing.T) {
	t.Parallel()
	got := manText("Run *this* or that_one:\n  a   one\n  bb  two\nThen [more].")
	want := "Run \\*this\\* or that\\_one:\n\n      a   one\n      bb  two\n\nThen \\[more\\]."
	if got != want {
		t.Fatalf("manText =\n%q\nwant\n%q", got, want)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
