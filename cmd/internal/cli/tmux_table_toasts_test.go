//go:build !windows

package cli

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// screenText is a tmux screen as one line of words: a message the status
// line wraps reads whole again.
func screenText(screen string) string { return strings.Join(strings.Fields(screen), " ") }

// wholeUserCode is a device code (the demo realm's XXXX-XXXX) shown whole,
// spaced out or as typed.
var wholeUserCode = regexp.MustCompile(`(?:^|[^A-Z])(?:[A-Z]{4}-[A-Z]{4}|(?:[A-Z] ){4}- (?:[A-Z] ){3}[A-Z])(?:$|[^A-Z])`)

// TestTmuxTableAndToastsAtSmallSizes: in a real terminal at 80×24, 60×15 and
// 40×10, under an outer tmux that shipkey cannot reach ($TMUX unset, TERM
// from tmux): the copy toast names the outer tmux's paste buffers and the
// clear's toast says they still hold the copy, both whole (on the user's
// own store with clipboard_clear = "3s": the demo clears after 30 s);
// auto-refresh is worded for the key on screen; the keys table's filter
// matches the grant (a column not even shown at 40) and an empty result
// says so; the delete says what the server did with the session, whole; the
// sign-in screen shows the device code whole; ? in a form's text field is
// typed, f1 opens the help.
func TestTmuxTableAndToastsAtSmallSizes(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d/copy", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext", "TMUX="})
			h.config("clipboard_clear = \"3s\"\n")
			h.newKey(srv, "mine")
			s := h.start(size[0], size[1])
			s.waitText(10*time.Second, "mine")
			s.keys("1")
			s.detailsRead(10 * time.Second)
			s.keys("c")
			s.waitFor("the copy toast naming the outer tmux's buffers", 5*time.Second, func(screen string) bool {
				return strings.Contains(screenText(screen), "your outer tmux also keeps it in its paste buffers, which the clear cannot reach (tmux: delete-buffer there).")
			})
			s.waitFor("the clear's toast naming the outer tmux's buffers", 10*time.Second, func(screen string) bool {
				return strings.Contains(screenText(screen), "Cleared the clipboard; your outer tmux's paste buffers still hold the copy (tmux: list-buffers, delete-buffer there).")
			})
			s.keys("q")
		})
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory", "TMUX=", "BROWSER="})
			s := h.start(size[0], size[1], "demo")
			s.waitText(10*time.Second, "Get API Key", "password")

			// The device code shows whole, spaced or not, never cut.
			s.keys("Right", "Right")
			s.waitText(5*time.Second, "device code")
			s.keys("Enter")
			s.waitText(10*time.Second, "Sign in")
			seen := strings.Join(s.scrolled(12), "\n")
			whole := false
			for _, l := range strings.Split(seen, "\n") {
				if !strings.Contains(l, "user_code=") && wholeUserCode.MatchString(l) {
					whole = true
				}
			}
			if !whole {
				t.Errorf("the device code is never shown whole; screens:\n%s", seen)
			}
			s.keys("Escape")
			// The form scrolls to its "Cancelled" line (at 40x10 the focused
			// Grant field is then above the fold; changing it scrolls back).
			s.waitText(5*time.Second, "Get API Key", "Cancelled")
			s.keys("Left", "Left")
			s.waitText(5*time.Second, "password")

			// In a text field ? is typed (the footer says f1 help), and f1
			// opens the help: had ? opened it, f1 would close it again.
			s.keys("Tab")
			s.waitText(5*time.Second, "f1 help")
			s.keys("?", "BSpace", "F1")
			s.waitText(5*time.Second, "› Help")
			s.keys("Escape")
			s.waitFor("the form again", 5*time.Second, func(screen string) bool {
				return strings.Contains(screen, "Get API Key") && !strings.Contains(screen, "› Help")
			})
			s.keys("BTab")
			s.waitText(5*time.Second, "? help")

			s.keys("Enter")
			s.waitText(10*time.Second, "Token details")

			// Auto-refresh (on in the demo): the State row says it is for
			// this key, on a line of its own where the row is too narrow.
			if seen = strings.Join(s.scrolled(12), "\n"); !strings.Contains(screenText(seen), "auto-refresh on for this key") {
				t.Errorf("auto-refresh is not worded for this key; screens:\n%s", seen)
			}

			// The filter matches the grant; a filter matching nothing says so.
			s.keys("2")
			s.waitText(5*time.Second, "API keys")
			s.keys("/")
			s.keys("-l", "passw")
			s.waitText(5*time.Second, "1 of 1 key", "demo")
			s.keys("-l", "zzz")
			s.waitText(5*time.Second, "0 of 1 key", "No key matches")
			s.keys("Escape")
			s.waitText(5*time.Second, "1 of 1 key", "demo")

			// The delete says what the server did.
			s.keys("d")
			s.waitText(5*time.Second, "Delete key")
			s.keys("y")
			s.waitFor("the delete's outcome", 10*time.Second, func(screen string) bool {
				return strings.Contains(screenText(screen), `Deleted "demo" and ended its session at the server (logout).`)
			})
			s.keys("q")
		})
	}
}

// TestTmuxFormEscCancelsAHungRequest: at 80×24, 60×15 and 40×10, a token
// request to a server that accepts the connection and never answers is
// cancelled by esc (the footer says so while it waits): the form says,
// in sight, that nothing was stored, and no key was made.
func TestTmuxFormEscCancelsAHungRequest(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Never accepted: the kernel completes the connection into the backlog
	// and the request waits there unanswered.
	t.Cleanup(func() { ln.Close() })
	hung := "http://" + ln.Addr().String()
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(size[0], size[1], "demo")
			s.waitText(10*time.Second, "Get API Key", "password")
			s.keys("Tab")
			s.waitText(5*time.Second, "f1 help")
			s.keys("C-u")
			s.keys("-l", hung)
			s.keys("BTab")
			s.waitText(5*time.Second, "? help")
			s.keys("Enter")
			s.waitText(10*time.Second, "esc cancel")
			s.keys("Escape")
			s.waitFor("the cancellation in sight", 10*time.Second, func(screen string) bool {
				return strings.Contains(screenText(screen), "Cancelled: nothing was stored.")
			})
			if screen := s.capture(); strings.Contains(screen, "Token details") {
				t.Errorf("after esc:\n%s", screen)
			}
			s.keys("C-c")
		})
	}
}

// TestTmuxLabelColumnStopsOnAWideScreen: in a real terminal 200 columns
// wide the keys table's Label column stops at its cap (40 cells) and the
// spare width stays at the right, so a label and the next column stay close.
func TestTmuxLabelColumnStopsOnAWideScreen(t *testing.T) {
	t.Parallel()
	s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(200, 30, "demo")
	s.waitText(10*time.Second, "Get API Key", "password")
	s.keys("Enter")
	s.waitText(10*time.Second, "Token details")
	s.keys("2")
	screen := s.waitText(5*time.Second, "API keys", "Label", "Last Used")
	// The header's column titles and where each starts (in cells).
	title := regexp.MustCompile(`\S+(?: \S+)*`)
	width := -1
	for l := range strings.SplitSeq(screen, "\n") {
		if !strings.Contains(l, "Label") || !strings.Contains(l, "Last Used") {
			continue
		}
		locs := title.FindAllStringIndex(l, -1)
		for i, loc := range locs {
			if strings.HasPrefix(l[loc[0]:], "Label") && i+1 < len(locs) {
				width = len([]rune(l[loc[0]:locs[i+1][0]]))
			}
		}
	}
	if width < 0 || width > 42 {
		t.Errorf("at 200 columns the Label column is %d cells wide (at most 40 wanted):\n%s", width, screen)
	}
	s.keys("q")
}
