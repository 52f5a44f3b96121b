package authtest

import (
	"net/http"
	"net/url"
	"testing"
)

func exchangeForm(subject, audience string) url.Values {
	return clientForm("grant_type", grantTokenExchange, "subject_token", subject,
		"subject_token_type", tokenTypeAccess, "audience", audience)
}

// RFC 8693 token exchange as Keycloak 26.2 does it: a live token of the
// client becomes one for another audience (aud), without a refresh token,
// in the same session: ending the session ends the derived token too.
func TestTokenExchangeForAnotherAudience(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	at := login(t, s).str("access_token")
	r := post(t, oidcURL(s, "token"), exchangeForm(at, DemoPublicClientID))
	if r.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.status, r.body)
	}
	if r.str("issued_token_type") != tokenTypeAccess || r.str("refresh_token") != "" || r.num("expires_in") <= 0 {
		t.Errorf("answer %s", r.body)
	}
	derived := r.str("access_token")
	claims := payload(t, derived)
	if claims["aud"] != DemoPublicClientID || claims["azp"] != DemoClientID {
		t.Errorf("aud %v azp %v", claims["aud"], claims["azp"])
	}
	if got := introspect(t, s, derived); got.json["active"] != true {
		t.Errorf("derived token not active: %s", got.body)
	}

	wantError(t, post(t, oidcURL(s, "token"), exchangeForm(at, "no-such-client")), http.StatusBadRequest, "invalid_request", "Audience not found")
	wantError(t, post(t, oidcURL(s, "token"), exchangeForm("not-a-token", DemoPublicClientID)), http.StatusBadRequest, "invalid_request", "Invalid token")
	s.EndSessions()
	if got := introspect(t, s, derived); got.json["active"] != false {
		t.Errorf("derived token outlived its session: %s", got.body)
	}
	wantError(t, post(t, oidcURL(s, "token"), exchangeForm(at, DemoPublicClientID)), http.StatusBadRequest, "invalid_request", "Invalid token")
}
