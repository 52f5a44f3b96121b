package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
)

func TestWelcomeShowsDefaultKeyAndMenu(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", t0.Add(-3*time.Minute))
		f.add("ci-bot", "bot", time.Time{})
	})
	if h.m.active != screenWelcome {
		t.Fatalf("active = %v, want Welcome", h.m.active)
	}
	h.mustShow("shipkey", "Default key", "demo", "valid for 5:00", "Get API Key", "API keys", "Inspect a token", "Help", "Quit")
	golden.RequireEqual(t, []byte(h.view()))
}

func TestWelcomeStates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.clock.Advance(5 * time.Minute) // access expired, refresh alive
	fire[tickMsg](h)
	h.mustShow("refresh expires in 25:00")
	h.clock.Advance(30 * time.Minute)
	fire[tickMsg](h)
	h.mustShow("login needed")
}

func TestWelcomeWithoutKeysLeadsToGetAPIKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if h.m.active != screenForm {
		t.Fatalf("active = %v, want the Get API Key form", h.m.active)
	}
	// Going back shows the welcome screen, which does not bounce again.
	h.press("esc")
	if h.m.active != screenWelcome {
		t.Fatalf("after esc active = %v, want Welcome", h.m.active)
	}
	h.mustShow("No API keys yet")
}

func TestWelcomeMenuNavigation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		keys []string
		want func(*Model) bool
	}{
		{[]string{"enter"}, func(m *Model) bool { return m.active == screenForm }},
		{[]string{"down", "enter"}, func(m *Model) bool { return m.active == screenKeys }},
		{[]string{"j", "j", "enter"}, func(m *Model) bool { return m.active == screenInspector && m.inspector.Capturing() }},
		{[]string{"up", "up", "enter"}, func(m *Model) bool { return m.showHelp }},
		{[]string{"up", "enter"}, func(m *Model) bool { return m.quitting }},
	}
	for _, c := range cases {
		h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
		h.press(c.keys...)
		if !c.want(h.m) {
			t.Errorf("keys %v: active %v, help %v, quitting %v", c.keys, h.m.active, h.m.showHelp, h.m.quitting)
		}
	}
}

func TestGlobalKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("1")
	if h.m.active != screenDetails || h.m.details.key.Label != "demo" {
		t.Fatalf("1 opened %v (%q), want token details of demo", h.m.active, h.m.details.key.Label)
	}
	h.press("2")
	if h.m.active != screenKeys {
		t.Fatalf("2 opened %v", h.m.active)
	}
	h.press("3")
	if h.m.active != screenInspector || h.m.inspector.source != "key demo" {
		t.Fatalf("3 opened %v (%q)", h.m.active, h.m.inspector.source)
	}
	h.press("n")
	if h.m.active != screenForm {
		t.Fatalf("n opened %v", h.m.active)
	}
	// In a text field, q and digits are text.
	h.press("q", "1")
	if h.m.quitting || h.m.active != screenForm {
		t.Fatal("q in a text field must type, not quit")
	}
	if v := h.m.form.inputs[h.m.form.focus].Value(); !strings.HasSuffix(v, "q1") {
		t.Fatalf("focused field = %q, want it to end in q1", v)
	}
	h.press("ctrl+c")
	if !h.m.quitting {
		t.Fatal("ctrl+c must quit from a text field")
	}
}

func TestHelpToggle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("1", "?")
	if !h.m.showHelp {
		t.Fatal("? did not open the help")
	}
	h.mustShow("copy header", "auto-refresh", "log out", "token details", "API keys", "inspector", "get API key")
	golden.RequireEqual(t, []byte(h.view()))
	h.press("?")
	if h.m.showHelp {
		t.Fatal("? did not close the help")
	}
}

func TestShortHelpOnEveryScreen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	for _, k := range []string{"1", "2", "3", "n"} {
		h.press("esc") // leave text fields
		h.press(k)
		lines := strings.Split(h.view(), "\n")
		foot := lines[len(lines)-1]
		if !strings.Contains(foot, "•") {
			t.Fatalf("screen %v has no short help: %q", h.m.active, foot)
		}
	}
}

func TestEveryScreenFitsSmallTerminals(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{100, 30}, {80, 24}, {59, 20}, {40, 12}, {20, 6}} {
		h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
		h.send(windowSize(size[0], size[1]))
		for _, k := range []string{"1", "2", "3", "esc", "n"} {
			h.press(k)
			v := h.view()
			lines := strings.Split(v, "\n")
			if len(lines) != size[1] {
				t.Fatalf("%dx%d %v: %d lines", size[0], size[1], h.m.active, len(lines))
			}
			for _, l := range lines {
				if w := lipglossWidth(l); w > size[0] {
					t.Fatalf("%dx%d %v: line of %d cells: %q", size[0], size[1], h.m.active, w, l)
				}
			}
			h.press("esc")
		}
	}
}

// Welcome shows the key opened last, not the one it showed at start.
func TestWelcomeShowsTheKeyOpenedLast(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		f.add("staging", "stage", time.Time{})
	})
	h.mustShow("Default key", "demo")
	if err := h.m.openDetails("staging"); err == nil {
		t.Fatal("opening staging did nothing")
	}
	h.m.active = screenWelcome
	h.mustShow("Current key", "staging")
	h.mustNotShow("Default key")
}
