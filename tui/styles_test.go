package tui

import (
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

func TestNoColorDropsColours(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	m := New(Options{Now: (&clock{t: t0}).Now})
	if !m.cfg.theme.NoColor {
		t.Fatal("NO_COLOR was not honoured")
	}
	s := m.c.styles
	for _, st := range []lipgloss.Style{s.Title, s.Error, s.OK, s.Warn, s.ClaimName, s.Secret} {
		if out := st.Render("x"); strings.Contains(out, "38;") || strings.Contains(out, "48;") {
			t.Fatalf("a colour escape with NO_COLOR: %q", out)
		}
	}
	if s.Good != nil || s.barColor(0.1) != nil {
		t.Fatal("progress colours with NO_COLOR")
	}
}

func TestProgressColourFollowsTimeLeft(t *testing.T) {
	t.Parallel()
	s := NewStyles(Theme{Dark: true})
	if s.barColor(0.9) != s.Good || s.barColor(0.3) != s.Fair || s.barColor(0.1) != s.Poor {
		t.Fatal("the bar must go green → yellow → red as expiry nears")
	}
	if s.Good == s.Poor {
		t.Fatal("good and poor colours are the same")
	}
	d := &details{c: &common{styles: s}}
	if !strings.Contains(d.bar(0.1, 10), "\x1b[") {
		t.Fatal("the coloured theme renders no colour")
	}
}

func TestPlainThemeHasNoEscapes(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	for _, k := range []string{"1", "2", "3", "n"} {
		h.press("esc", k)
		if strings.Contains(h.view(), "\x1b") {
			t.Fatalf("an escape sequence in the plain view of %v", h.m.active)
		}
	}
}

func TestBackgroundColourRebuildsStyles(t *testing.T) {
	t.Parallel()
	m := newModel(config{theme: Theme{Dark: true}, now: (&clock{t: t0}).Now})
	before := m.c.styles.Title.Render("x")
	m.handleBackground(false)
	if m.cfg.theme.Dark || m.c.styles.Title.Render("x") == before {
		t.Fatal("a light background did not change the styles")
	}
}
