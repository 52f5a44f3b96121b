package auth_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/optest"
)

// opSubject is a client, the provider's confidential client with its
// authentication, and a token of it by client credentials: the subject of
// an exchange.
func opSubject(t *testing.T, p *optest.Provider) (*auth.Client, auth.Connection, auth.ClientAuth, *auth.TokenSet) {
	t.Helper()
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID}
	ca := auth.ClientAuth{Secret: p.ClientSecret}
	subject, err := c.Obtain(opCtx(t), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientAuth: ca})
	if err != nil {
		t.Fatal(err)
	}
	return c, conn, ca, subject
}

// Token exchange against oidc-provider (registered there as a grant, as it
// has none built in): the derived token is for the audience, and an API
// that takes only tokens for it accepts the derived one and refuses the
// key's own.
func TestOpenIDProviderTokenExchange(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c, conn, ca, subject := opSubject(t, p)
	derived, err := c.Exchange(opCtx(t), conn, ca, subject.AccessToken, auth.Exchange{Audience: p.PublicClientID})
	if err != nil {
		t.Fatal(err)
	}
	if derived.AccessToken == subject.AccessToken || !derived.Access().Stated() || derived.RefreshToken != "" {
		t.Fatalf("derived token set %+v", derived.Redacted())
	}

	api := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret, Audience: p.PublicClientID})
	t.Cleanup(api.Close)
	call := func(token string) (int, authtest.Echo) {
		req, _ := http.NewRequestWithContext(opCtx(t), http.MethodGet, api.URL()+"/v1/shipments", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e authtest.Echo
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	if status, echo := call(derived.AccessToken); status != http.StatusOK || !slices.Equal(echo.Audience, []string{p.PublicClientID}) {
		t.Errorf("derived token: %d, aud %v", status, echo.Audience)
	}
	if status, _ := call(subject.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("the key's own token (not for the API): %d, want 401", status)
	}

	_, err = c.Exchange(opCtx(t), conn, ca, subject.AccessToken, auth.Exchange{Audience: "no-such-client"})
	if auth.KindOf(err) != auth.KindServer || !strings.Contains(err.Error(), "invalid_target") || strings.Contains(err.Error(), subject.AccessToken) {
		t.Errorf("unknown audience: %v", err)
	}
}

// oidc-provider as it comes, without token exchange: one line that says
// the server does not offer it, without the subject token or the secret.
func TestOpenIDProviderWithoutTokenExchange(t *testing.T) {
	t.Parallel()
	p := optest.StartWithoutTokenExchange(t)
	c, conn, ca, subject := opSubject(t, p)
	_, err := c.Exchange(opCtx(t), conn, ca, subject.AccessToken, auth.Exchange{Audience: p.PublicClientID})
	if auth.KindOf(err) != auth.KindGrantNotAllowed || !strings.HasPrefix(err.Error(), "token-exchange: this server does not offer token exchange") {
		t.Fatalf("err = %v, want: this server does not offer token exchange", err)
	}
	if msg := err.Error(); strings.Contains(msg, subject.AccessToken) || strings.Contains(msg, p.ClientSecret) || strings.ContainsAny(msg, "\n\x1b") {
		t.Errorf("not one safe line: %q", msg)
	}
}
