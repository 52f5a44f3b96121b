package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/shipkey/shipkey/internal/text"
	"golang.org/x/term"
)

// maxSecretLine bounds one line of secret input read from stdin.
const maxSecretLine = 64 << 10

// iostreams are the command's standard streams and what is known about them.
type iostreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// StdinTTY, StdoutTTY and StderrTTY say whether stdin, stdout and
	// stderr are terminals.
	StdinTTY  bool
	StdoutTTY bool
	StderrTTY bool

	// ReadSecret reads one line from the terminal without echo, after
	// writing prompt to ErrOut. Nil when stdin is not a terminal: no secret
	// can be asked for.
	ReadSecret func(prompt text.Clean) (string, error)

	// lines buffers In for line reads, so that several reads share it.
	lines *bufio.Reader
	// secretAsked: ReadSecret was called (the terminal was read).
	secretAsked bool
}

// systemIO returns the process's streams.
func systemIO() *iostreams {
	ios := &iostreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		StdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		StdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		StderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
	if ios.StdinTTY {
		ios.ReadSecret = func(prompt text.Clean) (string, error) {
			ios.secretAsked = true
			return readHidden(os.Stdin, ios.ErrOut, prompt)
		}
	}
	return ios
}

// errInterrupted is ctrl+c at a hidden prompt: the command stops with
// exit code 130, as a shell reports SIGINT, having written nothing.
var errInterrupted = errors.New("interrupted")

// exitInterrupted is the exit code of errInterrupted.
const exitInterrupted = 130

// readHidden reads one line from the terminal in without echo, after
// writing prompt to out. The terminal is put in raw mode for the read (and
// always restored), so ctrl+c arrives as a key, not a signal: it returns
// errInterrupted; ctrl+d on an empty line returns io.EOF. Backspace and
// ctrl+u edit; other control keys and escape sequences are ignored
// (hiddenLine).
func readHidden(in *os.File, out io.Writer, prompt text.Clean) (string, error) {
	fd := int(in.Fd())
	w := text.NewWriter(out)
	old, err := term.MakeRaw(fd)
	if err != nil {
		w.Line(prompt)
		return "", fmt.Errorf("reading from the terminal: %w", err)
	}
	// The prompt shows once the terminal echoes nothing: an answer typed
	// as soon as it shows is never echoed.
	w.Print(prompt)
	defer func() {
		_ = term.Restore(fd, old)
		// Raw mode: no newline translation until restored. A carriage
		// return is no text a Writer takes; this one is the program's.
		_, _ = io.WriteString(out, "\r\n")
	}()
	var (
		h hiddenLine
		b [1]byte
	)
	for {
		n, err := in.Read(b[:])
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return "", io.EOF
			}
			return "", fmt.Errorf("reading from the terminal: %w", err)
		}
		switch done, err := h.key(b[0]); {
		case err != nil:
			return "", err
		case done:
			return string(h.line), nil
		}
	}
}

// hiddenLine is the line typed at a hidden prompt, a byte at a time, raw:
// enter ends it, ctrl+c abandons it, ctrl+d on an empty line is the end
// of input; backspace and ctrl+u edit; other control keys and escape
// sequences (arrows, function keys) are ignored.
type hiddenLine struct {
	line []rune
	esc  int    // 0 none, 1 after ESC, 2 inside a CSI/SS3 sequence
	utf  []byte // the bytes of a rune not yet whole
}

// key takes one byte typed. done reports that the line ended (err nil) or
// was abandoned (errInterrupted, io.EOF: then line is not the answer).
func (h *hiddenLine) key(c byte) (done bool, err error) {
	if h.escaped(c) {
		return false, nil
	}
	switch c {
	case 3: // ctrl+c
		return true, errInterrupted
	case 4: // ctrl+d
		if len(h.line) == 0 {
			return true, io.EOF
		}
	case '\r', '\n':
		return true, nil
	case 0x7f, 8: // backspace
		if len(h.line) > 0 {
			h.line = h.line[:len(h.line)-1]
		}
	case 0x15: // ctrl+u
		h.line = h.line[:0]
	case 0x1b:
		h.esc = 1
	default:
		h.typed(c)
	}
	return false, nil
}

// escaped reports whether c belongs to an escape sequence (and so is
// ignored), following where the sequence stands.
func (h *hiddenLine) escaped(c byte) bool {
	switch h.esc {
	case 1:
		h.esc = 0
		if c == '[' || c == 'O' {
			h.esc = 2
		}
		return true
	case 2:
		if c >= 0x40 && c <= 0x7e {
			h.esc = 0
		}
		return true
	}
	return false
}

// typed adds a byte of text to the line: a rune once its UTF-8 bytes are
// whole (an invalid one as it decodes); other control bytes are ignored.
func (h *hiddenLine) typed(c byte) {
	if c < 0x20 {
		return
	}
	h.utf = append(h.utf, c)
	if r, size := utf8.DecodeRune(h.utf); r != utf8.RuneError || size > 1 || len(h.utf) >= utf8.UTFMax {
		h.line = append(h.line, []rune(string(h.utf))...)
		h.utf = h.utf[:0]
	}
}

// IsInteractive reports whether both stdin and stdout are terminals: what the
// full-screen app needs.
func (s *iostreams) IsInteractive() bool { return s.StdinTTY && s.StdoutTTY }

// ReadLine reads one line from In without its line ending. An empty input
// is io.EOF.
func (s *iostreams) ReadLine() (string, error) {
	if s.lines == nil {
		s.lines = bufio.NewReaderSize(io.LimitReader(s.In, maxSecretLine+1), 4096)
	}
	line, err := s.lines.ReadString('\n')
	if len(line) > maxSecretLine {
		return "", errors.New("input line too long")
	}
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// ErrText is ErrOut as a writer of clean text (text.Clean): a message that
// names untrusted text is written through it, so that the text is one that
// was cleaned where it entered.
func (s *iostreams) ErrText() text.Writer { return text.NewWriter(s.ErrOut) }

// OutText is Out as a writer of clean text.
func (s *iostreams) OutText() text.Writer { return text.NewWriter(s.Out) }
