package text

import (
	"strings"
	"testing"
)

func TestSafeWriterKeepsLinesAndDefusesControls(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	w := NewSafeWriter(&b)
	in := "{\"a\":\"x\x1b[2Jy\"}\r\n\xe2\x80\xaeok \xc3"
	// Written a byte at a time: sequences split across writes stay whole.
	for i := 0; i < len(in); i++ {
		if _, err := w.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte("\xa9\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "{\"a\":\"x\\x1b[2Jy\"}\n\\u202eok é\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	w = NewSafeWriter(&b)
	long := strings.Repeat("é", safeLineMax) + "\x07"
	_, _ = w.Write([]byte(long))
	_ = w.Flush()
	if strings.ContainsRune(b.String(), '\uFFFD') || !strings.HasSuffix(b.String(), `\x07`) {
		t.Errorf("a long line without newline came out broken: ...%q", b.String()[len(b.String())-12:])
	}
}
