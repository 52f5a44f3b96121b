package auth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

func TestParseChallenges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want []auth.Challenge
	}{
		{[]string{`Bearer realm="shipping", error="invalid_token", error_description="The access token expired"`},
			[]auth.Challenge{{"Bearer", map[string]string{"realm": "shipping", "error": "invalid_token", "error_description": "The access token expired"}, ""}}},
		{[]string{`Bearer, DPoP algs="ES256 RS256", error=use_dpop_nonce`},
			[]auth.Challenge{{"Bearer", map[string]string{}, ""}, {"DPoP", map[string]string{"algs": "ES256 RS256", "error": "use_dpop_nonce"}, ""}}},
		{[]string{`Basic realm="x"`, `Bearer error="invalid_token"`},
			[]auth.Challenge{{"Basic", map[string]string{"realm": "x"}, ""}, {"Bearer", map[string]string{"error": "invalid_token"}, ""}}},
		{[]string{`Negotiate abc==, Bearer realm="q\"uote"`},
			[]auth.Challenge{{"Negotiate", map[string]string{}, "abc=="}, {"Bearer", map[string]string{"realm": `q"uote`}, ""}}},
		{[]string{`Bearer error="unterminated`}, []auth.Challenge{{"Bearer", map[string]string{}, ""}}},
	} {
		if got := auth.ParseChallenges(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseChallenges(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
	h := http.Header{}
	h.Add("WWW-Authenticate", `Bearer realm="shipping", error="insufficient_scope"`)
	if auth.InvalidTokenChallenge(h) {
		t.Error("insufficient_scope taken for an invalid token")
	}
	h.Add("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
	if !auth.InvalidTokenChallenge(h) {
		t.Error("use_dpop_nonce not taken for a challenge to answer")
	}
}

// apiRig is a realm, a resource server trusting it, and a source of the
// realm's tokens that counts forced renewals.
type apiRig struct {
	realm  *authtest.Server
	rs     *authtest.ResourceServer
	forced atomic.Int32
	client *http.Client
}

func newAPIRig(t *testing.T) *apiRig {
	t.Helper()
	realm := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(realm.Close)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: realm.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret})
	t.Cleanup(rs.Close)
	rig := &apiRig{realm: realm, rs: rs}
	var current atomic.Pointer[auth.TokenSet]
	login := func() (*auth.TokenSet, error) {
		resp, err := http.PostForm(realm.Issuer()+"/protocol/openid-connect/token", url.Values{
			"grant_type": {"password"}, "client_id": {authtest.DemoClientID}, "client_secret": {authtest.DemoClientSecret},
			"username": {authtest.DemoUsername}, "password": {authtest.DemoPassword},
		})
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var ts auth.TokenSet
		if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil {
			return nil, err
		}
		current.Store(&ts)
		return &ts, nil
	}
	if _, err := login(); err != nil {
		t.Fatal(err)
	}
	c, err := auth.NewAPIClient(auth.APIOptions{Source: func(ctx context.Context, force bool) (*auth.TokenSet, error) {
		if force {
			rig.forced.Add(1)
			return login()
		}
		return current.Load(), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	rig.client = c
	return rig
}

func echoOf(t *testing.T, resp *http.Response) authtest.Echo {
	t.Helper()
	defer resp.Body.Close()
	var e authtest.Echo
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

// A token the API refuses as invalid is renewed once and the request sent
// again, its streamed body whole (nothing of it was read before the 401);
// a second refusal is the answer, with no third try.
func TestAPIClientRenewsOnceOnInvalidToken(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	body := bytes.Repeat([]byte(`{"weight":1.5},`), 50000)
	sum := sha256.Sum256(body)

	rig.realm.EndSessions() // the token is dead at the server, alive by its exp
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body)
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, rig.rs.URL()+"/v1/shipments", pr)
	resp, err := rig.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after one renewal: HTTP %d", resp.StatusCode)
	}
	if e := echoOf(t, resp); e.BodyBytes != int64(len(body)) || e.BodySHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the streamed body arrived as %d bytes %s, want %d", e.BodyBytes, e.BodySHA256, len(body))
	}
	if n := rig.forced.Load(); n != 1 {
		t.Errorf("forced renewals = %d, want 1", n)
	}

	rig.rs.RefuseNext(2)
	before := rig.rs.Count("requests")
	req, _ = http.NewRequest(http.MethodPost, rig.rs.URL()+"/v1/shipments", bytes.NewReader(body))
	resp, err = rig.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second refusal: HTTP %d, want the 401", resp.StatusCode)
	}
	if n := rig.rs.Count("requests") - before; n != 2 {
		t.Errorf("requests sent = %d, want 2 (one retry, never more)", n)
	}
	if n := rig.forced.Load(); n != 2 {
		t.Errorf("forced renewals = %d, want 2", n)
	}
}

// Other failures are never retried: a 403, a 500, a 401 without an
// invalid-token challenge.
func TestAPIClientRetriesNothingElse(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	for _, path := range []string{"/test/status/403", "/test/status/500", "/test/status/401"} {
		before := rig.rs.Count("requests")
		resp, err := rig.client.Get(rig.rs.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := rig.rs.Count("requests") - before; n != 1 {
			t.Errorf("%s: %d requests, want 1", path, n)
		}
	}
	if n := rig.forced.Load(); n != 0 {
		t.Errorf("forced renewals = %d, want 0", n)
	}
}

// A token source that fails ends the request with its error; plain http to
// a remote host is refused before anything is sent.
func TestAPIClientErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("login needed")
	c, err := auth.NewAPIClient(auth.APIOptions{Source: func(context.Context, bool) (*auth.TokenSet, error) { return nil, boom }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/x", nil)
	if _, err := c.Do(req); !errors.Is(err, boom) {
		t.Errorf("source failure: %v", err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example.com/x", nil)
	if _, err := c.Do(req); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("plain http to a remote host: %v", err)
	}
}

// With the key's DPoP key, a DPoP-bound token goes out with a proof per
// request that the resource server accepts (htm, htu, ath, cnf.jkt, its
// nonce after one use_dpop_nonce answer, no replay), including after a
// forced renewal; a streamed body still arrives whole. Without the key the
// request is refused before anything is sent.
func TestAPIClientSignsDPoP(t *testing.T) {
	t.Parallel()
	cfg := authtest.DemoConfig()
	cfg.Clients[0].DPoP = true
	cfg.DPoPNonces = false // the realm's nonces are not under test here; the API's are
	realm := authtest.NewServer(cfg)
	t.Cleanup(realm.Close)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: realm.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret, DPoPNonce: true})
	t.Cleanup(rs.Close)
	k, err := auth.NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	tokenURL := realm.Issuer() + "/protocol/openid-connect/token"
	var current atomic.Pointer[auth.TokenSet]
	var forced atomic.Int32
	login := func() (*auth.TokenSet, error) {
		proof, err := k.Proof("POST", tokenURL, "", "", time.Now())
		if err != nil {
			return nil, err
		}
		form := url.Values{"grant_type": {"password"}, "client_id": {authtest.DemoClientID}, "client_secret": {authtest.DemoClientSecret},
			"username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}}
		req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("DPoP", proof)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var ts auth.TokenSet
		if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil || ts.TokenType != "DPoP" {
			return nil, errors.New("no DPoP token")
		}
		current.Store(&ts)
		return &ts, nil
	}
	if _, err := login(); err != nil {
		t.Fatal(err)
	}
	source := func(_ context.Context, force bool) (*auth.TokenSet, error) {
		if force {
			forced.Add(1)
			return login()
		}
		return current.Load(), nil
	}
	c, err := auth.NewAPIClient(auth.APIOptions{Source: source, DPoP: k})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		resp, err := c.Get(rs.URL() + "/v1/shipments?page=1")
		if err != nil {
			t.Fatal(err)
		}
		if e := echoOf(t, resp); resp.StatusCode != http.StatusOK || !e.DPoP {
			t.Fatalf("call %d: HTTP %d, dpop %v", i, resp.StatusCode, e.DPoP)
		}
	}
	if n, want := rs.Count("refused"), 1; n != want {
		t.Errorf("refusals = %d, want %d (one use_dpop_nonce, then the nonce is remembered)", n, want)
	}

	realm.EndSessions()
	body := bytes.Repeat([]byte("x"), 100000)
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write(body); pw.Close() }()
	req, _ := http.NewRequest(http.MethodPost, rs.URL()+"/v1/import", pr)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := echoOf(t, resp); resp.StatusCode != http.StatusOK || e.BodyBytes != int64(len(body)) || forced.Load() != 1 {
		t.Errorf("after the session ended: HTTP %d, %d bytes, %d renewals", resp.StatusCode, e.BodyBytes, forced.Load())
	}

	bare, _ := auth.NewAPIClient(auth.APIOptions{Source: source})
	before := rs.Count("requests")
	if _, err := bare.Get(rs.URL() + "/v1/x"); err == nil || !strings.Contains(err.Error(), "DPoP") {
		t.Errorf("a DPoP token without the key: %v", err)
	}
	if rs.Count("requests") != before {
		t.Error("a request went out without a proof")
	}
}
