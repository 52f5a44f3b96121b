package store

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestSetDefaultEditsOnlyTheDefaultLine: `keys default` changes
// config.toml's default line (or adds one) and leaves the rest of the file
// as it was, a person's comments among the [[keys]] tables included: it
// does not parse and write every key's table (2 s at 100,000 keys).
func TestSetDefaultEditsOnlyTheDefaultLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	var keys []ImportKey
	for _, label := range []string{"alpha", "beta", "gamma"} {
		keys = append(keys, ImportKey{Label: label, Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "s"})
	}
	if err := s.Import(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	path := s.configPath()
	edit := func(fn func([]byte) []byte) []byte {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data = fn(data)
		if err := os.WriteFile(path, data, filePerm); err != nil {
			t.Fatal(err)
		}
		return data
	}
	note := "# beta is the CI key: do not rename\n"
	before := edit(func(d []byte) []byte {
		i := bytes.LastIndex(d, []byte("[[keys]]"))
		return append(append(append([]byte{}, d[:i]...), note...), d[i:]...)
	})
	check := func(label string, want []byte) {
		t.Helper()
		s := e.open(Options{Backend: BackendPlaintext})
		if err := s.SetDefault(label); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("config.toml after SetDefault(%s):\n%s\nwant:\n%s", label, got, want)
		}
		if k, err := e.open(Options{Backend: BackendPlaintext}).Resolve(""); err != nil || k.Label != label {
			t.Fatalf("default after SetDefault(%s): %s, %v", label, k.Label, err)
		}
	}
	defaultLine := regexp.MustCompile(`(?m)^default = .*$`)
	check("beta", defaultLine.ReplaceAll(before, []byte("default = 'beta'")))

	// No default line (removed by hand): one is added after the opening
	// comments.
	without := edit(func(d []byte) []byte { return defaultLine.ReplaceAll(d, nil) })
	without = bytes.Replace(without, []byte("\n\n"), []byte("\n"), 1)
	if err := os.WriteFile(path, without, filePerm); err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(without), "\n")
	if !strings.HasPrefix(first, "#") {
		t.Fatalf("config.toml does not open with a comment: %q", first)
	}
	check("gamma", []byte(first+"\ndefault = 'gamma'\n"+rest))
}
