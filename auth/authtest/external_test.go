package authtest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// The demo realm's external issuer mints tokens at /ci/token (as a CI
// system's token request URL does) that are a JWT bearer grant for the
// linked user and the federated client's authentication; discovery lists
// the grant. A realm without the issuer has none of it.
func TestExternalIssuerMintsAndTheRealmTakesIt(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, nil)
	mint := get(t, s.URL()+"/ci/token?ttl=1m")
	tok := strings.TrimSpace(string(mint.body))
	if mint.status != http.StatusOK || strings.Count(tok, ".") != 2 {
		t.Fatalf("/ci/token: %d %q", mint.status, mint.body)
	}
	claims := payload(t, tok)
	if claims["iss"] != s.External().URL || claims["sub"] != DemoCISubject {
		t.Fatalf("minted claims %v", claims)
	}
	if d := get(t, s.External().URL+"/.well-known/openid-configuration"); d.str("issuer") != s.External().URL {
		t.Fatalf("the issuer's discovery: %s", d.body)
	}
	grant := url.Values{"grant_type": {jwtBearerGrant}, "assertion": {tok}, "client_id": {DemoCIClientID},
		"client_assertion_type": {clientAssertionType}, "client_assertion": {tok}}
	r := post(t, oidcURL(s, "/token"), grant)
	if r.status != http.StatusOK || r.str("access_token") == "" || r.str("refresh_token") != "" {
		t.Fatalf("jwt-bearer grant: %d %s", r.status, r.body)
	}
	if got := payload(t, r.str("access_token"))["preferred_username"]; got != DemoUsername {
		t.Fatalf("signed in as %v", got)
	}
	if got := s.Assertions(); len(got) != 2 || got[0] != tok || got[1] != tok {
		t.Fatalf("assertions seen: %d", len(got))
	}
	disc := get(t, s.Issuer()+"/.well-known/openid-configuration")
	if types, _ := disc.json["grant_types_supported"].([]any); !slices.Contains(types, any(jwtBearerGrant)) {
		t.Fatalf("discovery lists %v", types)
	}
	clock.Advance(2 * time.Minute)
	wantError(t, post(t, oidcURL(s, "/token"), grant), http.StatusBadRequest, "invalid_client", "Client authentication with signed JWT failed: Token is not active")

	plain, _ := newTest(t, func(c *Config) { c.ExternalIssuer = false })
	if r := get(t, plain.URL()+"/ci/token"); r.status != http.StatusNotFound {
		t.Fatalf("a realm without an external issuer mints: %d", r.status)
	}
}
