// Package text holds shipkey's terminal text rules, used by every front end:
// making untrusted text safe (Safe), the type of text that is (Clean: made by
// Sanitize where untrusted text enters, by Trusted for the program's
// constants, by Cleanf and Errorf for messages; Writer prints only it),
// masking secrets (Mask), and the one way each kind of time is written
// (Countdown, Relative, Ago, Stamp). It is a leaf: it imports nothing of
// shipkey.
package text

import (
	"strings"
	"unicode/utf8"
)

// Safe makes untrusted text (claims, labels, server messages) safe to put
// on a terminal: control characters, including ESC, C1 controls, DEL, and
// Unicode bidi overrides, are replaced by a visible escape such as \x1b or
// \u202e; newlines and tabs become spaces; invalid UTF-8 becomes U+FFFD. What
// it returns can never start a terminal control sequence.
func Safe(s string) string {
	if IsClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune('\uFFFD')
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case r < 0x80 && unsafeRune(r):
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case unsafeRune(r):
			b.WriteString(`\u`)
			b.WriteString(hex4(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// IsClean reports whether s may go to a terminal as it is: Safe would
// leave it unchanged. It checks; it cleans nothing (input that must be
// clean, such as a new label, is refused with it).
func IsClean(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) || r == '\n' || r == '\t' || r == '\r' {
			return false
		}
	}
	return true
}

// SafeLines is Safe for text where newlines are meaningful (a pretty
// printed JSON body): every line is sanitized and newlines are kept.
func SafeLines(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = Safe(l)
	}
	return strings.Join(lines, "\n")
}

func unsafeRune(r rune) bool {
	switch {
	case r >= 0x20 && r < 0x7f: // printable ASCII: the common case
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r < 0xa0: // C1 controls, CSI among them
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidi overrides and marks
	case r == 0xfeff:
		return true
	}
	return false // unicode.Cc is exactly C0, DEL and C1, all covered above
}

const hexdigits = "0123456789abcdef"

func hex2(c byte) string { return string([]byte{hexdigits[c>>4], hexdigits[c&0xf]}) }

func hex4(r rune) string {
	return string([]byte{hexdigits[r>>12&0xf], hexdigits[r>>8&0xf], hexdigits[r>>4&0xf], hexdigits[r&0xf]})
}
