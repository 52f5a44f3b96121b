package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/shipkey/shipkey/auth"
)

// fitsExactly checks that a frame has exactly height lines, none wider than
// width, and a one-line footer with "? help" or the help's own keys.
func fitsExactly(t *testing.T, v string, width, height int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != height {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), height, v)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Fatalf("line %d is %d cells wide (> %d): %q", i+1, w, width, l)
		}
	}
}

// Every screen renders inside the terminal down to 40×10, and in between,
// without panicking; the footer stays one line.
func TestEveryScreenFitsDownTo40x10(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 10}, {50, 12}, {60, 15}, {100, 30}} {
		h := newHarness(t, func(f *fakeStore) {
			f.add("demo", "demo", time.Time{})
			f.add("a-rather-long-label-for-a-narrow-screen", "u", t0.Add(-time.Hour))
		})
		h.send(windowSize(size[0], size[1]))
		for _, keys := range [][]string{{"esc"}, {"n"}, {"1"}, {"1", "v"}, {"1", "l"}, {"2"}, {"2", "/"}, {"2", "d"}, {"3"}, {"4"}, {"4", "ctrl+s"}, {"?"}} {
			h.press("esc", "esc", "esc")
			h.m.showHelp = false
			h.press(keys...)
			fitsExactly(t, h.view(), size[0], size[1])
			for _, k := range []string{"G", "pgdown", "g"} {
				if !h.m.screen().Capturing() {
					h.send(scrollKey(k))
				}
				fitsExactly(t, h.view(), size[0], size[1])
			}
		}
	}
}

func scrollKey(k string) tea.KeyPressMsg {
	switch k {
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	}
	return keyMsg(k)
}

// At 60×15 the token details do not fit; both countdowns and the state can
// be scrolled into sight (G, ↓, pgdn, the wheel), and g goes back.
func TestDetailsScrollsAt60x15(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.send(windowSize(60, 15))
	h.mustShow("Access token")
	h.mustNotShow("Refresh expires", "State ")
	h.press("G")
	h.mustShow("Refresh expires", "in 30:00", "State ", "valid")
	h.press("g")
	h.mustShow("Access token")
	for range 20 {
		h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	}
	h.mustShow("Access expires", "Refresh expires")
	h.press("g")
	for range 20 {
		h.press("down")
	}
	h.mustShow("Refresh expires")
	// Revealing the token at 100×30 pushes the rows down, not off for good.
	h.send(windowSize(100, 30))
	h.press("g", "v")
	h.press("G")
	h.mustShow("Access expires", "Refresh expires", "State ")
}

func sortedLabels(h *harness) string { return strings.Join(visibleLabels(h), ",") }

// The form scrolls to its focused field at 40×10.
func TestFormFollowsFocusWhenSmall(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.send(windowSize(40, 10))
	for h.m.form.focus != fieldScope {
		h.press("tab")
	}
	h.mustShow("› Scope")
	fitsExactly(t, h.view(), 40, 10)
}

// esc on the device code screen or the browser sign-in screen takes the
// form back scrolled to its "Cancelled" line, in sight at every size.
func TestSigninEscCancelledLineInSight(t *testing.T) {
	t.Parallel()
	for _, p := range []auth.Prompt{devicePrompt, browserPrompt} {
		for _, size := range [][2]int{{40, 10}, {60, 15}, {80, 24}} {
			h := deviceHarness(t, p, p.Grant, size[0], size[1])
			h.press("esc")
			if h.m.active != screenForm {
				t.Fatalf("%s at %v: esc went to %v", p.Grant, size, h.m.active)
			}
			h.mustShow("Cancelled: nothing was stored.")
			fitsExactly(t, h.view(), size[0], size[1])
		}
	}
}

// A failure of no field is said below the form, and the form scrolls to it.
func TestFormGeneralErrorInSight(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 10}, {60, 15}, {80, 24}} {
		h := newFormHarness(t, demoPrefill, func(f *fakeStore) { f.createErr = errors.New("secret backend locked") })
		h.send(windowSize(size[0], size[1]))
		h.press("enter")
		h.mustShow("secret backend locked")
		fitsExactly(t, h.view(), size[0], size[1])
	}
}
