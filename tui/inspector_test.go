package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
)

func TestInspectorKeyTokens(t *testing.T) {
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("1", "i")
	if h.m.active != screenInspector {
		t.Fatalf("i opened %v", h.m.active)
	}
	h.mustShow("Access token", "header", "alg", "RS256", "payload", "preferred_username", "demo",
		"2026-11-21 12:05:00 UTC", "offline_access, uma_authorization", "signature", "verified (key key-1)", "Refresh token", "HS512")
	golden.RequireEqual(t, []byte(h.view()))
}

func TestInspectorSignatureStates(t *testing.T) {
	for _, c := range []struct {
		v    auth.Verification
		want string
	}{
		{auth.Verification{State: auth.SigVerified, KeyID: "k"}, "verified (key k)"},
		{auth.Verification{State: auth.SigFailed, Reason: "signature does not match"}, "failed: signature does not match"},
		{auth.Verification{State: auth.SigNotChecked, Reason: "no connection for this issuer"}, "not verified: no connection for this issuer"},
	} {
		h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
		h.m.cfg.verifier = fakeVerifier{c.v}
		h.press("3")
		h.mustShow(c.want)
	}
}

func TestInspectorVerificationIsACommandAndStaleOnesDrop(t *testing.T) {
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	in := h.m.inspector
	seq := h.m.nextSeq()
	verify := in.load("x", []token{{"Access token", h.st.tokens["demo"].AccessToken}}, t0, seq)
	if len(verify) != 1 || !in.busy() {
		t.Fatal("a JWT must be queued for verification")
	}
	if !strings.Contains(in.vp.GetContent(), "checking…") {
		t.Fatal("no pending state while verifying")
	}
	in.verified(verifiedMsg{seq: seq - 1, which: 0, v: auth.Verification{State: auth.SigFailed}})
	if !in.busy() {
		t.Fatal("a stale verification was applied")
	}
	in.verified(verifiedMsg{seq: seq, which: 0, v: auth.Verification{State: auth.SigVerified}})
	if in.busy() {
		t.Fatal("the verification was not applied")
	}
}

// hostileToken carries terminal control sequences in its claims.
func hostileToken() string {
	return fakeJWT(map[string]any{"alg": "RS256", "typ": "JWT", "kid": "\x1b[31mred"}, map[string]any{
		"exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix(), "iss": "https://evil.example/\x1b]8;;https://x\x07",
		"preferred_username": "\x1b]52;c;aGFja2Vk\x07", "name": "Mallory\x1b[2J\x1b[H", "bidi": "abc\u202edcba",
		"realm_access":    map[string]any{"roles": []any{"admin\x1b[2J", "user"}},
		"weird\x1b[1mkey": "v",
	})
}

func TestInspectorPastedHostileToken(t *testing.T) {
	h := newHarness(t, nil) // no keys: 3 opens the paste field
	h.press("esc", "3")
	if h.m.active != screenInspector || !h.m.inspector.Capturing() {
		t.Fatalf("3 without a key: active %v, pasting %v", h.m.active, h.m.inspector.Capturing())
	}
	h.send(tea.PasteMsg{Content: hostileToken()})
	h.press("enter")
	if h.m.inspector.Capturing() || len(h.m.inspector.tokens) != 1 {
		t.Fatal("the pasted token was not loaded")
	}
	v := h.view()
	if strings.ContainsAny(v, "\x1b\x07\u202e") {
		t.Fatalf("a control character reached the view: %q", v)
	}
	h.mustShow("Pasted token", "preferred_username", `\x1b]52;c;aGFja2Vk\x07`, `Mallory\x1b[2J\x1b[H`, `admin\x1b[2J`)
	golden.RequireEqual(t, []byte(v))
}

func TestInspectorPasteKeyAndBearerPrefix(t *testing.T) {
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("3", "p")
	if !h.m.inspector.Capturing() {
		t.Fatal("p did not open the paste field")
	}
	h.press("q") // text, not quit
	if h.m.quitting {
		t.Fatal("q quit while pasting")
	}
	h.press("ctrl+u")
	h.send(tea.PasteMsg{Content: "Authorization: Bearer " + h.st.tokens["demo"].AccessToken})
	h.press("enter")
	h.mustShow("Pasted token", "preferred_username")
}

func TestInspectorOpaqueAndBrokenTokens(t *testing.T) {
	h := newHarness(t, nil)
	h.press("esc", "3")
	h.typeText("opaque-token-value-1234567890")
	h.press("enter")
	h.mustShow("not a JWT")
	h.press("p")
	h.typeText("eyJhbGci.eyJzdWIi.c2ln")
	h.press("enter")
	h.mustShow("cannot decode")
}

func TestInspectorScrolls(t *testing.T) {
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.send(windowSize(100, 15))
	h.press("3")
	before := h.view()
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if h.view() == before {
		t.Fatal("the mouse wheel did not scroll")
	}
	h.press("k", "k", "k")
	if h.view() != before {
		t.Fatal("k did not scroll back up")
	}
}
