package tui

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

func TestInspectorKeyTokens(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for _, c := range []struct {
		v    auth.Verification
		want string
	}{
		{auth.Verification{State: auth.SigVerified, KeyID: text.Trusted("k")}, "verified (key k)"},
		{auth.Verification{State: auth.SigFailed, Reason: text.Trusted("signature does not match")}, "failed: signature does not match"},
		{auth.Verification{State: auth.SigNotChecked, Reason: text.Trusted("no connection for this issuer")}, "not verified: no connection for this issuer"},
	} {
		h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
		h.m.cfg.verifier = fakeVerifier{c.v}
		h.press("3")
		h.mustShow(c.want)
	}
}

func TestInspectorVerificationIsACommandAndStaleOnesDrop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	in := h.m.inspector
	seq := h.m.req.next()
	verify := in.load("x", []token{{title: "Access token", raw: h.st.tokens["demo"].AccessToken}}, t0, seq)
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// longLivedToken is a Shipping Service access token: 15 days, from an
// issuer that none of the connections knows.
func longLivedToken() string {
	return fakeJWT(map[string]any{"alg": "RS256", "typ": "JWT", "kid": "k-9"}, map[string]any{
		"exp": t0.Add(15*24*time.Hour + 4*time.Hour).Unix(), "iat": t0.Unix(), "iss": "https://sso.elsewhere.example/realms/shipping",
		"sub": "user-9", "typ": "Bearer", "preferred_username": "ops", "email": "ops@shipping.example", "name": "Ops Robot",
		"sid": "5f3c-session", "jti": "onrtro:9f1e", "acr": "1", "azp": "shipping-api", "aud": "account", "scope": "openid email profile shipping:read shipping:write",
		"realm_access": map[string]any{"roles": []any{"offline_access", "uma_authorization", "shipper", "auditor"}},
		"resource_access": map[string]any{"shipping-api": map[string]any{"roles": []any{"read", "write", "admin"}},
			"account": map[string]any{"roles": []any{"manage-account", "view-profile"}}},
	})
}

func TestInspectorSummaryOnTop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("3")
	lines := strings.Split(h.view(), "\n")
	if want := "  Access token: JWT RS256 · signature verified · expires in 5m"; lines[3] != want {
		t.Fatalf("line 4 = %q, want %q", lines[3], want)
	}

	// A pasted token from an unknown issuer, on a 24-line screen: the
	// per-section signature line is scrolled out of sight, the summary is
	// not, and its reason is shortened rather than the expiry.
	h = newHarness(t, nil)
	h.m.cfg.verifier = fakeVerifier{auth.Verification{State: auth.SigNotChecked, KeyID: text.Trusted("k-9"),
		Reason: text.Trusted("issuer https://sso.elsewhere.example/realms/shipping is not one of your connections; not fetching its keys")}}
	h.send(windowSize(80, 24))
	h.press("esc", "3")
	h.send(tea.PasteMsg{Content: longLivedToken()})
	h.press("enter")
	v := h.view()
	lines = strings.Split(v, "\n")
	if want := "  Pasted token: JWT RS256 · signature not verified · expires in 15d 4h"; lines[3] != want {
		t.Fatalf("line 4 = %q, want %q", lines[3], want)
	}
	if want := "    issuer https://sso.elsewhere.example/realms/… is not one of your connections"; lines[4] != want {
		t.Fatalf("line 5 = %q, want %q", lines[4], want)
	}
	if strings.Contains(v, "signature  not verified") {
		t.Fatal("the per-section signature line fits on screen: the test shows nothing")
	}
	for range 40 {
		h.press("j")
	}
	h.mustShow("signature  not verified (key k-9): issuer", // the section's own line stays
		"auditor", "shipping:write", "read, write, admin") // long values wrap, not cut
	requireFits(t, h.view(), 80, 24)

	// Wide enough: one line.
	h.send(windowSize(160, 24))
	lines = strings.Split(h.view(), "\n")
	if want := "  Pasted token: JWT RS256 · signature not verified: issuer https://sso.elsewhere.example/realms/shipping is not one of your connections · expires in 15d 4h"; lines[3] != want {
		t.Fatalf("line 4 at 160 columns = %q, want %q", lines[3], want)
	}
	if strings.TrimSpace(lines[4]) == "" || strings.HasPrefix(lines[4], "  issuer") {
		t.Fatalf("line 5 at 160 columns = %q, want the claims", lines[4])
	}
}

func TestInspectorSummaryWhileChecking(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	in := h.m.inspector
	in.load("x", []token{{title: "Access token", raw: h.st.tokens["demo"].AccessToken}}, t0, h.m.req.next())
	if s := strings.Join(in.sum, "\n"); !strings.Contains(s, "checking signature…") || !strings.Contains(s, "expires in 5m") {
		t.Fatalf("summary while verifying: %q", s)
	}
	in.load("x", []token{{title: "Pasted token", raw: "opaque-token-value"}}, t0, h.m.req.next())
	if s := strings.Join(in.sum, "\n"); !strings.Contains(s, "Pasted token: opaque (not a JWT)") {
		t.Fatalf("summary of an opaque token: %q", s)
	}
}

// A bracketed paste arrives as one tea.PasteMsg: the header name, the
// scheme, quotes, surrounding whitespace and line breaks (a token wrapped
// by the terminal) must not end up in the token.
func TestInspectorBracketedPaste(t *testing.T) {
	t.Parallel()
	jwt := fakeTokens(t0, "demo", 1).AccessToken
	for _, in := range []string{
		jwt,
		"\n  Authorization: Bearer " + jwt + "\r\n",
		"authorization: bearer " + jwt,
		"Authorization:Bearer " + jwt,
		"\tBearer   " + jwt + "\n\n",
		`"Authorization: Bearer ` + jwt + `"`,
		jwt[:50] + "\n" + jwt[50:120] + "\r\n" + jwt[120:],
	} {
		h := newHarness(t, nil)
		h.press("esc", "3")
		h.send(tea.PasteMsg{Content: in})
		h.press("enter")
		if h.m.inspector.Capturing() || len(h.m.inspector.tokens) != 1 {
			t.Fatalf("paste %q was not inspected", in)
		}
		if got := h.m.inspector.tokens[0].raw; got != jwt {
			t.Fatalf("paste %q gave %q", in, got)
		}
		h.mustShow("Pasted token: JWT RS256", "preferred_username")
	}
}

func TestInspectorPasteWithoutP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("3")
	if h.m.inspector.Capturing() {
		t.Fatal("the inspector of a key opened on the paste field")
	}
	h.send(tea.PasteMsg{Content: "Bearer opaque-token-value-1234567890\n"})
	if !h.m.inspector.Capturing() {
		t.Fatal("a paste did not open the paste field")
	}
	h.press("enter")
	if got := h.m.inspector.tokens[0].raw; got != "opaque-token-value-1234567890" {
		t.Fatalf("inspected %q", got)
	}
	h.mustShow("Source: pasted token", "not a JWT")
}

// iat or nbf in the future beyond a small skew is said, with by how much;
// a few seconds ahead is not.
func TestInspectorWarnsOfFutureIatAndNbf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	future := fakeJWT(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{
		"exp": t0.Add(3 * time.Hour).Unix(), "iat": t0.Add(2 * time.Hour).Unix(), "nbf": t0.Add(10 * time.Minute).Unix(), "sub": "x",
	})
	h.press("3", "p", "ctrl+u")
	h.send(tea.PasteMsg{Content: future})
	h.press("enter")
	h.mustShow("⚠ iat lies "+text.Span(2*time.Hour)+" in the future", "⚠ nbf lies "+text.Span(10*time.Minute)+" in the future")

	near := fakeJWT(map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{
		"exp": t0.Add(time.Hour).Unix(), "iat": t0.Add(30 * time.Second).Unix(), "nbf": t0.Add(30 * time.Second).Unix(), "sub": "x",
	})
	h.press("p", "ctrl+u")
	h.send(tea.PasteMsg{Content: near})
	h.press("enter")
	h.mustNotShow("in the future")
}

// A bound token says what it is bound to in the summary, and whether that
// is the key's own DPoP key.
func TestInspectorSummarySaysTheBinding(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	in := h.m.inspector
	enc := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
	bound := enc(`{"alg":"RS256"}`) + "." + enc(`{"sub":"x","cnf":{"jkt":"the-jkt"}}`) + ".c2ln"
	in.load("x", []token{{title: "Access token", raw: bound, jkt: "the-jkt"}}, t0, h.m.req.next())
	if s := strings.Join(in.sum, "\n"); !strings.Contains(s, "bound to DPoP key the-jkt (this key's)") {
		t.Fatalf("summary of the key's bound token: %q", s)
	}
	in.load("x", []token{{title: "Access token", raw: bound, jkt: "another"}}, t0, h.m.req.next())
	if s := strings.Join(in.sum, "\n"); !strings.Contains(s, "NOT this key's") {
		t.Fatalf("summary of another key's token: %q", s)
	}
}

func TestDetailsSayHowAHardenedKeyProvesItself(t *testing.T) {
	t.Parallel()
	k := store.Key{Definition: store.Definition{Connection: auth.Connection{ClientAuth: auth.PrivateKeyJWT, DPoP: true}}}
	if got := hardenedLine(k); got != "client auth private_key_jwt · DPoP-bound tokens" {
		t.Errorf("hardenedLine = %q", got)
	}
	k = store.Key{Definition: store.Definition{Connection: auth.Connection{ClientAuth: auth.TLSClientAuth}}}
	if got := hardenedLine(k); got != "client auth tls_client_auth · certificate-bound tokens" {
		t.Errorf("hardenedLine = %q", got)
	}
	if got := hardenedLine(store.Key{}); got != "" {
		t.Errorf("a plain key: %q", got)
	}
}

// The inspector: its top lines indent by 2, an HS256 token says what is
// known, and relative times tick.
func TestInspectorCosmetics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.send(windowSize(80, 24))
	hs := fakeJWT(map[string]any{"alg": "HS256", "typ": "JWT"}, map[string]any{"exp": t0.Add(5 * time.Minute).Unix(), "a_rather_long_custom_claim_name_here": "x"})
	h.m.cfg.verifier = fakeVerifier{auth.Verification{State: auth.SigNotChecked, Reason: text.Trusted("HMAC-signed (HS256): a client cannot check it")}}
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
