package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/store"
)

// fakeUnlocker is a store's unlock as the app sees it: what it asks, and
// the passphrases it was given.
type fakeUnlocker struct {
	ask    store.UnlockAsk
	askErr error
	right  string // the passphrase that unlocks an existing key file
	given  []string
	st     *fakeStore
	t      *testing.T
}

func (u *fakeUnlocker) UnlockAsks() (store.UnlockAsk, string, error) {
	return u.ask, "~/.local/state/shipkey/secrets.key.age", u.askErr
}

func (u *fakeUnlocker) UnlockWith(pass string) error {
	if u.st.lastNew.Label != "" {
		u.t.Error("the request was sent before the unlock")
	}
	u.given = append(u.given, pass)
	if u.ask == store.AskPassphrase && pass != u.right {
		return errors.New("wrong passphrase for ~/.local/state/shipkey/secrets.key.age")
	}
	u.ask = store.AskNothing
	return nil
}

func unlockHarness(t *testing.T, ask store.UnlockAsk) (*harness, *fakeUnlocker) {
	u := &fakeUnlocker{ask: ask, right: "open sesame", t: t}
	h := newFormHarness(t, demoPrefill, nil)
	h.m.cfg.unlock = u
	u.st = h.st
	return h, u
}

// An app started locked on a store with no key file asks the new
// passphrase inside the app, in a masked field, twice: an empty one and a
// mismatch are said under the field and asked again; the passphrase is
// never on screen; once both match the store is unlocked with it and the
// request goes on. A second key asks nothing.
func TestNewStorePassphraseAskedInTheApp(t *testing.T) {
	t.Parallel()
	h, u := unlockHarness(t, store.AskNewPassphrase)
	h.press("ctrl+s")
	h.mustShow("A new passphrase for the secrets file", "New passphrase", "secrets.key.age")
	if h.st.lastNew.Label != "" {
		t.Fatal("the request was sent before the passphrase")
	}
	h.press("enter")
	h.mustShow("the passphrase is empty")
	h.clock.Advance(5 * time.Second)
	h.typeText("correct horse")
	h.mustNotShow("correct horse")
	h.mustShow("•••")
	if !h.m.form.wait.since.IsZero() {
		t.Error("typing the passphrase counts as waiting for the server")
	}
	h.press("enter")
	h.mustShow("Repeat passphrase")
	h.typeText("correct hoarse")
	h.press("enter")
	h.mustShow("the passphrases do not match", "New passphrase")
	h.mustNotShow("correct h")
	h.typeText("correct horse")
	h.press("enter")
	h.typeText("correct horse")
	h.press("enter")
	if strings.Join(u.given, ",") != "correct horse" {
		t.Fatalf("unlocked with %q", u.given)
	}
	if h.st.lastNew.Label != "demo" {
		t.Fatalf("after the unlock the request was not sent: %q", h.st.lastNew.Label)
	}
	h.mustNotShow("correct horse")
	h.press("esc")
	h.press("n")
	h.press("ctrl+s")
	if len(u.given) != 1 {
		t.Fatalf("unlocked again for a second key: %q", u.given)
	}
}

// esc on the passphrase field sends nothing and says on the form that no
// secrets file was made; an existing key file's wrong passphrase is said
// under the field, which stays open for another try.
func TestUnlockFieldCancelAndWrongPassphrase(t *testing.T) {
	t.Parallel()
	h, u := unlockHarness(t, store.AskNewPassphrase)
	h.press("ctrl+s")
	h.press("esc")
	if h.m.active != screenForm || h.m.unlock.isOpen() || h.st.lastNew.Label != "" || len(u.given) != 0 {
		t.Fatalf("esc: screen %v, field open %v, request for %q, unlocked with %q", h.m.active, h.m.unlock.isOpen(), h.st.lastNew.Label, u.given)
	}
	h.mustShow("no secrets file was made: no passphrase was given")

	h, u = unlockHarness(t, store.AskPassphrase)
	h.press("ctrl+s")
	h.mustShow("The secrets file is locked", "Passphrase")
	h.typeText("guess")
	h.press("enter")
	h.mustShow("wrong passphrase for")
	h.mustNotShow("guess")
	if !h.m.unlock.isOpen() || h.st.lastNew.Label != "" {
		t.Fatal("a wrong passphrase closed the field or sent the request")
	}
	h.typeText("open sesame")
	h.press("enter")
	if h.st.lastNew.Label != "demo" || strings.Join(u.given, ",") != "guess,open sesame" {
		t.Fatalf("request for %q after unlocks with %q", h.st.lastNew.Label, u.given)
	}
}

// A store that asks nothing (a keyring, SHIPKEY_PASSPHRASE, a session)
// unlocks at once; one that cannot say what it asks fails the request
// with its words on the form.
func TestUnlockThatAsksNothing(t *testing.T) {
	t.Parallel()
	h, u := unlockHarness(t, store.AskNothing)
	h.press("ctrl+s")
	if h.m.unlock.isOpen() || len(u.given) != 1 || u.given[0] != "" || h.st.lastNew.Label != "demo" {
		t.Fatalf("field open %v, unlocks %q, request for %q", h.m.unlock.isOpen(), u.given, h.st.lastNew.Label)
	}
	h, u = unlockHarness(t, store.AskNothing)
	u.askErr = errors.New("the secrets file is damaged")
	h.press("ctrl+s")
	h.mustShow("the secrets file is damaged")
	if h.st.lastNew.Label != "" {
		t.Fatal("the request was sent after a failed unlock")
	}
}

// The passphrase field, its error and the why fit exactly down to 40×10,
// the field and the warning that a lost passphrase is lost in sight.
func TestUnlockFieldFitsDownTo40x10(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 10}, {60, 15}, {80, 24}} {
		h, _ := unlockHarness(t, store.AskNewPassphrase)
		h.send(windowSize(size[0], size[1]))
		h.press("ctrl+s")
		h.typeText("one")
		h.press("enter")
		h.typeText("two")
		h.press("enter")
		fitsExactly(t, h.view(), size[0], size[1])
		h.mustShow("New passphrase", "do not match", "lost passphrase cannot be recovered")
	}
}

// A pasted passphrase is taken as the terminal prompt takes it, its first
// line: a copied line's trailing newline (or CRLF) is not kept. Before, the
// field made it a space, so a store made in the app with "correct horse\n"
// pasted twice had the passphrase "correct horse " and never opened at the
// plain prompt, where the same paste gives "correct horse".
func TestPastedPassphraseIsItsFirstLine(t *testing.T) {
	t.Parallel()
	h, u := unlockHarness(t, store.AskNewPassphrase)
	h.press("ctrl+s")
	h.mustShow("New passphrase")
	h.send(tea.PasteMsg{Content: "correct horse\n"})
	h.press("enter")
	h.mustShow("Repeat passphrase")
	h.send(tea.PasteMsg{Content: "correct horse\r\nsecond line"})
	h.press("enter")
	if strings.Join(u.given, ",") != "correct horse" {
		t.Fatalf("unlocked with %q, want the pasted line alone", u.given)
	}
}
