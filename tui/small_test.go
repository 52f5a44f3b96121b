package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shipkey/shipkey/internal/text"
)

// harnessSmall is a model at width×height with enough keys that the table
// cannot show them all.
func harnessSmall(t *testing.T, width, height int) *harness {
	t.Helper()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		for i := range 12 {
			f.add(fmt.Sprintf("key-%02d", i), "ops", t0.Add(-time.Duration(i)*time.Hour))
		}
	})
	h.send(windowSize(width, height))
	return h
}

// At 60×15 and 40×10 every screen whose content goes on below the fold says
// so ("↓ more"); at the bottom the sign points up instead. Golden views pin
// each screen at both sizes.
func TestSmallScreensShowMore(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{60, 15}, {40, 10}} {
		for _, sc := range []struct {
			name string
			keys []string
		}{
			{"welcome", nil},
			{"form", []string{"n"}},
			{"details", []string{"1"}},
			{"keys", []string{"2"}},
			{"inspector", []string{"3"}},
		} {
			name := fmt.Sprintf("%dx%d_%s", size[0], size[1], sc.name)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				h := harnessSmall(t, size[0], size[1])
				h.press(sc.keys...)
				v := h.view()
				fitsExactly(t, v, size[0], size[1])
				if sc.name != "welcome" || size[1] == 10 {
					if !strings.Contains(v, moreBelow) {
						t.Fatalf("no %q sign:\n%s", moreBelow, v)
					}
				}
				golden.RequireEqual(t, []byte(v))
				if !strings.Contains(v, moreBelow) {
					return
				}
				if sc.name == "form" { // G would be text in a field: page down
					h.send(scrollKey("pgdown"))
					h.send(scrollKey("pgdown"))
				} else {
					h.send(scrollKey("G"))
				}
				if v := h.view(); !strings.Contains(v, moreAbove) || strings.Contains(v, moreBelow) {
					t.Fatalf("at the bottom: want %q and no %q:\n%s", moreAbove, moreBelow, v)
				}
			})
		}
	}
}

// The form lays out again on every resize: a field without focus shows its
// start (the Auth URL's scheme), at any width and after any resize.
func TestFormResizeKeepsTheScheme(t *testing.T) {
	t.Parallel()
	h := harnessSmall(t, 40, 10) // the form is filled in at 40 columns
	h.press("n")
	if h.m.form.focus == fieldAuthURL {
		t.Fatal("the test wants the focus off the Auth URL")
	}
	for _, size := range [][2]int{{40, 10}, {100, 30}, {60, 15}, {45, 12}, {120, 30}, {40, 10}} {
		h.send(windowSize(size[0], size[1]))
		v := h.view()
		var url string
		for _, l := range strings.Split(v, "\n") {
			if strings.Contains(l, "Auth URL") {
				url = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "Auth URL"))
			}
		}
		if !strings.HasPrefix(url, "http://127.0.0.1") {
			t.Fatalf("at %dx%d the Auth URL reads %q:\n%s", size[0], size[1], url, v)
		}
		if size[0] >= 60 && !strings.HasPrefix(url, "http://127.0.0.1:8080") {
			t.Fatalf("at %dx%d the Auth URL is cut: %q", size[0], size[1], url)
		}
	}
}

// A request that takes more than a second says so, with the seconds, and
// the note goes when the answer arrives. The commands are held back, so the
// request stays in flight while the clock moves.
func TestWaitingForTheServerAfterASecond(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	_, refresh := h.m.Update(keyMsg("r"))
	h.mustShow("refreshing…")
	h.clock.Advance(500 * time.Millisecond)
	h.m.Update(spinner.TickMsg{})
	h.mustNotShow("waiting for the server")
	h.clock.Advance(2500 * time.Millisecond)
	h.m.Update(spinner.TickMsg{})
	h.mustShow("refreshing… waiting for the server… (3s)")
	h.run(refresh)
	h.mustNotShow("waiting for the server")

	// The form's request too.
	f := newHarness(t, nil)
	f.press("n")
	for _, v := range []string{"http://127.0.0.1:8080", "master", "shipping-api", "secret", "demo", "pw", "mine"} {
		f.m.form.inputs[f.m.form.focus].SetValue(v)
		f.press("tab")
	}
	f.m.Update(keyMsg("ctrl+s"))
	f.clock.Advance(2 * time.Second)
	f.m.Update(spinner.TickMsg{})
	f.mustShow("Requesting a token… waiting for the server… (2s)")
}

// At 60×15 the log-out question scrolls into sight.
func TestLogoutQuestionInSightWhenSmall(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.send(windowSize(60, 15))
	h.press("X")
	h.mustShow("(y/n)")
}

// A message too long for the status line wraps over the body's last lines;
// what it covers is still said to be there ("↓ more" on the last line kept),
// and nothing is marked when it covers only blank lines.
func TestWrappedToastKeepsMoreInSight(t *testing.T) {
	t.Parallel()
	h := harnessSmall(t, 40, 10)
	h.press("1")
	h.m.toast, h.m.toastOK = text.Trusted("Copied the access token to the terminal clipboard (OSC 52); clears in 30s"), true
	v := h.view()
	fitsExactly(t, v, 40, 10)
	if !strings.Contains(v, "clears in 30s") || !strings.Contains(v, moreBelow) {
		t.Fatalf("want the whole toast and %q:\n%s", moreBelow, v)
	}

	blank := cutBody("one\ntwo\n\n", 20, 2, lipgloss.NewStyle())
	if strings.Contains(blank, moreBelow) {
		t.Fatalf("blank lines cut, yet marked:\n%s", blank)
	}
}
