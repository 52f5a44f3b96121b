package auth

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/auth/authtest"
)

// A token exchange is one form POST on the one request path: exactly RFC
// 8693's fields, with the key's client authentication wherever the key puts
// it; the answer is a token whose aud is the audience.
func TestExchangeRequest(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	var capt cliCapture
	front := httptest.NewServer(capt.wrap(s.Handler()))
	defer front.Close()
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := Connection{AuthURL: front.URL, ClientID: authtest.DemoClientID}
	subject := cliLogin(t, c, conn)

	x := Exchange{Audience: authtest.DemoPublicClientID, Resource: "https://api.example.com", Scopes: []string{"email"}, RequestedTokenType: TokenTypeAccess}
	ts, err := c.Exchange(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, subject.AccessToken, x)
	if err != nil {
		t.Fatal(err)
	}
	form, authz, _ := capt.last()
	want := url.Values{
		"client_id": {authtest.DemoClientID}, "client_secret": {authtest.DemoClientSecret},
		"grant_type": {GrantTokenExchange}, "subject_token": {subject.AccessToken}, "subject_token_type": {TokenTypeAccess},
		"audience": {authtest.DemoPublicClientID}, "resource": {"https://api.example.com"}, "scope": {"email"},
		"requested_token_type": {TokenTypeAccess},
	}
	if fmt.Sprint(form) != fmt.Sprint(want) || authz != "" {
		t.Errorf("exchange form = %v (Authorization %q), want exactly %v", cliKeys(form), authz, cliKeys(want))
	}
	if aud := jwtClaim(t, ts.AccessToken, "aud"); aud != authtest.DemoPublicClientID {
		t.Errorf("aud = %v, want %s", aud, authtest.DemoPublicClientID)
	}
	if ts.RefreshToken != "" || !ts.Access().Stated() || ts.AccessToken == subject.AccessToken {
		t.Errorf("derived token set %+v", ts.Redacted())
	}

	// HTTP Basic: the client authentication moves to the header, as for
	// every other request.
	conn.BasicAuth = true
	if _, err := c.Exchange(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, subject.AccessToken, Exchange{Audience: authtest.DemoPublicClientID}); err != nil {
		t.Fatal(err)
	}
	form, authz, _ = capt.last()
	if form.Has("client_secret") || !strings.HasPrefix(authz, "Basic ") || form.Has("resource") || form.Has("scope") {
		t.Errorf("basic: form %v, Authorization %q", cliKeys(form), authz)
	}
}

// jwtClaim is one claim of a JWT's payload, read without verifying.
func jwtClaim(t *testing.T, token, name string) any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatal("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p[name]
}

// Refusals are one line without the subject token or the client secret.
func TestExchangeRefusals(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := cliConn(s)
	ca := ClientAuth{Secret: authtest.DemoClientSecret}
	subject := cliLogin(t, c, conn).AccessToken

	_, err := c.Exchange(cliCtx(t), conn, ca, subject, Exchange{Audience: "no-such-client"})
	e := cliDemoSafe(t, err, KindServer, subject)
	if !strings.Contains(e.Error(), "the server refused the token exchange") || !strings.Contains(e.Error(), "Audience not found") {
		t.Errorf("unknown audience: %v", e)
	}
	_, err = c.Exchange(cliCtx(t), conn, ca, "not-a-live-token", Exchange{Audience: authtest.DemoPublicClientID})
	cliDemoSafe(t, err, KindServer, subject)

	for _, x := range []Exchange{{}, {Scopes: []string{"email"}}, {Audience: "a b"}, {Audience: "a\x1b[2J"}, {Resource: "/relative"}, {Resource: "https://x#frag"}} {
		_, err := c.Exchange(cliCtx(t), conn, ca, subject, x)
		cliDemoSafe(t, err, KindConfig, subject)
	}

	off := cliServer(t, clock, func(c *authtest.Config) { c.NoTokenExchange = true })
	conn = cliConn(off)
	subject = cliLogin(t, c, conn).AccessToken
	_, err = c.Exchange(cliCtx(t), conn, ca, subject, Exchange{Audience: authtest.DemoPublicClientID})
	e = cliDemoSafe(t, err, KindGrantNotAllowed, subject)
	if !strings.HasPrefix(e.Error(), "token-exchange: this server does not offer token exchange") || strings.ContainsAny(e.Error(), "\n\x1b") {
		t.Errorf("no token exchange: %q", e.Error())
	}
}
