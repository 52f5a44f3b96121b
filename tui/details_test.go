package tui

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// openDemoDetails returns a harness showing the token details of "demo".
func openDemoDetails(t *testing.T, setup func(*fakeStore)) *harness {
	t.Helper()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		if setup != nil {
			setup(f)
		}
	})
	h.press("1")
	if h.m.active != screenDetails || h.m.details.tokens == nil {
		t.Fatalf("active %v, tokens %v", h.m.active, h.m.details.tokens != nil)
	}
	return h
}

func TestDetailsShowsEveryField(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.mustShow("Access token", text.Mask(h.m.details.tokens.AccessToken), "Token type", "Bearer",
		"Scope", "email profile", "Session state", "5f3c-session", "Not-before policy", "Obtained at", "2026-11-21 12:00:00 UTC",
		"Access expires", "2026-11-21 12:05:00 UTC", "in 5:00", "Refresh expires", "2026-11-21 12:30:00 UTC", "in 30:00",
		"valid", "auto-refresh on for this key", "█")
	h.mustNotShow(h.m.details.tokens.AccessToken)
	golden.RequireEqual(t, []byte(h.view()))
}

func TestDetailsCountdownMovesWithTheTick(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.mustShow("in 5:00", "in 30:00")
	h.clock.Advance(time.Second)
	if n := fire[tickMsg](h); n != 1 {
		t.Fatalf("%d ticks pending, want exactly one", n)
	}
	h.mustShow("in 4:59", "in 29:59")
	// The next tick is scheduled, and only one.
	if n := fire[tickMsg](h); n != 1 {
		t.Fatalf("%d ticks pending after a tick, want one", n)
	}
}

func TestTickStopsOffCountdownScreens(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("n") // the form has no countdowns
	if n := fire[tickMsg](h); n != 1 {
		t.Fatalf("%d ticks pending", n)
	}
	if n := fire[tickMsg](h); n != 0 || h.m.ticking {
		t.Fatalf("the tick kept running on the form (%d pending)", n)
	}
	h.press("esc")
	if n := fire[tickMsg](h); n != 1 {
		t.Fatalf("back on details: %d ticks pending, want one", n)
	}
}

func TestDetailsProgressBarsDropBelow60Columns(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.send(windowSize(50, 20))
	v := h.view()
	if strings.Contains(v, "█") || strings.Contains(v, "░") {
		t.Fatalf("progress bars at 50 columns:\n%s", v)
	}
	for _, l := range strings.Split(v, "\n") {
		if w := len([]rune(l)); w > 50 {
			t.Fatalf("line wider than 50: %q", l)
		}
	}
	if n := strings.Count(v, "\n") + 1; n != 20 {
		t.Fatalf("%d lines, want 20", n)
	}
}

func TestDetailsRevealToggle(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	tok := h.m.details.tokens.AccessToken
	h.press("v")
	if !strings.Contains(strings.ReplaceAll(flatten(h.view()), " ", ""), tok) {
		t.Fatalf("revealed view lacks the token:\n%s", h.view())
	}
	h.press("v")
	h.mustNotShow(tok[:40])
}

// flatten joins the lines of the token as wrapped by the details view.
func flatten(v string) string {
	var b strings.Builder
	for _, l := range strings.Split(v, "\n") {
		b.WriteString(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "Access token")))
	}
	return b.String()
}

func TestDetailsCopyTokenAndHeader(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	tok := h.m.details.tokens.AccessToken
	h.press("c")
	if len(h.clipboard) != 1 || h.clipboard[0] != tok {
		t.Fatalf("OSC 52 writes = %d, want the token", len(h.clipboard))
	}
	if len(h.native) != 1 || h.native[0] != tok {
		t.Fatal("the native clipboard did not get the token")
	}
	if !contains(h.st.Calls(), "markused demo") {
		t.Fatalf("copy did not mark the key used: %v", h.st.Calls())
	}
	h.mustShow("Copied the access token to the terminal clipboard (OSC 52) and system clipboard; clears in 30s")
	h.press("C")
	if got := h.clipboard[len(h.clipboard)-1]; got != "Authorization: Bearer "+tok {
		t.Fatal("C did not copy the Authorization header")
	}
	// Two clear timers: the first is stale (something newer was copied).
	if n := fire[clipClearMsg](h); n != 2 {
		t.Fatalf("%d clear timers, want 2", n)
	}
	if got := h.clipboard[len(h.clipboard)-1]; got != clipCleared || len(h.clipboard) != 3 {
		t.Fatalf("clipboard writes %d, last %q: want one clear", len(h.clipboard), got)
	}
	if h.nativeCur != "" {
		t.Fatal("the native clipboard still holds the header")
	}
}

func TestClipboardClearLeavesOthersCopy(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("c")
	h.nativeCur = "something the user copied since"
	fire[clipClearMsg](h)
	if h.nativeCur != "something the user copied since" {
		t.Fatal("shipkey cleared a clipboard that no longer held its token")
	}
}

func TestClipboardNeverClearedWhenSettingIsZero(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) { f.settings.ClipboardClear = 0 })
	h.press("c")
	if n := fire[clipClearMsg](h); n != 0 {
		t.Fatalf("%d clear timers with clipboard_clear = 0", n)
	}
	h.mustShow("not cleared")
}

func TestDetailsRefreshNow(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	old := h.m.details.tokens.AccessToken
	h.clock.Advance(time.Minute)
	h.press("r")
	if !contains(h.st.Calls(), "refresh demo") {
		t.Fatalf("r did not refresh: %v", h.st.Calls())
	}
	if h.m.details.tokens.AccessToken == old || h.m.details.state != detailsIdle {
		t.Fatal("the refreshed token set is not shown")
	}
	h.mustShow("2026-11-21 12:06:00 UTC", "in 5:00")
}

func TestDetailsRefreshingState(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	act, _ := h.m.details.Update(keyMsg("r"))
	if a, ok := act.(actRefresh); !ok || a.label != "demo" || a.auto {
		t.Fatalf("r returned %#v", act)
	}
	h.mustShow("refreshing…")
	// A stale answer (an older request) is dropped.
	h.send(keyTokensMsg{seq: h.m.req.latest[slotOp] - 1, op: opRefresh, label: "demo", err: &auth.Error{Kind: auth.KindLoginRequired}})
	if h.m.details.ended || h.m.details.state != detailsRefreshing {
		t.Fatal("a stale refresh result was applied")
	}
}

func TestAutoRefreshAheadOfExpiry(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	// auth.Expiry's margin of a 5-minute token: 30 s.
	h.clock.Advance(4*time.Minute + 29*time.Second)
	fire[tickMsg](h)
	if contains(h.st.Calls(), "refresh demo") {
		t.Fatal("refreshed more than the margin ahead")
	}
	h.clock.Advance(time.Second)
	fire[tickMsg](h)
	if !contains(h.st.Calls(), "refresh demo") {
		t.Fatalf("no refresh the margin before expiry: %v", h.st.Calls())
	}
	h.mustShow("in 5:00")
}

// The real service's shape: a 15-day access token and a 30-minute refresh
// token. Auto-refresh must run ahead of the refresh window, not wait for the
// access token, or the session dies after 30 idle minutes.
func TestAutoRefreshAheadOfRefreshWindow(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		ts := f.tokens["demo"]
		ts.ExpiresIn = 1314000
		ts.AccessExpiresAt = ts.ObtainedAt.Add(1314000 * time.Second)
		ts.JWTExpiresAt = ts.AccessExpiresAt
	})
	h.clock.Advance(29*time.Minute + 29*time.Second)
	fire[tickMsg](h)
	if contains(h.st.Calls(), "refresh demo") {
		t.Fatal("refreshed more than the margin ahead of the refresh window's end")
	}
	h.clock.Advance(time.Second)
	fire[tickMsg](h)
	if !contains(h.st.Calls(), "refresh demo") {
		t.Fatalf("no refresh the margin before the refresh token expires: %v", h.st.Calls())
	}
}

func TestAutoRefreshToggle(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("a")
	h.mustShow("auto-refresh off")
	h.clock.Advance(4*time.Minute + 30*time.Second)
	fire[tickMsg](h)
	if contains(h.st.Calls(), "refresh demo") {
		t.Fatal("auto-refresh fired while off")
	}
	h.press("a")
	fire[tickMsg](h)
	if !contains(h.st.Calls(), "refresh demo") {
		t.Fatal("auto-refresh did not fire once on again")
	}
}

func TestAutoRefreshOffBySettings(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) { f.settings.AutoRefresh = false })
	h.mustShow("auto-refresh off")
}

func TestAutoRefreshFailureDoesNotLoop(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		f.refreshErr = &auth.Error{Kind: auth.KindServer, Op: "refresh", Msg: "server error"}
	})
	h.clock.Advance(4*time.Minute + 30*time.Second)
	for range 3 {
		fire[tickMsg](h)
		h.clock.Advance(time.Second)
	}
	n := 0
	for _, c := range h.st.Calls() {
		if c == "refresh demo" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d automatic refreshes after a failure, want 1", n)
	}
	h.mustShow("refresh failed")
}

func TestSessionEndedThenLoginAgain(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		f.refreshErr = &auth.Error{Kind: auth.KindLoginRequired, Op: "refresh", Code: "invalid_grant", Description: "Session not active", Msg: "the session ended"}
	})
	h.press("r")
	h.mustShow("session ended — log in again")
	h.press("l")
	if h.m.details.state != detailsPassword || !h.m.details.Capturing() {
		t.Fatal("l did not ask the password (it is not remembered)")
	}
	h.typeText(testPassword)
	h.mustNotShow(testPassword)
	h.press("enter")
	if !contains(h.st.Calls(), "login demo") {
		t.Fatalf("no login: %v", h.st.Calls())
	}
	if h.m.details.ended || h.m.details.state != detailsIdle {
		t.Fatal("still ended after a successful login")
	}
	h.mustShow("valid")
	h.mustNotShow(testPassword)
}

func TestLoginWithRememberedPassword(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		k := f.keys["demo"]
		k.RememberPassword = true
		k.LoggedOut = true
		f.keys["demo"] = k
	})
	h.press("enter")
	if !contains(h.st.Calls(), "login demo") {
		t.Fatalf("enter did not log in with the remembered password: %v", h.st.Calls())
	}
}

func TestExpiredStates(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) { f.refreshErr = store.ErrLoginNeeded })
	h.press("a") // keep auto-refresh out of the way
	h.clock.Advance(6 * time.Minute)
	fire[tickMsg](h)
	h.mustShow("expired — refresh with r", "Access expires", "expired")
	h.clock.Advance(30 * time.Minute)
	fire[tickMsg](h)
	h.mustShow("expired — log in again (l)")
	h.mustNotShow("in 0:", "valid")
	h.press("c")
	if len(h.clipboard) != 0 {
		t.Fatal("an expired token was copied")
	}
}

func TestNoStatedRefreshExpiryAndSkew(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		ts := f.tokens["demo"]
		ts.RefreshExpiresAt, ts.RefreshExpiresIn = time.Time{}, 0
		ts.RefreshExpirySource = auth.RefreshExpiryUnstated
		ts.JWTExpiresAt = ts.AccessExpiresAt.Add(10 * time.Minute)
	})
	h.mustShow("not stated", "clock skew: the JWT's exp is 10m0s off expires_in")

	offline := openDemoDetails(t, func(f *fakeStore) {
		ts := f.tokens["demo"]
		ts.RefreshExpiresAt, ts.RefreshExpiresIn = time.Time{}, 0
		ts.RefreshExpirySource = auth.RefreshExpiryOffline
	})
	offline.mustShow("no expiry (offline token)")
	offline.mustNotShow("not stated")
}

// One vocabulary for a refresh token without an expiry, in the keys table
// and `keys list` (the same cells): "no expiry (offline token)" only when
// the server said 0, "not stated" when it said nothing.
func TestRefreshExpiryCellVocabulary(t *testing.T) {
	t.Parallel()
	now := t0
	k := store.Key{Label: "k", HasRefreshToken: true, Token: auth.TokenSet{ObtainedAt: now.Add(-time.Minute)}}
	for _, st := range []CellStyle{Live, Words} {
		r := NewKeyRow(k)
		if got := KeyColumns[ColRefresh].Cell(&r, now, st); got != "not stated" {
			t.Errorf("unstated refresh expiry: %q", got)
		}
		if got := KeyColumns[ColAccess].Cell(&r, now, st); got != "not stated" {
			t.Errorf("unstated access expiry: %q", got)
		}
		k.Token.RefreshExpirySource = auth.RefreshExpiryOffline
		r = NewKeyRow(k)
		if got := KeyColumns[ColRefresh].Cell(&r, now, st); got != "no expiry (offline token)" {
			t.Errorf("offline refresh token: %q", got)
		}
		k.Token.RefreshExpirySource = ""
	}
}

func TestLogout(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	// X asks first; n (or esc) keeps the session, and while asking other
	// keys do nothing.
	h.press("X")
	h.mustShow(`Log out of "demo"? Its tokens are dropped here`, "(y/n)")
	h.press("q", "n")
	if contains(h.st.Calls(), "logout demo") || h.m.quitting {
		t.Fatalf("logged out or quit before y: %v", h.st.Calls())
	}
	h.mustNotShow("(y/n)")
	h.press("X", "y")
	if !contains(h.st.Calls(), "logout demo") {
		t.Fatalf("X, y did not log out: %v", h.st.Calls())
	}
	if h.m.details.tokens != nil {
		t.Fatal("tokens still shown after logout")
	}
	h.mustShow("logged out", "Logged out: tokens dropped here and the session ended at the server (logout).")
	// Nothing expires when there is no token: no "not stated" claims.
	h.mustNotShow("not stated", "in 5:00", "in 30:00")
	if !regexp.MustCompile(`Access expires +—`).MatchString(h.view()) || !regexp.MustCompile(`Refresh expires +—`).MatchString(h.view()) {
		t.Fatalf("expiry rows after logout:\n%s", h.view())
	}
}

// Every way a logout can end is one sentence, and a refusal is an error,
// not a toast.
func TestLogoutOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res       auth.EndResult
		err       error
		toast, em string
	}{
		{auth.EndResult{Via: "revocation"}, nil, "Logged out: tokens dropped here and the session ended at the server (revocation).", ""},
		{auth.EndResult{Via: "logout", AlreadyEnded: true}, nil, "Logged out: tokens dropped here; the server said the session had already ended.", ""},
		{auth.EndResult{}, nil, "Logged out: tokens dropped here; the server offers no way to end the session.", ""},
		{auth.EndResult{}, errors.New("boom"), "", "logged out here, but the server did not end the session: boom"},
	} {
		var em string
		if got := logoutOutcome(tc.res, tc.err, &em); got.String() != tc.toast || em != tc.em {
			t.Errorf("%+v, %v: %q, %q", tc.res, tc.err, got, em)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestReopenWhileRefreshingKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	act, _ := h.m.details.Update(keyMsg("r"))
	cmd := h.m.apply(act) // the refresh is in flight; its answer not delivered yet
	h.press("2", "1")
	h.run(cmd)
	if h.m.details.state != detailsIdle || !contains(h.st.Calls(), "refresh demo") {
		t.Fatalf("state %v after the refresh answered", h.m.details.state)
	}
}

func TestEnterDoesNotLogInWhileValid(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("enter")
	if h.m.details.state != detailsIdle || contains(h.st.Calls(), "login demo") {
		t.Fatal("enter started a login on a valid session")
	}
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
