package text

import (
	"fmt"
	"io"
	"strings"
)

// Clean is text that may go to a terminal as it is: untrusted text that went
// through Sanitize (Safe's rules) where it entered shipkey, or the program's
// own words (Trusted, a constant). It is a struct so that no string converts
// into it: a function that takes a Clean cannot be handed unclean text, and a
// value that is Clean needs no cleaning again where it is printed. The zero
// Clean is the empty text.
type Clean struct{ s string }

// Sanitize cleans untrusted text (claims, labels, server messages, records
// read from disk or etcd) by Safe's rules: one line, every control character
// made visible. Call it once, where the text enters.
func Sanitize(s string) Clean { return Clean{Safe(s)} }

// SanitizeLines cleans untrusted text whose newlines are meaningful (a pretty
// printed JSON body) by SafeLines' rules: each line is cleaned, newlines kept.
func SanitizeLines(s string) Clean { return Clean{SafeLines(s)} }

// Trusted is the program's own text as Clean. Call it with a constant only: a
// test of this package (TestCleanTextTakesConstants) walks the tree and fails
// on any other argument. A constant that holds a control character other
// than a newline is a bug in shipkey: Trusted panics.
func Trusted(constant string) Clean {
	if SafeLines(constant) != constant {
		panic("text.Trusted: a constant with control characters: " + Safe(constant))
	}
	return Clean{constant}
}

// String is the clean text.
func (c Clean) String() string { return c.s }

// Len is the text's length in bytes.
func (c Clean) Len() int { return len(c.s) }

// IsEmpty reports whether the text is empty.
func (c Clean) IsEmpty() bool { return c.s == "" }

// Or is c, or alt when c is empty.
func (c Clean) Or(alt Clean) Clean {
	if c.s == "" {
		return alt
	}
	return c
}

// Concat is the parts one after the other.
func Concat(parts ...Clean) Clean {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.s)
	}
	return Clean{b.String()}
}

// Join is the parts with sep between them.
func Join(parts []Clean, sep Clean) Clean {
	ss := make([]string, len(parts))
	for i, p := range parts {
		ss[i] = p.s
	}
	return Clean{strings.Join(ss, sep.s)}
}

// SanitizeAll cleans each of ss.
func SanitizeAll(ss []string) []Clean {
	out := make([]Clean, len(ss))
	for i, s := range ss {
		out[i] = Sanitize(s)
	}
	return out
}

// Cleanf formats as fmt.Sprintf does, with a constant format (checked as
// Trusted's argument is; Writer.Linef's and Errorf's too). A Clean argument
// goes in as it is; any other argument is formatted by its verb and then
// sanitized (Safe), so that numbers, durations and errors need no wrapping
// and an unclean string cannot slip through.
func Cleanf(format string, args ...any) Clean {
	return Clean{fmt.Sprintf(format, cleanArgs(args, false)...)}
}

// Errorf is fmt.Errorf with a constant format whose arguments are cleaned as
// Cleanf's are, so that the error's own words about untrusted text (a label,
// a URL, an environment variable's value) are clean where they are written.
// An error argument goes in as it is (%w keeps wrapping it): an error may
// come from anywhere, and is cleaned where it is printed (the CLI's error
// line, the app's errText).
func Errorf(format string, args ...any) error {
	return fmt.Errorf(format, cleanArgs(args, true)...)
}

// cleanArgs prepares args for a format: Clean as its text, errors as they
// are when keepErrors is set, anything else sanitized by its verb.
func cleanArgs(args []any, keepErrors bool) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case Clean:
			out[i] = a.s
		case error:
			if !keepErrors {
				out[i] = sanitized{a}
				continue
			}
			out[i] = a
		default:
			out[i] = sanitized{a}
		}
	}
	return out
}

// sanitized formats its value by the verb asked for, then sanitizes the result.
type sanitized struct{ v any }

func (a sanitized) Format(f fmt.State, verb rune) {
	_, _ = io.WriteString(f, Safe(fmt.Sprintf(fmt.FormatString(f, verb), a.v)))
}

// MarshalText is the text, for encodings (JSON) of structs that hold a Clean.
func (c Clean) MarshalText() ([]byte, error) { return []byte(c.s), nil }

// UnmarshalText sanitizes what is decoded: text read back from a file or the
// network is untrusted again.
func (c *Clean) UnmarshalText(b []byte) error {
	*c = Sanitize(string(b))
	return nil
}

// Writer puts clean text on a terminal: it accepts nothing else, so text that
// did not pass Sanitize (or is not the program's own) does not compile into a
// line it writes. Write errors are dropped, as fmt.Fprintf's are at a
// terminal.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) Writer { return Writer{w} }

// Print writes the parts one after the other.
func (w Writer) Print(parts ...Clean) {
	for _, p := range parts {
		_, _ = io.WriteString(w.w, p.s)
	}
}

// Line writes the parts and a newline.
func (w Writer) Line(parts ...Clean) {
	w.Print(parts...)
	_, _ = io.WriteString(w.w, "\n")
}

// Linef writes Cleanf(format, args...) and a newline: a constant format,
// each argument Clean or sanitized.
func (w Writer) Linef(format string, args ...any) {
	w.Line(Cleanf(format, args...))
}
