package tui

import (
	"errors"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// An app started locked (a store with no key) unlocks before the first new
// key's request, with the terminal released: a failed unlock sends nothing
// and says why on the form; once unlocked, it is not asked again.
func TestFirstKeyUnlocksBeforeItsRequest(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	unlocks := 0
	fail := true
	h.m.cfg.exec = func(c tea.ExecCommand, fn tea.ExecCallback) tea.Cmd { return func() tea.Msg { return fn(c.Run()) } }
	h.m.cfg.unlock = func() error {
		unlocks++
		if h.st.lastNew.Label != "" {
			t.Error("the request was sent before the unlock")
		}
		if fail {
			return errors.New("the secrets file stays locked: no passphrase was given")
		}
		return nil
	}
	h.press("ctrl+s")
	if unlocks != 1 || h.st.lastNew.Label != "" {
		t.Fatalf("after a failed unlock: %d unlocks, request sent for %q", unlocks, h.st.lastNew.Label)
	}
	h.mustShow("stays locked")
	if h.m.active != screenForm {
		t.Fatalf("a failed unlock left the form: %v", h.m.active)
	}

	fail = false
	h.press("ctrl+s")
	if unlocks != 2 || h.st.lastNew.Label != "demo" {
		t.Fatalf("after the unlock: %d unlocks, request sent for %q", unlocks, h.st.lastNew.Label)
	}
	h.press("esc")
	h.press("n")
	h.press("ctrl+s")
	if unlocks != 2 {
		t.Fatalf("unlocked again for a second key: %d unlocks", unlocks)
	}
}
