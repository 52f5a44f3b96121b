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
// ctrl+u edit; other control keys and escape sequences are ignored.
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
		line []rune
		b    [1]byte
		esc  int // 0 none, 1 after ESC, 2 inside a CSI/SS3 sequence
		utf  []byte
	)
	for {
		n, err := in.Read(b[:])
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return "", io.EOF
			}
			return "", fmt.Errorf("reading from the terminal: %w", err)
		}
		c := b[0]
		switch {
		case esc == 1:
			esc = 0
			if c == '[' || c == 'O' {
				esc = 2
			}
			continue
		case esc == 2:
			if c >= 0x40 && c <= 0x7e {
				esc = 0
			}
			continue
		}
		switch c {
		case 3: // ctrl+c
			return "", errInterrupted
		case 4: // ctrl+d
			if len(line) == 0 {
				return "", io.EOF
			}
		case '\r', '\n':
			return string(line), nil
		case 0x7f, 8: // backspace
			if len(line) > 0 {
				line = line[:len(line)-1]
			}
		case 0x15: // ctrl+u
			line = line[:0]
		case 0x1b:
			esc = 1
		default:
			if c < 0x20 {
				continue
			}
			utf = append(utf, c)
			if r, size := utf8.DecodeRune(utf); r != utf8.RuneError || size > 1 || len(utf) >= utf8.UTFMax {
				line = append(line, []rune(string(utf))...)
				utf = utf[:0]
			}
		}
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
