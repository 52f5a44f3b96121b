package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
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
		for _, keys := range [][]string{{"esc"}, {"n"}, {"1"}, {"1", "v"}, {"1", "l"}, {"2"}, {"2", "/"}, {"2", "d"}, {"3"}, {"?"}} {
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

// The state is one verdict by the lifecycle policy: inside the margin it
// is "refreshing soon" beside a running countdown, never "expired".
func TestDetailsOneVerdict(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("a") // auto-refresh off: the token is left to age
	h.clock.Advance(5*time.Minute - 10*time.Second)
	fire[tickMsg](h)
	h.mustShow("in 0:10", "State               refreshing soon")
	h.mustNotShow("expired")
	h.clock.Advance(10 * time.Second)
	fire[tickMsg](h)
	h.mustShow("State               expired — refresh with r")
	h.mustNotShow("in 0:")
	// The refresh in flight is its own verdict.
	act, _ := h.m.details.Update(keyMsg("r"))
	if _, ok := act.(actRefresh); !ok {
		t.Fatalf("r returned %#v", act)
	}
	h.mustShow("refreshing…")
	h.mustNotShow("refreshing soon", "expired —")
}

// The log-in-again prompt stays open on a wrong password, with the error
// under it; what is typed next is text, never a key binding.
func TestLoginPromptSurvivesWrongPassword(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		f.loginErr = &auth.Error{Kind: auth.KindInvalidCredentials, Msg: "invalid user credentials"}
	})
	h.press("l")
	h.typeText("wrong")
	h.press("enter")
	if !h.m.details.prompt || h.m.details.state != detailsPassword || !h.m.details.Capturing() {
		t.Fatalf("the prompt closed: state %v", h.m.details.state)
	}
	h.mustShow("Password", "wrong password — try again")
	if h.m.details.password.Value() != "" {
		t.Fatal("the wrong password is still in the field")
	}
	// Retyping: "X" (log out), "q" (quit), "r" are text now.
	h.st.mu.Lock()
	h.st.loginErr = nil
	h.st.mu.Unlock()
	h.typeText("Xqr2")
	if h.m.quitting || contains(h.st.Calls(), "logout demo") || contains(h.st.Calls(), "refresh demo") {
		t.Fatalf("a retyped password fired bindings: %v", h.st.Calls())
	}
	h.press("enter")
	if h.m.details.prompt || count(h.st.Calls(), "login demo") != 2 {
		t.Fatalf("second try: prompt %v, calls %v", h.m.details.prompt, h.st.Calls())
	}
}

// Keys typed while the prompt's login is in flight are swallowed.
func TestLoginPromptSwallowsKeysInFlight(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("l")
	h.typeText("pw")
	act, _ := h.m.details.Update(keyMsg("enter"))
	if _, ok := act.(actLogin); !ok || !h.m.details.Capturing() {
		t.Fatalf("enter returned %#v, capturing %v", act, h.m.details.Capturing())
	}
	h.press("X", "q")
	if h.m.quitting || contains(h.st.Calls(), "logout demo") {
		t.Fatal("a key acted while the login was in flight")
	}
}

func sortedLabels(h *harness) string { return strings.Join(visibleLabels(h), ",") }

// Sort by any column; the same column again reverses; labels compare
// without case; g/G go to the ends.
func TestKeyListSortByAnyColumn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("beta", "u", t0.Add(-time.Hour))
		f.add("Alpha", "u", t0.Add(-time.Minute))
		f.add("gamma", "u", time.Time{})
		k := f.keys["gamma"]
		k.Token.AccessExpiresAt = t0.Add(time.Minute)
		k.Token.JWTExpiresAt = time.Time{}
		f.keys["gamma"] = k
	})
	h.press("2")
	if got := sortedLabels(h); got != "Alpha,beta,gamma" {
		t.Fatalf("by label (case-insensitive): %s", got)
	}
	h.press("L")
	if got := sortedLabels(h); got != "gamma,beta,Alpha" {
		t.Fatalf("label again reverses: %s", got)
	}
	h.press("U")
	if got := sortedLabels(h); got != "Alpha,beta,gamma" {
		t.Fatalf("by last used, most recent first, never last: %s", got)
	}
	h.press("U")
	if got := sortedLabels(h); got != "gamma,beta,Alpha" {
		t.Fatalf("last used reversed: %s", got)
	}
	h.press("A")
	if got := sortedLabels(h); !strings.HasPrefix(got, "gamma,") {
		t.Fatalf("by access expiry, soonest first: %s", got)
	}
	h.mustShow("sorted by access expires ▲", "Access expires ▲")
	h.press("A")
	h.mustShow("Access expires ▼")
	h.press("K", "R")
	h.press("G")
	if h.m.keyList.cursor != 2 {
		t.Fatalf("G: cursor %d", h.m.keyList.cursor)
	}
	h.press("g")
	if h.m.keyList.cursor != 0 {
		t.Fatalf("g: cursor %d", h.m.keyList.cursor)
	}
}

// Opening the table selects the key just viewed.
func TestKeyListSelectsTheKeyJustViewed(t *testing.T) {
	t.Parallel()
	h := harness80(t)
	h.press("2", "G", "enter")
	if h.m.details.key.Label != "shipping-prod" {
		t.Fatalf("opened %q", h.m.details.key.Label)
	}
	h.press("esc", "g", "1")
	h.press("2")
	if sel := h.m.keyList.selected(); sel == nil || sel.Label != "shipping-prod" {
		t.Fatalf("selected %v, want the key just viewed", sel)
	}
}

// The filter narrows the last result when the query grows and starts over
// when it shrinks; matching ignores case.
func TestKeyListFilterIncremental(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		for i := range 30 {
			f.add(fmt.Sprintf("Key-%02d", i), "u", time.Time{})
		}
	})
	h.press("2", "/")
	want := 0
	for i := range 30 {
		if matches(fmt.Sprintf("key-%02d", i), "key-1") {
			want++
		}
	}
	h.typeText("KEY-1")
	if n := len(h.m.keyList.visible); n != want || want == 30 {
		t.Fatalf("KEY-1: %d rows, want %d", n, want)
	}
	h.press("backspace")
	if n := len(h.m.keyList.visible); n != 30 {
		t.Fatalf("after backspace: %d rows", n)
	}
}

// Changes by other shipkey processes show within a tick, and nothing is
// read when nothing changed.
func TestLiveReloadOnStamp(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.st.mu.Lock()
	before := h.st.keysCalls
	h.st.mu.Unlock()
	for range 3 {
		fire[tickMsg](h)
	}
	h.st.mu.Lock()
	if h.st.keysCalls != before || h.st.stampCalls < 3 {
		t.Fatalf("idle ticks read the keys %d times (stamp %d)", h.st.keysCalls-before, h.st.stampCalls)
	}
	h.st.mu.Unlock()
	h.st.add("from-the-cli", "u", time.Time{}) // another process
	fire[tickMsg](h)
	h.mustShow("from-the-cli", "4 of 4 keys")
	h.st.mu.Lock()
	delete(h.st.keys, "ci-bot")
	h.st.writes++
	h.st.mu.Unlock()
	fire[tickMsg](h)
	h.mustNotShow("ci-bot")
}

// The shown key's tokens follow a refresh or logout by another process.
func TestLiveReloadDetails(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	old := h.m.details.tokens.AccessToken
	h.clock.Advance(time.Minute)
	h.st.mu.Lock()
	h.st.renew("demo")
	h.st.writes++
	h.st.mu.Unlock()
	fire[tickMsg](h)
	if h.m.details.tokens.AccessToken == old {
		t.Fatal("the details kept the old token after another process refreshed it")
	}
	h.mustShow("in 5:00")
}

// One key-list read per action.
func TestOneKeyListLoadPerAction(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	for _, keys := range [][]string{{"c"}, {"r"}, {"2", "*"}} {
		h.st.mu.Lock()
		before := h.st.keysCalls
		h.st.mu.Unlock()
		h.press(keys...)
		fire[tickMsg](h) // the stamp changed by our own write: no second read
		h.st.mu.Lock()
		n := h.st.keysCalls - before
		h.st.mu.Unlock()
		if n != 1 {
			t.Fatalf("%v read the key list %d times", keys, n)
		}
	}
}

// The advanced connection options: folded, then token URL and HTTP Basic.
func TestFormAdvancedOptions(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.mustNotShow("Token URL", "Issuer")
	h.mustShow("Advanced")
	for h.m.form.focus != fieldAdvanced {
		h.press("tab")
	}
	h.press(" ")
	h.mustShow("Token URL", "Issuer", "HTTP Basic auth")
	h.press("tab")
	h.typeText("http://127.0.0.1:9/token")
	h.press("tab", "tab", " ")
	h.press("enter")
	calls := h.st.Calls()
	if !contains(calls, "create demo") {
		t.Fatalf("no create: %v", calls)
	}
	k := h.st.keys["demo"]
	if k.Connection.TokenURL != "http://127.0.0.1:9/token" || k.Connection.AuthMethod() != auth.ClientSecretBasic {
		t.Fatalf("conn = %+v", k.Connection)
	}
}

func TestFormTokenURLAndIssuerExclude(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{TokenURL: "http://127.0.0.1:9/t", Issuer: "http://127.0.0.1:9/i"}, nil)
	h.mustShow("Token URL", "Issuer")
	h.press("enter")
	if h.m.form.errs[fieldIssuer] == "" || h.m.form.errs[fieldAuthURL] != "" {
		t.Fatalf("errs = %q", h.m.form.errs)
	}
}

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

// The inspector: its top lines indent by 2, an HS256 token says what is
// known, and relative times tick.
func TestInspectorCosmetics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.send(windowSize(80, 24))
	hs := fakeJWT(map[string]any{"alg": "HS256", "typ": "JWT"}, map[string]any{"exp": t0.Add(5 * time.Minute).Unix(), "a_rather_long_custom_claim_name_here": "x"})
	h.m.cfg.verifier = fakeVerifier{auth.Verification{State: auth.SigNotChecked, Reason: "HMAC-signed (HS256): a client cannot check it"}}
	h.press("3")
	h.send(tea.PasteMsg{Content: hs})
	h.press("enter")
	lines := strings.Split(h.view(), "\n")
	if !strings.HasPrefix(lines[2], "  Source: ") || !strings.HasPrefix(lines[3], "  Pasted token: ") {
		t.Fatalf("top lines not indented:\n%s", h.view())
	}
	h.mustShow("HMAC-signed (HS256): a client cannot check it")
	h.mustNotShow("realm's secret")
	// The claim-name column is at most a quarter of the width.
	for _, l := range lines {
		if strings.Contains(l, "exp ") && strings.Index(l, "2026") > 6+80/4+2 {
			t.Fatalf("claim column too wide: %q", l)
		}
	}
	h.mustShow("expires in 5m")
	h.clock.Advance(2 * time.Minute)
	fire[tickMsg](h)
	h.mustShow("expires in 3m", "(in 3m)")
}

// Liveness "cannot tell" is shown as such and blocks nothing.
func TestCannotTellBlocksNothing(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) { f.liveErr = errors.New("network down") })
	h.mustShow("cannot tell: network down")
	h.press("r")
	if !contains(h.st.Calls(), "refresh demo") {
		t.Fatal("cannot tell blocked r")
	}
}

// A refresh refused with invalid_grant (store.ErrLoginNeeded) ends the
// session: the one verdict is "session ended".
func TestRefreshRefusedEndsSession(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) { f.refreshErr = fmt.Errorf("refresh: %w", store.ErrLoginNeeded) })
	h.press("r")
	h.mustShow("State               session ended — log in again (l)")
}
