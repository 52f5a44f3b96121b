package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/shipkey/shipkey/store"
)

// TestWriteTableTwoWalks: a table too long to keep in memory goes to a
// temporary file, or without one is walked twice (to measure, then to
// write); either way it comes out byte for byte as the table kept in one
// walk and as text/tabwriter aligns it; cells sees pass 0 once per key,
// then pass 1 in a second walk.
func TestWriteTableTwoWalks(t *testing.T) {
	t.Parallel()
	var keys []store.Key
	for i := range 50 {
		keys = append(keys, store.Key{Label: strings.Repeat("ä", i%7) + fmt.Sprint("k", i*37), Definition: store.Definition{Username: strings.Repeat("u", (i*13)%11)}})
	}
	head := []string{"", "LABEL", "USER", "LAST"}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, k := range keys {
		fmt.Fprintln(tw, strings.Join([]string{"*", k.Label, k.Username, "end " + k.Label}, "\t"))
	}
	_ = tw.Flush()

	failing := func() (*os.File, error) { return nil, errors.New("no room") }
	for _, tc := range []struct {
		keep  int
		spill func() (*os.File, error)
		walks int
	}{{1 << 20, nil, 1}, {200, nil, 2}, {0, nil, 2}, {200, spillFile, 1}, {0, spillFile, 1}, {200, failing, 2}} {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		walks, passes := 0, map[int]int{}
		walk := func(fn func(store.Key) error) error {
			walks++
			return eachOf(keys)(fn)
		}
		n, err := writeTable(w, head, walk, func(k store.Key, pass int) []string {
			passes[pass]++
			return []string{"*", k.Label, k.Username, "end " + k.Label}
		}, tc.keep, tc.spill)
		if err != nil || n != len(keys) {
			t.Fatalf("keep %d: writeTable = %d, %v", tc.keep, n, err)
		}
		if walks != tc.walks || passes[0] != len(keys) || passes[1] != (tc.walks-1)*len(keys) {
			t.Fatalf("keep %d, spill %v: %d walks, cells by pass %v", tc.keep, tc.spill != nil, walks, passes)
		}
		if out.String() != want.String() {
			t.Fatalf("keep %d, spill %v: table\n%s\nwant (text/tabwriter)\n%s", tc.keep, tc.spill != nil, out.String(), want.String())
		}
	}
}

// writeTableCase is a table of n rows written by writeTable from memory
// (keep 1 MiB) or from the temporary file (keep 0), and text/tabwriter's
// rendering of the same rows.
type writeTableCase struct {
	keep  int
	spill func() (*os.File, error)
}

func writeTableRows(n int) (keys []store.Key, cells func(store.Key, int) []string, want string) {
	keys = make([]store.Key, n)
	rows := make([][]string, n)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	idx := map[string]int{}
	for i := range keys {
		rows[i] = []string{"*", strings.Repeat("é", i%50), fmt.Sprint(i), "end"}
		keys[i].Label = fmt.Sprint(i)
		idx[keys[i].Label] = i
		fmt.Fprintln(tw, strings.Join(rows[i], "\t"))
	}
	_ = tw.Flush()
	return keys, func(k store.Key, _ int) []string { return rows[idx[k.Label]] }, buf.String()
}

// TestWriteTableAlignsAsTabwriter: writing a table's kept rows (from
// memory or from the temporary file), with pads wider than one run of
// spaces, aligns as text/tabwriter does.
func TestWriteTableAlignsAsTabwriter(t *testing.T) {
	t.Parallel()
	keys, cells, want := writeTableRows(1000)
	for _, tc := range []writeTableCase{{1 << 20, nil}, {0, spillFile}} {
		var out bytes.Buffer
		w := bufio.NewWriterSize(&out, 1<<20)
		if _, err := writeTable(w, nil, eachOf(keys), cells, tc.keep, tc.spill); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("keep %d, spill %v: table\n%s\nwant (text/tabwriter)\n%s", tc.keep, tc.spill != nil, out.String(), want)
		}
	}
}

// BenchmarkWriteTable reports the allocations of writing 1,000 rows: the
// walk's and the row buffer's growth, none a row (splitting each row into
// strings and padding with strings.Repeat made five a row).
func BenchmarkWriteTable(b *testing.B) {
	keys, cells, _ := writeTableRows(1000)
	for _, tc := range []writeTableCase{{1 << 20, nil}, {0, spillFile}} {
		b.Run(fmt.Sprintf("spill=%v", tc.spill != nil), func(b *testing.B) {
			var out bytes.Buffer
			w := bufio.NewWriterSize(&out, 1<<20)
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				w.Reset(&out)
				if _, err := writeTable(w, nil, eachOf(keys), cells, tc.keep, tc.spill); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzIndentJSON: appendIndentJSON indents what json.Encoder writes byte for
// byte as json.Indent does (keys list --json and status --json write every
// key through it).
func FuzzIndentJSON(f *testing.F) {
	for _, v := range []any{
		map[string]any{"label": "a \"b\" \\ c", "scopes": []string{}, "m": map[string]any{}, "n": nil, "x": 1.5, "t": true,
			"d": map[string]any{"s": []any{"<&>", "\u2028", "é", []int{1, 2}, map[string]int{"k": 3}}}},
		[]any{}, "s", 3, nil, keyJSON{Label: "k,\"}]:{[", APIKey: "eyJ…", Default: true},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(v); err != nil {
			return
		}
		compact := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "  ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := appendIndentJSON(nil, compact, "  ", "  "); string(got) != want.String() {
			t.Fatalf("indented\n%s\nwant (json.Indent)\n%s", got, want.String())
		}
	})
}
