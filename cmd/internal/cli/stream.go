package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"runtime/debug"
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
	enc *json.Encoder // into buf, compact, reused: MarshalIndent allocates twice a value
	out []byte        // buf indented
}

func (a *jsonArray) add(v any) error {
	if a.enc == nil {
		a.enc = json.NewEncoder(&a.buf)
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
	a.out = appendIndentJSON(a.out[:0], bytes.TrimSuffix(a.buf.Bytes(), []byte("\n")), "  ", "  ")
	_, err := a.w.Write(a.out)
	return err
}

// appendIndentJSON appends src, one JSON value as json.Encoder writes it
// (compact: no space outside strings), indented as json.Indent(dst, src,
// prefix, indent) does. json.Indent runs its full scanner over every byte:
// at 100k keys two thirds of keys list --json's encoding.
func appendIndentJSON(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			// Copy the string through its closing quote.
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(src))
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
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
		c.pad(w, i, utf8.RuneCountInString(s))
	}
	w.WriteString(cells[last])
	w.WriteByte('\n')
}

// writeRow is write for a row that rowBuffer kept (its cells
// NUL-separated), with no allocation.
func (c *columns) writeRow(w *bufio.Writer, row []byte) {
	for i := 0; ; i++ {
		j := bytes.IndexByte(row, 0)
		if j < 0 {
			break
		}
		w.Write(row[:j])
		c.pad(w, i, runeCount(row[:j]))
		row = row[j+1:]
	}
	w.Write(row)
	w.WriteByte('\n')
}

// runeCount is utf8.RuneCount, which converts a non-ASCII slice to a
// string (an allocation past 32 bytes).
func runeCount(b []byte) int {
	n := 0
	for len(b) > 0 {
		_, size := utf8.DecodeRune(b)
		b = b[size:]
		n++
	}
	return n
}

const spaces = "                                "

// pad writes the spaces after cell i, n runes wide.
func (c *columns) pad(w *bufio.Writer, i, n int) {
	pad := 2
	if i < len(c.widths) {
		pad += max(c.widths[i]-n, 0)
	}
	for pad > 0 {
		k := min(pad, len(spaces))
		w.WriteString(spaces[:k])
		pad -= k
	}
}

// keyWalk walks keys one at a time, as store.EachKey does.
type keyWalk = func(func(store.Key) error) error

// listingGC lowers the garbage collector's heap goal for a process that
// walks every key again and again (the app: GOGC=50, unless GOGC is set):
// what a walk keeps is small and flat, and the default goal lets the heap
// grow to twice that. keys list and status, which walk once and exit, keep
// the default: at 100k keys GOGC=50 took 4 MiB off their peak RSS (30 to
// 26 MiB) for 1.15-1.2x the CPU time (BenchmarkScale).
func listingGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}

// tableKeep is how many bytes of formatted rows the listing commands keep
// in memory to write a table after one walk (writeTable); past that the
// rows go to a temporary file (spillFile).
const tableKeep = 256 << 10

// spillFile is a temporary file for a long table's rows, removed at once
// (it lives until closed). Rows hold what the table shows: labels, masked
// API keys, times; never a secret.
func spillFile() (*os.File, error) { return store.ScratchFile("shipkey-table-*") }

// writeTable writes the rows that cells makes of the keys of walk, aligned
// (columns), after head (nil: none), and flushes w. It returns the number of
// rows. The widths are known only once every row is measured, so the rows
// are kept formatted: in memory up to keep bytes, then in the file spill
// makes. Without that file (spill nil or failing) the rows past keep are
// dropped and a second walk formats them again to write them. Either way
// memory stays flat at any number of keys; the file spares the second walk
// (at 100k keys a walk is about a second: each key's state is a page fault,
// see store.WalkKeys). pass is 0 in the walk that counts the rows, 1 in a
// second walk. cells may reuse its slice from one call to the next.
func writeTable(w *bufio.Writer, head []string, walk keyWalk, cells func(k store.Key, pass int) []string, keep int, spill func() (*os.File, error)) (int, error) {
	var rows rowBuffer
	n := 0
	dropped := false
	err := walk(func(k store.Key) error {
		n++
		c := cells(k, 0)
		rows.cols.measure(c)
		if dropped {
			return nil
		}
		rows.add(c)
		if len(rows.arena) < keep {
			return nil
		}
		if rows.file == nil && spill != nil {
			rows.file, _ = spill()
		}
		if rows.file == nil {
			rows.arena, dropped = nil, true
			return nil
		}
		if _, err := rows.file.Write(rows.arena); err != nil {
			return err
		}
		rows.arena = rows.arena[:0]
		return nil
	})
	if rows.file != nil {
		defer rows.file.Close()
	}
	if err != nil || n == 0 {
		return n, err
	}
	if head != nil {
		rows.cols.measure(head)
		rows.cols.write(w, head)
	}
	if !dropped {
		if err := rows.writeRows(w); err != nil {
			return n, err
		}
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
// the end: each row's cells NUL-separated and ended by a newline (cells are
// sanitized text, free of control characters), about 75 bytes a key; in
// arena, and before it in file once arena grew past its bound.
type rowBuffer struct {
	cols  columns
	arena []byte
	file  *os.File
}

// add keeps a row (measured already).
func (r *rowBuffer) add(cells []string) {
	for i, c := range cells {
		if i > 0 {
			r.arena = append(r.arena, 0)
		}
		r.arena = append(r.arena, c...)
	}
	r.arena = append(r.arena, '\n')
}

// writeRows writes the rows kept, aligned: those in file, then arena's.
func (r *rowBuffer) writeRows(w *bufio.Writer) error {
	if r.file != nil {
		if _, err := r.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		br := bufio.NewReaderSize(r.file, 64<<10)
		var long []byte // a row longer than br's buffer
		for {
			line, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				long = append(long[:0], line...)
				for err == bufio.ErrBufferFull {
					line, err = br.ReadSlice('\n')
					long = append(long, line...)
				}
				line = long
			}
			if len(line) > 0 {
				r.cols.writeRow(w, line[:len(line)-1])
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	for b := r.arena; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		r.cols.writeRow(w, b[:i])
		b = b[i+1:]
	}
	return nil
}
