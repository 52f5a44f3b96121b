package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// requireFits fails when a line of the view is wider than width cells, when
// the view is not exactly height lines, or when a line was cut short to fit
// (fitBlock's "…" at the very edge means the content did not fit).
func requireFits(t *testing.T, v string, width, height int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != height {
		t.Errorf("%d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		w := ansi.StringWidth(l)
		if w > width {
			t.Errorf("line %d is %d cells wide (> %d): %q", i+1, w, width, l)
		}
		if w == width && strings.HasSuffix(ansi.Strip(l), "…") {
			t.Errorf("line %d was cut to fit: %q", i+1, l)
		}
	}
}

// harness80 is a model at 80×24 with two keys, one with a long realm URL.
func harness80(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		k := f.add("shipping-prod", "ops-automation", t0.Add(-3*time.Hour))
		k.Connection.AuthURL = "https://auth.shipping-service.example.com"
		k.Connection.Realm = "shipping-production"
		f.keys["shipping-prod"] = k
	})
	h.send(windowSize(80, 24))
	return h
}

func TestWelcomeAt80x24(t *testing.T) {
	t.Parallel()
	h := harness80(t)
	h.mustShow("Default key", "demo", "? help")
	requireFits(t, h.view(), 80, 24)
	golden.RequireEqual(t, []byte(h.view()))
}

func TestKeyListAt80x24(t *testing.T) {
	t.Parallel()
	h := harness80(t)
	h.press("2")
	h.mustShow("demo", "shipping-prod", "Last Used", "3 h ago", "? help")
	requireFits(t, h.view(), 80, 24)
	golden.RequireEqual(t, []byte(h.view()))
}

func TestDetailsAt80x24(t *testing.T) {
	t.Parallel()
	h := harness80(t)
	h.press("1")
	h.mustShow("Access expires", "Refresh expires", "State", "Server", "accepts this token", "? help")
	requireFits(t, h.view(), 80, 24)
	golden.RequireEqual(t, []byte(h.view()))
}

// A long realm URL and the server's "no longer accepts" line wrap inside
// 80 columns instead of running off the edge.
func TestDetailsLongLinesAt80x24(t *testing.T) {
	t.Parallel()
	h := harness80(t)
	h.st.live = inactive
	h.press("2", "down", "enter")
	if h.m.details.key.Label != "shipping-prod" {
		t.Fatalf("opened %q", h.m.details.key.Label)
	}
	h.mustShow("shipping-prod  ops-automation @\n", "https://auth.shipping-service.example.com/auth/realms/shipping-production",
		"client shipping-api", "session ended — log in again (l)", "the server ended this session (introspection)")
	requireFits(t, h.view(), 80, 24)
	golden.RequireEqual(t, []byte(h.view()))
}
