package lipgloss

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/colorprofile"
)

// Writer is the default writer that prints to stdout, automatically
// downsampling colors when necessary.
//
// shipkey: its profile is detected without running `tmux info` (see
// stdoutWriter).
var Writer = stdoutWriter(os.Stdout, os.Environ())

// stdoutWriter is colorprofile.NewWriter(out, env), but inside tmux the
// profile comes from the environment alone: upstream runs `tmux info` here,
// in the package's init, in every process whose stdout is a terminal inside
// tmux (about 5-11 ms before main). Inside tmux, $COLORTERM=truecolor (or
// 24bit) says true colour (tmux passes 24-bit colour on when the terminal
// outside has it, which is what that variable says); otherwise $TERM and
// terminfo decide, as upstream does outside tmux (tmux-256color: 256
// colours, downsampled from true colour by the writer).
func stdoutWriter(out *os.File, env []string) *colorprofile.Writer {
	var tmux, trueColor bool
	var rest []string
	for _, e := range env {
		switch {
		case strings.HasPrefix(e, "TMUX="):
			tmux = e != "TMUX="
			continue
		case e == "COLORTERM=truecolor", e == "COLORTERM=24bit":
			trueColor = true
		}
		rest = append(rest, e)
	}
	w := colorprofile.NewWriter(out, rest)
	if tmux && trueColor && w.Profile > colorprofile.Ascii && w.Profile < colorprofile.TrueColor {
		w.Profile = colorprofile.TrueColor
	}
	return w
}

// Println to stdout, automatically downsampling colors when necessary, ending
// with a trailing newline.
//
// Example:
//
//	str := NewStyle().
//	    Foreground(lipgloss.Color("#6a00ff")).
//	    Render("breakfast")
//
//	Println("Time for a", str, "sandwich!")
func Println(v ...any) (int, error) {
	return fmt.Fprintln(Writer, v...) //nolint:wrapcheck
}

// Printf prints formatted text to stdout, automatically downsampling colors
// when necessary.
//
// Example:
//
//	str := NewStyle().
//	  Foreground(lipgloss.Color("#6a00ff")).
//	  Render("knuckle")
//
//	Printf("Time for a %s sandwich!\n", str)
func Printf(format string, v ...any) (int, error) {
	return fmt.Fprintf(Writer, format, v...) //nolint:wrapcheck
}

// Print to stdout, automatically downsampling colors when necessary.
//
// Example:
//
//	str := NewStyle().
//	    Foreground(lipgloss.Color("#6a00ff")).
//	    Render("Who wants marmalade?\n")
//
//	Print(str)
func Print(v ...any) (int, error) {
	return fmt.Fprint(Writer, v...) //nolint:wrapcheck
}

// Fprint pritnts to the given writer, automatically downsampling colors when
// necessary.
//
// Example:
//
//	str := NewStyle().
//	    Foreground(lipgloss.Color("#6a00ff")).
//	    Render("guzzle")
//
//	Fprint(os.Stderr, "I %s horchata pretty much all the time.\n", str)
func Fprint(w io.Writer, v ...any) (int, error) {
	return fmt.Fprint(colorprofile.NewWriter(w, os.Environ()), v...) //nolint:wrapcheck
}

// Fprintln prints to the given writer, automatically downsampling colors when
// necessary, and ending with a trailing newline.
//
// Example:
//
//	str := NewStyle().
//	    Foreground(lipgloss.Color("#6a00ff")).
//	    Render("Sandwich time!")
//
//	Fprintln(os.Stderr, str)
func Fprintln(w io.Writer, v ...any) (int, error) {
	return fmt.Fprintln(colorprofile.NewWriter(w, os.Environ()), v...) //nolint:wrapcheck
}

// Fprintf prints text to a writer, against the given format, automatically
// downsampling colors when necessary.
//
// Example:
//
//	str := NewStyle().
//	    Foreground(lipgloss.Color("#6a00ff")).
//	    Render("artichokes")
//
//	Fprintf(os.Stderr, "I really love %s!\n", food)
func Fprintf(w io.Writer, format string, v ...any) (int, error) {
	return fmt.Fprintf(colorprofile.NewWriter(w, os.Environ()), format, v...) //nolint:wrapcheck
}

// Sprint returns a string for stdout, automatically downsampling colors when
// necessary.
//
// Example:
//
//	str := NewStyle().
//		Faint(true).
//	    Foreground(lipgloss.Color("#6a00ff")).
//	    Render("I love to eat")
//
//	str = Sprint(str)
func Sprint(v ...any) string {
	var buf bytes.Buffer
	w := colorprofile.Writer{
		Forward: &buf,
		Profile: Writer.Profile,
	}
	fmt.Fprint(&w, v...) //nolint:errcheck
	return buf.String()
}

// Sprintln returns a string for stdout, automatically downsampling colors when
// necessary, and ending with a trailing newline.
//
// Example:
//
//	str := NewStyle().
//		Bold(true).
//		Foreground(lipgloss.Color("#6a00ff")).
//		Render("Yummy!")
//
//	str = Sprintln(str)
func Sprintln(v ...any) string {
	var buf bytes.Buffer
	w := colorprofile.Writer{
		Forward: &buf,
		Profile: Writer.Profile,
	}
	fmt.Fprintln(&w, v...) //nolint:errcheck
	return buf.String()
}

// Sprintf returns a formatted string for stdout, automatically downsampling
// colors when necessary.
//
// Example:
//
//	str := NewStyle().
//		Bold(true).
//		Foreground(lipgloss.Color("#fccaee")).
//		Render("Cantaloupe")
//
//	str = Sprintf("I really love %s!", str)
func Sprintf(format string, v ...any) string {
	var buf bytes.Buffer
	w := colorprofile.Writer{
		Forward: &buf,
		Profile: Writer.Profile,
	}
	fmt.Fprintf(&w, format, v...) //nolint:errcheck
	return buf.String()
}
