package auth

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// approveDevice plays the person at the device page of authtest.
func approveDevice(t *testing.T, p Prompt) {
	t.Helper()
	go func() {
		form := url.Values{"user_code": {p.UserCode}, "username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}, "action": {"approve"}}
		resp, err := http.PostForm(p.VerificationURI, form)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}()
}

// deviceRealm is authtest with one confidential client allowed the device
// grant, edited by edit, polled every second.
func deviceRealm(t *testing.T, edit func(*authtest.Client)) (*authtest.Server, Connection) {
	t.Helper()
	c := authtest.Client{ID: "device-cli", Secret: "device-Secret-9", DeviceGrant: true}
	edit(&c)
	s := cliServer(t, &cliClock{}, func(cfg *authtest.Config) {
		cfg.Now = time.Now
		cfg.Clients = append(cfg.Clients, c)
		cfg.DeviceInterval = time.Second
	})
	return s, Connection{AuthURL: s.URL(), Realm: s.Realm(), ClientID: c.ID}
}

// A provider that wants HTTP Basic at the token endpoint: with no method
// chosen, the device poll is refused as invalid_client with the secret in
// the form, tried again with Basic, and Basic is remembered, so the
// refresh goes straight to it.
func TestClientAuthAutoDetectsBasicOnTheDevicePoll(t *testing.T) {
	t.Parallel()
	s, conn := deviceRealm(t, func(c *authtest.Client) { c.TokenBasicOnly = true })
	c := cliNewClient(t, Options{})
	ca := ClientAuth{Secret: "device-Secret-9"}
	ts, err := c.Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ca, Prompt: func(p Prompt) { approveDevice(t, p) }})
	if err != nil {
		t.Fatalf("device grant with a Basic-only token endpoint: %v", err)
	}
	if got := c.LearnedClientAuth(conn); got != ClientSecretBasic {
		t.Fatalf("learned %q, want %q", got, ClientSecretBasic)
	}
	before := s.Count("token")
	if _, err := c.Refresh(cliCtx(t), conn, ca, ts); err != nil {
		t.Fatal(err)
	}
	if n := s.Count("token") - before; n != 1 {
		t.Errorf("the refresh took %d token requests, want 1 (straight to Basic)", n)
	}
	// Chosen explicitly, the method is not second-guessed.
	conn.ClientAuth = ClientSecretPost
	_, err = NewClientOrFail(t).Refresh(cliCtx(t), conn, ca, ts)
	cliSafeErr(t, err, KindInvalidClient, "device-Secret-9")
}

// NewClientOrFail is a fresh client (nothing learned).
func NewClientOrFail(t *testing.T) *Client { return cliNewClient(t, Options{}) }

// Each method puts the client's proof where it belongs, and nowhere else.
func TestClientAuthMethodsApply(t *testing.T) {
	t.Parallel()
	s := cliServer(t, &cliClock{}, func(cfg *authtest.Config) { cfg.Now = time.Now })
	var capture cliCapture
	front := httptest.NewServer(capture.wrap(s.Handler()))
	t.Cleanup(front.Close)
	conn := Connection{AuthURL: front.URL, Realm: s.Realm(), ClientID: authtest.DemoClientID}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(authtest.DemoClientID+":"+authtest.DemoClientSecret))
	for _, tc := range []struct {
		m          ClientAuthMethod
		formSecret bool
		header     string
	}{{"", true, ""}, {ClientSecretPost, true, ""}, {ClientSecretBasic, false, basic}} {
		c := cliNewClient(t, Options{})
		if _, err := c.Login(cliCtx(t), conn, ClientAuth{Method: tc.m, Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword); err != nil {
			t.Fatalf("%q: %v", tc.m, err)
		}
		form, auth, _ := capture.last()
		if form.Has("client_secret") != tc.formSecret || auth != tc.header {
			t.Errorf("%q: form secret %v, Authorization %q", tc.m, form.Has("client_secret"), auth)
		}
	}
	// The JWT and TLS methods say plainly that they cannot be used yet.
	for _, m := range []ClientAuthMethod{PrivateKeyJWT, ClientSecretJWT, TLSClientAuth, SelfSignedTLSClientAuth} {
		_, err := cliNewClient(t, Options{}).Login(cliCtx(t), conn, ClientAuth{Method: m, Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
		if e := cliDemoSafe(t, err, KindConfig); !strings.Contains(e.Msg, string(m)) {
			t.Errorf("%s: %v", m, err)
		}
	}
}

// A key written before client_auth existed means what it meant.
func TestConnectionAuthMethodReadsTheOldFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		conn Connection
		want ClientAuthMethod
	}{
		{Connection{}, ""},
		{Connection{BasicAuth: true}, ClientSecretBasic},
		{Connection{PublicClient: true}, ClientAuthNone},
		{Connection{ClientAuth: PrivateKeyJWT, BasicAuth: true}, PrivateKeyJWT},
	} {
		if got := tc.conn.AuthMethod(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.conn, got, tc.want)
		}
	}
	if AuthFor(Connection{PublicClient: true}, "s").Secret != "" {
		t.Error("a public client carries a secret")
	}
	for _, m := range ClientAuthMethods() {
		if got, err := ParseClientAuthMethod(string(m)); err != nil || got != m {
			t.Errorf("%s: %q %v", m, got, err)
		}
	}
	if _, err := ParseClientAuthMethod("client_secret"); KindOf(err) != KindConfig {
		t.Errorf("an unknown method: %v", err)
	}
}

// PKCE S256 on the device grant: a realm that requires it (Keycloak's
// "Missing parameter: code_challenge_method") is satisfied, and the poll
// carries the verifier that matches.
func TestDeviceGrantSendsPKCE(t *testing.T) {
	t.Parallel()
	_, conn := deviceRealm(t, func(c *authtest.Client) { c.DevicePKCE = true })
	c := cliNewClient(t, Options{})
	_, err := c.Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "device-Secret-9"}, Prompt: func(p Prompt) { approveDevice(t, p) }})
	if err != nil {
		t.Fatalf("device grant on a PKCE-requiring client: %v", err)
	}
}

// With no scope set, the interactive grants ask for openid when discovery
// lists it.
func TestInteractiveGrantsAskForOpenIDWhenListed(t *testing.T) {
	t.Parallel()
	s := cliServer(t, &cliClock{}, func(cfg *authtest.Config) { cfg.Now, cfg.DeviceInterval = time.Now, time.Second })
	conn := Connection{ClientID: authtest.DemoPublicClientID, Issuer: s.Issuer(), NoPAR: true} // the URL is read: not pushed
	c := cliNewClient(t, Options{})
	var authURL string
	ts, err := c.Obtain(cliCtx(t), GrantAuthCode, Request{Conn: conn, Wait: 20 * time.Second, Prompt: func(p Prompt) { authURL = p.AuthURL; authorize(t, p, "approve", nil) }})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	if u.Query().Get("scope") != "openid" || u.Query().Get("nonce") == "" || ts.IDToken == "" {
		t.Errorf("authcode asked scope %q (nonce %q), ID token %v", u.Query().Get("scope"), u.Query().Get("nonce"), ts.IDToken != "")
	}
	ts, err = c.Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, Prompt: func(p Prompt) { approveDevice(t, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+ts.Scope+" ", " openid ") {
		t.Errorf("device code granted scope %q, want openid in it", ts.Scope)
	}
}

// A server that requires a scope says so; the error names --scope.
func TestScopeMissingNamesTheScopeFlag(t *testing.T) {
	t.Parallel()
	e := mapStatus("authcode", http.StatusBadRequest, "invalid_request", "The scope of your request is missing", nil, nil)
	app := e.Render(func(flag, value string) string {
		if flag == "scope" {
			return "the Scope field: " + value
		}
		return FlagName(flag, value)
	})
	if !strings.Contains(e.Error(), "--scope openid") || !strings.Contains(app, "the Scope field: openid") || strings.Contains(app, "--scope") {
		t.Errorf("the line %q does not name --scope, or in the app %q the Scope field alone", e.Error(), app)
	}
	req := &http.Request{URL: &url.URL{RawQuery: url.Values{"state": {"s"}, "error": {"invalid_request"}, "error_description": {"The scope of your request is missing"}}.Encode()}}
	res := readCallback(req, "s", "", false)
	if res.err == nil || !strings.Contains(res.err.Error(), "--scope") {
		t.Errorf("the browser's answer: %v", res.err)
	}
}
