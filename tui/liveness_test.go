package tui

import (
	"errors"
	"testing"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// inactive is the server's answer for a token of a session that ended.
var inactive = auth.Liveness{State: auth.LiveInactive, Via: text.Trusted("introspection"), Reason: text.Trusted("the server no longer accepts the token (session ended or token revoked)")}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestDetailsAsksTheServerOnOpen(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	if n := count(h.st.Calls(), "liveness demo"); n != 1 {
		t.Fatalf("%d server checks on open, want 1: %v", n, h.st.Calls())
	}
	h.mustShow("Server", "accepts this token (introspection)")
	h.mustNotShow("checking…")
}

// The Shipping Service's idle session ends long before its 15-day access
// token: the token looks valid here, but introspection says active:false.
// That is the one verdict shown ("session ended"), and it blocks nothing:
// r still refreshes (the server answers for itself), copy still copies.
func TestDetailsServerEndedSessionBlocksNothing(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) { f.live = inactive })
	h.mustShow("Server              the server ended this session (introspection) — log in again (l)",
		"State               session ended — log in again (l)")
	h.mustNotShow("State               valid")
	if !h.m.details.sessionEnded() {
		t.Fatal("active:false is not treated as an ended session")
	}
	h.press("c")
	if len(h.clipboard) != 1 {
		t.Fatal("the server's verdict blocked copy")
	}
	if !h.m.details.wantsAutoRefresh(h.m.details.tokens.AccessExpiry()) {
		t.Fatal("the server's verdict blocked auto-refresh")
	}
	h.st.mu.Lock()
	h.st.live = auth.Liveness{State: auth.LiveActive, Via: text.Trusted("userinfo")}
	h.st.mu.Unlock()
	h.press("r")
	if !contains(h.st.Calls(), "refresh demo") {
		t.Fatal("the server's verdict blocked r")
	}
	if n := count(h.st.Calls(), "liveness demo"); n != 2 {
		t.Fatalf("%d server checks, want one more after the refresh: %v", n, h.st.Calls())
	}
	h.mustShow("accepts this token (userinfo)", "State               valid")
	if h.m.details.sessionEnded() {
		t.Fatal("still ended after a refresh the server accepts")
	}
}

// A userinfo refusal is not the server's verdict on the session: it shows
// as "cannot tell".
func TestDetailsUserinfoRefusalCannotTell(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		f.live = auth.Liveness{State: auth.LiveInactive, Via: text.Trusted("userinfo"), Reason: text.Trusted("the server no longer accepts the token")}
	})
	h.mustShow("cannot tell: userinfo refused the token", "State               valid")
	if h.m.details.sessionEnded() {
		t.Fatal("a userinfo refusal ended the session")
	}
}

func TestDetailsServerCannotTell(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, func(f *fakeStore) {
		f.live = auth.Liveness{State: auth.LiveUnknown, Reason: text.Sanitize("the server offers neither token introspection nor userinfo\x1b[2J")}
	})
	h.mustShow("cannot tell: the server offers neither token introspection nor userinfo", `\x1b[2J`, "State               valid  ")
	if h.m.details.sessionEnded() {
		t.Fatal("cannot tell is not an ended session")
	}

	h = openDemoDetails(t, func(f *fakeStore) { f.liveErr = errors.New("keyring locked") })
	h.mustShow("cannot tell: keyring locked")
}

func TestDetailsCheckWithServerKeyAndStaleAnswers(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	act, _ := h.m.details.Update(keyMsg("s"))
	if a, ok := act.(actCheckLive); !ok || a.label != "demo" {
		t.Fatalf("s returned %#v", act)
	}
	cmd := h.m.apply(act) // in flight, not answered yet
	h.mustShow("Server", "checking…")
	seq := h.m.req.latest[slotLive]
	h.send(livenessMsg{seq: seq - 1, label: "demo", live: inactive})
	h.send(livenessMsg{seq: seq, label: "other", live: inactive})
	if h.m.details.liveState != liveChecking {
		t.Fatal("a stale or foreign answer was applied")
	}
	// A second check overtakes the first: the first one's answer is stale.
	act, _ = h.m.details.Update(keyMsg("s"))
	cmd2 := h.m.apply(act)
	h.run(cmd)
	if h.m.details.liveState != liveChecking {
		t.Fatal("the answer of an overtaken check was applied")
	}
	h.st.mu.Lock()
	h.st.live = inactive
	h.st.mu.Unlock()
	h.run(cmd2)
	h.mustShow("the server ended this session")
	if n := count(h.st.Calls(), "liveness demo"); n != 3 {
		t.Fatalf("%d server checks, want 3 (open and s twice): %v", n, h.st.Calls())
	}
}

func TestDetailsServerCheckAfterRefresh(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("r")
	calls := h.st.Calls()
	if calls[len(calls)-1] != "liveness demo" || count(calls, "liveness demo") != 2 {
		t.Fatalf("no server check after the refresh: %v", calls)
	}
}

func TestDetailsNoServerLineWhenLoggedOut(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("X", "y")
	h.mustNotShow("Server")
	h.press("s")
	h.mustShow("no token to check: log in first (l)")
}

func TestCheckWithServerInHelp(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.press("?")
	h.mustShow("s", "check with server")
}
