package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// bigToken is a JWT of just under size bytes (a long claim pads it).
func bigToken(size int) string {
	return fakeJWT(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{
		"iss": "https://sso.elsewhere.example/realms/shipping", "sub": "user-1", "exp": t0.Add(time.Hour).Unix(),
		"pad": strings.Repeat("x", size*3/4-300),
	})
}

// A 64 KiB token pasted into the inspector is taken in work linear in its
// size: as one bracketed paste, and as a key press a character (a terminal
// or tmux without bracketed paste), where Bubble Tea renders after every
// message: the characters typed share one redraw, the field handles each
// byte a bounded number of times, and the token is decoded once, on enter.
func TestPasteOf64KiBIsLinear(t *testing.T) {
	t.Parallel()
	tok := bigToken(64 << 10)
	if len(tok) > maxPaste || len(tok) < 63<<10 {
		t.Fatalf("the token is %d bytes", len(tok))
	}
	for _, how := range []string{"bracketed", "keys"} {
		h := newHarness(t, nil) // no keys: 3 opens the paste field
		h.send(windowSize(80, 24))
		h.press("esc", "3")
		if h.m.active != screenInspector || h.m.inspector.mode != inspectPasting {
			t.Fatalf("%s: 3 opened %v", how, h.m.active)
		}
		h.m.View()
		renders, work := h.m.renders, h.m.inspector.paste.work
		if how == "bracketed" {
			h.send(tea.PasteMsg{Content: tok})
			h.m.View()
		} else {
			for _, r := range tok {
				_, cmd := h.m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
				h.run(cmd)
				h.m.View() // as Bubble Tea does after every message
			}
		}
		if got := h.m.inspector.paste.Value(); got != tok {
			t.Fatalf("%s: the field holds %d bytes, want %d", how, len(got), len(tok))
		}
		if n := h.m.renders - renders; n > 2 {
			t.Errorf("%s: %d frames rendered while %d bytes arrived, want at most 2", how, n, len(tok))
		}
		if n := h.m.inspector.paste.work - work; n > 2*len(tok)+4096 {
			t.Errorf("%s: the field handled %d bytes for %d pasted: not linear", how, n, len(tok))
		}
		fire[typedRedrawMsg](h)
		h.mustShow("token › …", fmt.Sprintf("(%d bytes)", len(tok)))
		if h.m.inspector.decodes != 0 {
			t.Errorf("%s: %d decodes before enter", how, h.m.inspector.decodes)
		}
		h.press("enter")
		h.mustShow("Pasted token", "payload", "sso.elsewhere.example")
		if h.m.inspector.decodes != 1 {
			t.Errorf("%s: %d decodes for one paste, want 1", how, h.m.inspector.decodes)
		}
	}
}

// Typing by hand still shows each character: the first at once, the rest
// with the redraw that follows within a frame.
func TestPasteFieldShowsTypedText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.press("esc", "3")
	h.typeText("abc")
	fire[typedRedrawMsg](h)
	h.mustShow("token › abc")
	h.press("backspace")
	h.mustShow("token › ab")
	h.press("ctrl+u")
	h.mustShow("paste a JWT")
}
