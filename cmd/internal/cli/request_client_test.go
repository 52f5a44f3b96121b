package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/tui"
)

// requestGet sends GET url with the Request screen's client (requestClient,
// shipkey api's path) for to, and reads the resource server's echo.
func requestGet(t *testing.T, st *store.Store, to tui.APITokenFor, url string) (int, authtest.Echo, int) {
	t.Helper()
	build := func(s auth.APISource, d *auth.DPoPKey) (*http.Client, error) {
		return auth.NewAPIClient(auth.APIOptions{Source: s, DPoP: d})
	}
	renewed := 0
	client, err := requestClient(keys.New(keys.Options{Store: st, Client: build, Handled: (&secretSet{}).Add}))(to, func() { renewed++ })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience(30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var echo authtest.Echo
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&echo); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, echo, renewed
}

// The Request screen's client for a DPoP-bound key (a realm client that
// requires DPoP) sends the token with a proof the resource server checks
// (htm, htu, ath, jkt against the token's cnf): 200, and the server says
// the proof passed.
func TestRequestClientPassesDPoPChecks(t *testing.T) {
	t.Parallel()
	st, srv := testStore(t, time.Now)
	_, _, err := st.Create(context.Background(), store.NewKey{Label: "dpop", ClientSecret: authtest.DemoClientSecret,
		Definition: store.Definition{Grant: auth.GrantClientCredentials,
			Connection: auth.Connection{AuthURL: srv.URL(), ClientID: authtest.DemoDPoPClientID, DPoP: true}}})
	if err != nil {
		t.Fatal(err)
	}
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret, DPoPNonce: true})
	t.Cleanup(rs.Close)
	code, echo, _ := requestGet(t, st, tui.APITokenFor{Label: "dpop"}, rs.URL()+"/v1/shipments")
	if code != http.StatusOK || !echo.DPoP || echo.ClientID != authtest.DemoDPoPClientID {
		t.Fatalf("HTTP %d, echo %+v; want 200 with the DPoP proof passed", code, echo)
	}
	if n := rs.Count("dpop"); n == 0 {
		t.Fatalf("the resource server counted %d DPoP requests", n)
	}
}

// The Request screen's Audience goes through shipkey api --audience's
// path: an API that takes only tokens for itself refuses the key's own
// token (renewed once, still refused) and takes the one exchanged for it.
func TestRequestClientExchangesForTheAudience(t *testing.T) {
	t.Parallel()
	st, srv := testStore(t, time.Now)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret, Audience: authtest.DemoDPoPClientID})
	t.Cleanup(rs.Close)
	code, _, renewed := requestGet(t, st, tui.APITokenFor{Label: "demo"}, rs.URL()+"/v1/shipments")
	if code != http.StatusUnauthorized || renewed != 1 {
		t.Fatalf("the key's own token: HTTP %d after %d renewals; want 401 after 1", code, renewed)
	}
	code, echo, renewed := requestGet(t, st, tui.APITokenFor{Label: "demo", Audience: authtest.DemoDPoPClientID}, rs.URL()+"/v1/shipments")
	if code != http.StatusOK || renewed != 0 || !slices.Contains(echo.Audience, authtest.DemoDPoPClientID) {
		t.Fatalf("with the audience: HTTP %d after %d renewals, aud %q; want 200 for %s", code, renewed, echo.Audience, authtest.DemoDPoPClientID)
	}
}
