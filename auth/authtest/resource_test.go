package authtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

func newResource(t *testing.T, s *Server) *ResourceServer {
	t.Helper()
	rs := NewResourceServer(ResourceConfig{Issuer: s.Issuer(), ClientID: DemoClientID, ClientSecret: DemoClientSecret})
	t.Cleanup(rs.Close)
	return rs
}

// A live token is accepted and the body is echoed by size and digest; the
// same token after the session ended at the authorization server is refused
// with an RFC 6750 invalid_token challenge (introspection, no cache).
func TestResourceServerIntrospectsEveryRequest(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	rs := newResource(t, s)
	tok := login(t, s).str("access_token")

	body := bytes.Repeat([]byte(`{"parcel":"x"},`), 10000)
	req, _ := http.NewRequest(http.MethodPost, rs.URL()+"/v1/shipments?dry=1", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	bearer(tok)(req)
	r := do(t, req)
	if r.status != http.StatusOK {
		t.Fatalf("live token: %d %s", r.status, r.body)
	}
	var e Echo
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if e.Method != "POST" || e.Path != "/v1/shipments" || e.Query != "dry=1" || e.BodyBytes != int64(len(body)) ||
		e.BodySHA256 != hex.EncodeToString(sum[:]) || e.Subject == "" || e.ClientID != DemoClientID {
		t.Errorf("echo = %+v", e)
	}
	if _, ok := e.Headers["Authorization"]; ok {
		t.Error("the echo repeats the Authorization header")
	}

	s.EndSessions()
	r = get(t, rs.URL()+"/v1/shipments", bearer(tok))
	if r.status != http.StatusUnauthorized {
		t.Fatalf("token of an ended session: %d, want 401", r.status)
	}
	if c := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Bearer ") || !strings.Contains(c, `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate = %q", c)
	}
	if got := rs.Count("introspections"); got != 2 {
		t.Errorf("introspections = %d, want 2 (one a request)", got)
	}
}

// No token: a bare challenge (no error code, RFC 6750 §3.1); a forced
// refusal (RefuseNext) answers invalid_token once, then the token works.
func TestResourceServerChallenges(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	rs := newResource(t, s)
	r := get(t, rs.URL()+"/v1/x")
	if c := r.header.Get("WWW-Authenticate"); r.status != http.StatusUnauthorized || c != `Bearer realm="shipping"` {
		t.Errorf("no token: %d %q", r.status, c)
	}
	tok := login(t, s).str("access_token")
	rs.RefuseNext(1)
	if r := get(t, rs.URL()+"/v1/x", bearer(tok)); r.status != http.StatusUnauthorized ||
		!strings.Contains(r.header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("forced refusal: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if r := get(t, rs.URL()+"/v1/x", bearer(tok)); r.status != http.StatusOK {
		t.Errorf("after the forced refusal: %d", r.status)
	}
	if r := get(t, rs.URL()+"/test/status/404", bearer(tok)); r.status != http.StatusNotFound || r.json["path"] != "/test/status/404" {
		t.Errorf("/test/status/404: %d %s", r.status, r.body)
	}
	if r := get(t, rs.URL()+"/test/large?n=3", bearer(tok)); r.status != http.StatusOK || !strings.Contains(string(r.body), "shipment-00002") {
		t.Errorf("/test/large: %d %s", r.status, r.body)
	}
}

// A DPoP-bound token passes with a proof for this method and URL by the key
// its cnf.jkt names (and the server's nonce once asked); it is refused as a
// bearer token, with a proof by another key, for another URL, and with a
// proof replayed by hand.
func TestResourceServerChecksDPoP(t *testing.T) {
	t.Parallel()
	// The realm's own nonces are not under test here; the API's are.
	s, clock := newTest(t, func(c *Config) { c.Clients[0].DPoP, c.DPoPNonces = true, false })
	rs := NewResourceServer(ResourceConfig{Issuer: s.Issuer(), ClientID: DemoClientID, ClientSecret: DemoClientSecret, DPoPNonce: true})
	t.Cleanup(rs.Close)
	k, _ := auth.NewDPoPKey()
	tokenURL := oidcURL(s, "token")
	r := post(t, tokenURL, passwordForm(), dpopHeader(t, k, "POST", tokenURL, "", "", clock.Now()))
	at := r.str("access_token")
	if r.status != http.StatusOK || r.str("token_type") != "DPoP" {
		t.Fatalf("DPoP login: %d %s", r.status, r.body)
	}
	scheme := func(r *http.Request) { r.Header.Set("Authorization", "DPoP "+at) }
	u := rs.URL() + "/v1/shipments?page=1"
	// Proofs are checked against the real clock: the realm's is only for tokens.
	now := time.Now()

	if got := get(t, u, bearer(at)); got.status != http.StatusUnauthorized || !strings.Contains(got.header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("bound token as Bearer: %d %q", got.status, got.header.Get("WWW-Authenticate"))
	}
	got := get(t, u, scheme, dpopHeader(t, k, "GET", u, at, "", now))
	nonce := got.header.Get("DPoP-Nonce")
	if got.status != http.StatusUnauthorized || nonce == "" || !auth.InvalidTokenChallenge(got.header) {
		t.Fatalf("proof without the nonce: %d %q nonce %q", got.status, got.header.Get("WWW-Authenticate"), nonce)
	}
	good := dpopHeader(t, k, "GET", u, at, nonce, now)
	if got := get(t, u, scheme, good); got.status != http.StatusOK || got.json["dpop"] != true {
		t.Fatalf("good proof: %d %s", got.status, got.body)
	}
	if got := get(t, u, scheme, good); got.status != http.StatusUnauthorized || !strings.Contains(got.header.Get("WWW-Authenticate"), "already been used") {
		t.Errorf("replayed proof: %d %q", got.status, got.header.Get("WWW-Authenticate"))
	}
	other, _ := auth.NewDPoPKey()
	for name, h := range map[string]func(*http.Request){
		"another key":    dpopHeader(t, other, "GET", u, at, nonce, now),
		"another URL":    dpopHeader(t, k, "GET", rs.URL()+"/v1/other", at, nonce, now),
		"another method": dpopHeader(t, k, "POST", u, at, nonce, now),
		"no ath":         dpopHeader(t, k, "GET", u, "", nonce, now),
	} {
		if got := get(t, u, scheme, h); got.status != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, got.status)
		}
	}
}
