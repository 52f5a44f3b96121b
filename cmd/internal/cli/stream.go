package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/shipkey/shipkey/store"
)

// Listing commands (keys list, status) write one key at a time as the store's
// cursor hands them out (store.EachKey, store.WalkKeys), so their memory
// stays flat at any number of keys.

// jsonArray writes a JSON array one element at a time, byte for byte as
// json.Encoder with SetIndent("", "  ") writes the whole slice.
type jsonArray struct {
	w   *bufio.Writer
	n   int
	buf bytes.Buffer
	enc *json.Encoder // into buf, reused: MarshalIndent allocates twice a value
}

func (a *jsonArray) add(v any) error {
	if a.enc == nil {
		a.enc = json.NewEncoder(&a.buf)
		a.enc.SetIndent("  ", "  ")
	}
	a.buf.Reset()
	if err := a.enc.Encode(v); err != nil {
		return err
	}
	if a.n == 0 {
		a.w.WriteString("[\n  ")
	} else {
		a.w.WriteString(",\n  ")
	}
	a.n++
	_, err := a.w.Write(bytes.TrimSuffix(a.buf.Bytes(), []byte("\n")))
	return err
}

// close ends the array ("[]" when empty) and flushes.
func (a *jsonArray) close() error {
	if a.n == 0 {
		a.w.WriteString("[]\n")
	} else {
		a.w.WriteString("\n]\n")
	}
	return a.w.Flush()
}

// columns aligns rows of cells as text/tabwriter does (padding 2, widths
// in runes, the last cell unpadded): measure every row, then write them.
type columns struct{ widths []int }

func (c *columns) measure(cells []string) {
	for i, s := range cells[:len(cells)-1] {
		if i == len(c.widths) {
			c.widths = append(c.widths, 0)
		}
		c.widths[i] = max(c.widths[i], utf8.RuneCountInString(s))
	}
}

func (c *columns) write(w *bufio.Writer, cells []string) {
	last := len(cells) - 1
	for i, s := range cells[:last] {
		w.WriteString(s)
		pad := 2
		if i < len(c.widths) {
			pad += max(c.widths[i]-utf8.RuneCountInString(s), 0)
		}
		w.WriteString(strings.Repeat(" ", pad))
	}
	w.WriteString(cells[last])
	w.WriteByte('\n')
}

// keyWalk walks keys one at a time, as store.EachKey does.
type keyWalk = func(func(store.Key) error) error

// walkThen walks a, then b.
func walkThen(a, b keyWalk) keyWalk {
	return func(fn func(store.Key) error) error {
		if err := a(fn); err != nil {
			return err
		}
		return b(fn)
	}
}

// tableKeep is how many bytes of formatted rows the listing commands keep
// to write a table after one walk (writeTable); a longer table is walked
// twice.
const tableKeep = 256 << 10

// writeTable writes the rows that cells makes of the keys of walk, aligned
// (columns), after head (nil: none), and flushes w. It returns the number of
// rows. The widths are known only once every row is measured: the rows are
// kept formatted (rowBuffer) while they fit in keep bytes; past that
// they are dropped, and a second walk formats them again and writes them,
// so memory stays flat at any number of keys. pass is 0 in the walk that
// counts the rows, 1 in a second walk.
func writeTable(w *bufio.Writer, head []string, walk keyWalk, cells func(k store.Key, pass int) []string, keep int) (int, error) {
	var rows rowBuffer
	n := 0
	err := walk(func(k store.Key) error {
		n++
		c := cells(k, 0)
		rows.cols.measure(c)
		if n == len(rows.ends)+1 && len(rows.arena) < keep {
			rows.add(c)
		} else {
			rows.arena, rows.ends = nil, nil
		}
		return nil
	})
	if err != nil || n == 0 {
		return n, err
	}
	if head != nil {
		rows.cols.measure(head)
		rows.cols.write(w, head)
	}
	if len(rows.ends) == n {
		rows.writeRows(w)
		return n, w.Flush()
	}
	err = walk(func(k store.Key) error {
		rows.cols.write(w, cells(k, 1))
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, w.Flush()
}

// rowBuffer keeps formatted rows for a table whose widths are known only at
// the end: the cells' bytes in one arena, NUL-separated (cells are sanitized
// text, free of control characters), about 75 bytes a key.
type rowBuffer struct {
	cols  columns
	arena []byte
	ends  []int
}

// add keeps a row (measured already).
func (r *rowBuffer) add(cells []string) {
	for i, c := range cells {
		if i > 0 {
			r.arena = append(r.arena, 0)
		}
		r.arena = append(r.arena, c...)
	}
	r.ends = append(r.ends, len(r.arena))
}

// writeRows writes the rows kept, aligned.
func (r *rowBuffer) writeRows(w *bufio.Writer) {
	start := 0
	for _, end := range r.ends {
		r.cols.write(w, strings.Split(string(r.arena[start:end]), "\x00"))
		start = end
	}
}
