package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// maxSecretLine bounds one line of secret input read from stdin.
const maxSecretLine = 64 << 10

// iostreams are the command's standard streams and what is known about them.
type iostreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// StdinTTY and StdoutTTY say whether stdin and stdout are terminals.
	StdinTTY  bool
	StdoutTTY bool

	// ReadSecret reads one line from the terminal without echo, after
	// writing prompt to ErrOut. Nil when stdin is not a terminal: no secret
	// can be asked for.
	ReadSecret func(prompt string) (string, error)

	// lines buffers In for line reads, so that several reads share it.
	lines *bufio.Reader
}

// systemIO returns the process's streams.
func systemIO() *iostreams {
	ios := &iostreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		StdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		StdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
	}
	if ios.StdinTTY {
		fd := int(os.Stdin.Fd())
		ios.ReadSecret = func(prompt string) (string, error) {
			fmt.Fprint(ios.ErrOut, prompt)
			b, err := term.ReadPassword(fd)
			fmt.Fprintln(ios.ErrOut)
			if err != nil {
				return "", fmt.Errorf("reading from the terminal: %w", err)
			}
			return string(b), nil
		}
	}
	return ios
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
