// Command gendocs writes what a release ships beside the programs, generated
// from the cobra command tree so it never drifts from the commands: a man
// page per command (section 1) and the bash, zsh and fish completions of
// shipkey and shipkey-team. The release runs it (.goreleaser.yaml):
//
//	go run ./cmd/internal/gendocs -out dist/docs -version v1.2.3 -date 2026-11-26T00:00:00Z
//
// writes dist/docs/man/*.1 and dist/docs/completions/{bash,zsh,fish}/….
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/shipkey/shipkey/cmd/internal/cli"
)

func main() {
	out := flag.String("out", "docs", "folder to write man/ and completions/ into")
	version := flag.String("version", "devel", "the version the man pages name")
	date := flag.String("date", "", "the date the man pages carry, RFC 3339 (default: $SOURCE_DATE_EPOCH, else now)")
	flag.Parse()
	opts := options{Out: *out, Version: *version}
	if *date != "" {
		d, err := time.Parse(time.RFC3339, *date)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: -date %q is not RFC 3339 (2026-11-26T00:00:00Z)\n", *date)
			os.Exit(2)
		}
		opts.Date = &d
	}
	if err := generate(opts); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// options say where and for which release to generate.
type options struct {
	Out     string
	Version string
	Date    *time.Time // nil: $SOURCE_DATE_EPOCH, else now
}

// programs are the two programs a release installs; both take the same
// commands, so each gets its completions, and shipkey its man pages.
var programs = []string{"shipkey", cli.TeamBinary}

// generate writes Out/man and Out/completions.
func generate(o options) error {
	man := filepath.Join(o.Out, "man")
	if err := os.MkdirAll(man, 0o755); err != nil {
		return err
	}
	root := cli.CommandTree("shipkey")
	root.DisableAutoGenTag = true // no generation date in the pages: the same release, the same bytes
	forEach(root, func(c *cobra.Command) { c.Long = manText(c.Long) })
	hdr := &doc.GenManHeader{Section: "1", Source: "shipkey " + o.Version, Manual: "shipkey manual", Date: o.Date}
	if err := doc.GenManTree(root, hdr, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for _, prog := range programs {
		if err := completions(cli.CommandTree(prog), filepath.Join(o.Out, "completions")); err != nil {
			return fmt.Errorf("%s completions: %w", prog, err)
		}
	}
	return nil
}

// completions writes root's completion scripts under dir, named as each
// shell's completion folder expects: bash/NAME, zsh/_NAME, fish/NAME.fish.
func completions(root *cobra.Command, dir string) error {
	name := root.Name()
	for _, c := range []struct {
		file string
		gen  func(f *os.File) error
	}{
		{filepath.Join("bash", name), func(f *os.File) error { return root.GenBashCompletionV2(f, true) }},
		{filepath.Join("zsh", "_"+name), func(f *os.File) error { return root.GenZshCompletion(f) }},
		{filepath.Join("fish", name+".fish"), func(f *os.File) error { return root.GenFishCompletion(f, true) }},
	} {
		p := filepath.Join(dir, c.file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		err = c.gen(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func forEach(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		forEach(sub, fn)
	}
}

// manText turns a command's Long help, written for a terminal, into the
// Markdown the man pages are made from, so that it reads the same in man:
// indented lines (the environment variables, examples, aligned lists) stay
// lines, as a preformatted block, instead of being run together into one
// paragraph; in the other lines the characters Markdown would take as
// emphasis or markup are escaped.
func manText(s string) string {
	var b strings.Builder
	inBlock := false
	for _, line := range strings.Split(s, "\n") {
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		switch {
		case indented && !inBlock:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
				b.WriteString("\n")
			}
			inBlock = true
		case !indented && inBlock && line != "":
			b.WriteString("\n")
			inBlock = false
		}
		if inBlock {
			b.WriteString("    " + strings.ReplaceAll(line, "\t", "    ") + "\n")
			continue
		}
		b.WriteString(markdownEscaper.ReplaceAllString(line, `\$0`) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// markdownEscaper matches what Markdown would read as markup in running text.
var markdownEscaper = regexp.MustCompile(`[\\*_<>\[\]#]`)
