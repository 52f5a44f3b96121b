package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// keyState says in words where a key's token stands at now: "valid for
// 14d 23h 59m", "refresh expires in 12:30", "login needed".
func keyState(k store.Key, now time.Time) string {
	switch k.StatusAt(now) {
	case store.StatusValid:
		exp := k.Token.AccessExpiry()
		if exp.IsZero() {
			return "valid (no stated expiry)"
		}
		return "valid for " + text.Countdown(exp.Sub(now))
	case store.StatusRefreshable:
		if k.Token.RefreshExpiresAt.IsZero() {
			return "access expired, refreshable"
		}
		return "refresh expires in " + text.Countdown(k.Token.RefreshExpiresAt.Sub(now))
	case store.StatusRenewsItself:
		return "renews itself"
	case store.StatusLoginNeeded:
		return "login needed"
	default:
		if k.LoggedOut {
			return "logged out, login needed"
		}
		return "login needed"
	}
}

// fitBlock clips or pads s to exactly height lines, each cut to width cells.
func fitBlock(s string, width, height int) string {
	if height <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		if width > 0 && lipgloss.Width(l) > width {
			lines[i] = ansi.Truncate(l, width, "…")
		}
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// indentWrapped word-wraps plain text to fit width after an indent, renders
// each line with style, and returns the lines indented, each ending in a
// newline: an error message keeps its "what to do" part on a narrow screen.
func indentWrapped(text string, indent, width int, style func(...string) string) string {
	w := max(20, width-indent)
	if width <= 0 { // not sized yet: no wrapping
		w = len(text)
	}
	var b strings.Builder
	for _, l := range strings.Split(ansi.Wrap(text, w, ""), "\n") {
		b.WriteString(strings.Repeat(" ", indent) + style(l) + "\n")
	}
	return b.String()
}

// hardWrap cuts s (a token: no spaces) into lines of at most width runes.
func hardWrap(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	r := []rune(s)
	var out []string
	for len(r) > width {
		out = append(out, string(r[:width]))
		r = r[width:]
	}
	return append(out, string(r))
}

// piece is a unit of plain text for flow, with the separator that goes
// before it when it shares a line with the previous piece.
type piece struct{ sep, text string }

// flow lays pieces out on lines of at most width cells: a piece goes on the
// current line when it fits, else it starts a new one; a piece wider than a
// line wraps at spaces, a URL (an issuer) between the pieces of its path
// (urlWrap), and a word wider than a line is cut.
func flow(pieces []piece, width int) []string {
	width = max(1, width)
	var lines []string
	cur := ""
	for i, p := range pieces {
		if i > 0 && ansi.StringWidth(cur+p.sep+p.text) <= width {
			cur += p.sep + p.text
			continue
		}
		if i > 0 {
			lines = append(lines, cur)
		}
		wrapped := strings.Split(ansi.Wrap(p.text, width, ""), "\n")
		if isURL(p.text) {
			wrapped = urlWrap(p.text, width)
		}
		lines = append(lines, wrapped[:len(wrapped)-1]...)
		cur = wrapped[len(wrapped)-1]
	}
	return append(lines, cur)
}

// row renders "name   value" with the name padded to w cells.
func (s *Styles) row(name string, w int, value string) string {
	pad := w - lipgloss.Width(name)
	if pad < 1 {
		pad = 1
	}
	return s.FieldName.Render(name) + strings.Repeat(" ", pad) + value
}

// waitingNote says, once a request has taken a second, that the app is
// waiting for the server and for how long; "" before that or when nothing
// is in flight (since is zero).
func waitingNote(since, now time.Time) string {
	if since.IsZero() || now.Sub(since) < time.Second {
		return ""
	}
	return fmt.Sprintf(" waiting for the server… (%ds)", int(now.Sub(since)/time.Second))
}

// waitClock keeps when a request in flight began: zero while none is.
type waitClock struct{ since time.Time }

// track starts the clock when busy begins and stops it when it ends.
func (w *waitClock) track(busy bool, now time.Time) {
	switch {
	case !busy:
		w.since = time.Time{}
	case w.since.IsZero():
		w.since = now
	}
}

// isURL reports whether s is one address ("https://host/realms/x"), which
// wraps with urlWrap rather than inside a word.
func isURL(s string) bool {
	return strings.Contains(s, "://") && !strings.ContainsAny(s, " \t\n")
}
