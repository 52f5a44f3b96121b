package text

import (
	"bytes"
	"io"
)

// safeLineMax is how much of a line SafeWriter holds before it writes it
// out unfinished (a body without newlines still streams).
const safeLineMax = 32 << 10

// SafeWriter passes a stream of untrusted text (an API's answer) to a
// terminal line by line through Safe, keeping the newlines: nothing it
// writes can start a terminal control sequence. Call Flush at the end for
// a last line without a newline.
type SafeWriter struct {
	w    io.Writer
	line []byte
}

// NewSafeWriter returns a SafeWriter that writes to w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{w: w} }

func (s *SafeWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			if len(s.line) >= safeLineMax {
				return n, s.emit(false)
			}
			return n, nil
		}
		s.line = append(s.line, p[:i]...)
		p = p[i+1:]
		if err := s.emit(true); err != nil {
			return n, err
		}
	}
	return n, nil
}

// emit writes the held line, sanitized; newline ends it.
func (s *SafeWriter) emit(newline bool) error {
	cut := len(s.line)
	if !newline {
		// Keep an unfinished UTF-8 sequence for the next write.
		for k := 1; k <= 3 && k <= cut; k++ {
			if c := s.line[cut-k]; c&0xc0 != 0x80 {
				if c >= 0xc0 && k < utf8Len(c) {
					cut -= k
				}
				break
			}
		}
	}
	out := Safe(string(bytes.TrimSuffix(s.line[:cut], []byte("\r"))))
	if newline {
		out += "\n"
	}
	rest := copy(s.line, s.line[cut:])
	s.line = s.line[:rest]
	_, err := io.WriteString(s.w, out)
	return err
}

func utf8Len(c byte) int {
	switch {
	case c >= 0xf0:
		return 4
	case c >= 0xe0:
		return 3
	default:
		return 2
	}
}

// Flush writes a last line that has no newline.
func (s *SafeWriter) Flush() error {
	if len(s.line) == 0 {
		return nil
	}
	return s.emit(false)
}
