package text

import "strings"

// ShellQuote makes untrusted text (a label) safe and pasteable as one word of
// a POSIX shell command in a suggestion such as "run: shipkey login 'prod eu'".
// The text is made Safe first; a word of only shell-inert characters is left
// bare, anything else is single-quoted.
func ShellQuote(s string) string {
	s = Safe(s)
	if s != "" && strings.IndexFunc(s, shellSpecial) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellInert are the characters besides ASCII letters and digits that no
// POSIX shell treats specially within a word.
const shellInert = "-_./@:+,"

// shellSpecial reports whether r needs quoting in a shell word.
func shellSpecial(r rune) bool {
	return !(r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(shellInert, r)))
}
