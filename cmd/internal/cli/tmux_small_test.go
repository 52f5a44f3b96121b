//go:build !windows

package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The screens of small terminals, each in a real terminal (tmux) at 80×24,
// 60×15 and 40×10. (The help screen's scrolling: tmux_help_test.go.)
var smallSizes = [][2]int{{80, 24}, {60, 15}, {40, 10}}

// eachSmallSize runs fn in a parallel subtest per size.
func eachSmallSize(t *testing.T, fn func(t *testing.T, w, h int)) {
	for _, size := range smallSizes {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			fn(t, size[0], size[1])
		})
	}
}

// noCutLines fails when a line of screen runs past width.
func noCutLines(t *testing.T, screen string, width int) {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		if n := len([]rune(strings.TrimRight(l, " "))); n > width {
			t.Errorf("a line of %d columns on a %d-column screen: %q", n, width, l)
		}
	}
}

// TestTmuxDeviceCodeWholeOnSmallScreens: the device code is on the screen
// whole (spaced where it fits, else as typed; scrolled to with j where the
// screen is short) at every size, and it is the code that c copies; no line
// of the verification URL is cut while the screen scrolls.
func TestTmuxDeviceCodeWholeOnSmallScreens(t *testing.T) {
	t.Parallel()
	eachSmallSize(t, func(t *testing.T, w, h int) {
		s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER="}).start(w, h, "demo")
		s.waitText(10*time.Second, "Get API Key")
		s.keys("Right", "Right") // password → client credentials → device code
		s.waitText(5*time.Second, "device code")
		s.keys("Enter")
		s.waitText(10*time.Second, "Sign in")
		s.keys("c")
		s.waitText(5*time.Second, "Copied")
		var code string
		s.waitFor("the code in tmux's buffer", 5*time.Second, func(string) bool {
			out, err := s.tmux("show-buffer")
			code = strings.TrimSpace(out)
			return err == nil && regexp.MustCompile(`^[A-Z]{4}-[A-Z]{4}$`).MatchString(code)
		})
		// Scrolled (j) where the screen is shorter than the sign-in.
		s.dismissToast("Copied")
		seen := strings.Join(s.scrolled(10), "\n")
		spaced := strings.Join(strings.Split(code, ""), " ")
		if !strings.Contains(seen, code) && !strings.Contains(seen, spaced) {
			t.Fatalf("%dx%d: the code %s is never whole on the screen:\n%s", w, h, code, seen)
		}
		noCutLines(t, seen, w)
		// The verification URL's lines are never cut while scrolled (no
		// "↑ more" laid over one): each piece of it whole.
		if !strings.Contains(seen, "http://127.0.0.1") {
			t.Errorf("%dx%d: the verification URL never shows:\n%s", w, h, seen)
		}
		for _, l := range strings.Split(seen, "\n") {
			if strings.Contains(l, "…") && (strings.Contains(l, "http") || strings.Contains(l, "/realms") || strings.Contains(l, "/device")) {
				t.Errorf("%dx%d: a line of the URL is cut: %q", w, h, l)
			}
		}
		s.keys("Escape")
	})
}

// TestTmuxFormHelpKeyOnSmallScreens: on the Get API Key form, ? typed in a
// text field is text (the footer offers f1 for help there), and f1 opens the
// help and esc comes back to the form with the field as typed.
func TestTmuxFormHelpKeyOnSmallScreens(t *testing.T) {
	t.Parallel()
	eachSmallSize(t, func(t *testing.T, w, h int) {
		s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER="}).start(w, h, "demo")
		s.waitText(10*time.Second, "Get API Key")
		s.keys("Escape") // leave the demo's form for an empty one: the label field is first
		s.waitText(5*time.Second, "No API keys yet")
		s.keys("n")
		s.waitText(5*time.Second, "Get API Key")
		s.keys("Tab") // the grant → Auth URL, a text field
		s.keys("?")
		typed := regexp.MustCompile(`› Auth URL .*\?`)
		screen := s.waitFor("? typed into Auth URL", 5*time.Second, func(screen string) bool { return typed.MatchString(screen) })
		if strings.Contains(screen, "Help") || !strings.Contains(screen, "f1 help") || strings.Contains(screen, "? help") {
			t.Fatalf("%dx%d: in a text field the footer must offer f1 (not ?) for help, and ? must not open it:\n%s", w, h, screen)
		}
		s.keys("F1")
		s.waitText(5*time.Second, "Help")
		s.keys("Escape")
		// Back on the form, with the field as typed.
		screen = s.waitFor("the form with the ? typed", 5*time.Second, func(screen string) bool { return typed.MatchString(screen) })
		noCutLines(t, screen, w)
	})
}

// TestTmuxFilterNoMatchOnSmallScreens: a filter that matches no key says
// so on the keys table (not an empty table), at every size.
func TestTmuxFilterNoMatchOnSmallScreens(t *testing.T) {
	t.Parallel()
	eachSmallSize(t, func(t *testing.T, w, h int) {
		s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(w, h, "demo")
		s.waitText(10*time.Second, "Get API Key")
		s.keys("Enter")
		s.waitText(10*time.Second, "Token details")
		s.keys("2")
		s.waitText(5*time.Second, "API keys")
		s.keys("/")
		s.keys("zqx")
		screen := s.waitText(5*time.Second, "No key matches")
		noCutLines(t, screen, w)
		// What the Grant column shows matches too.
		s.keys("BSpace", "BSpace", "BSpace")
		s.keys("password")
		screen = s.waitFor("the demo key by its grant", 5*time.Second, func(screen string) bool {
			return strings.Contains(screen, "demo") && !strings.Contains(screen, "No key matches")
		})
		noCutLines(t, screen, w)
	})
}
