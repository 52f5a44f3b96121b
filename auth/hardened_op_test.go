package auth_test

// The hardened clients of the real oidc-provider (see server.js), asked by
// hand with auth's building blocks (assertions, DPoP proofs, a client
// certificate) as shipkey's single request path sends them.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/optest"
)

type opAnswer struct {
	status int
	header http.Header
	body   map[string]any
}

func (a opAnswer) str(k string) string { v, _ := a.body[k].(string); return v }

func opPost(t *testing.T, hc *http.Client, u string, form url.Values, dpop string) opAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if dpop != "" {
		req.Header.Set("DPoP", dpop)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := opAnswer{status: resp.StatusCode, header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&a.body)
	return a
}

type opDiscovery struct {
	Token   string            `json:"token_endpoint"`
	Device  string            `json:"device_authorization_endpoint"`
	PAR     string            `json:"pushed_authorization_request_endpoint"`
	Auth    string            `json:"authorization_endpoint"`
	Aliases map[string]string `json:"mtls_endpoint_aliases"`
	DPoP    []string          `json:"dpop_signing_alg_values_supported"`
	Methods []string          `json:"token_endpoint_auth_methods_supported"`
}

func discoverOP(t *testing.T, issuer string) opDiscovery {
	t.Helper()
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d opDiscovery
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// hardenedOP starts (or shares) the provider and reads its discovery.
func hardenedOP(t *testing.T) (*optest.Provider, opDiscovery, *http.Client) {
	t.Helper()
	p := startOP(t)
	return p, discoverOP(t, p.Issuer), &http.Client{Timeout: 20 * time.Second}
}

func TestOpenIDProviderHardenedClientAuthentication(t *testing.T) {
	t.Parallel()
	p, d, hc := hardenedOP(t)
	h := p.Hardened
	cc := func(kv ...string) url.Values {
		f := url.Values{"grant_type": {"client_credentials"}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	for _, tc := range []struct {
		id  string
		pem []byte
	}{{h.RSAClientID, h.RSAKeyPEM}, {h.ECClientID, h.ECKeyPEM}} {
		key, _, err := auth.ParseClientKey(tc.pem)
		if err != nil {
			t.Fatal(err)
		}
		kid, _ := auth.KeyThumbprint(key.Public())
		alg, err := auth.SigningAlg(key, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := auth.KeyAssertion(tc.id, d.Token, key, kid, alg, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := opPost(t, hc, d.Token, cc("client_assertion_type", auth.ClientAssertionType, "client_assertion", a), ""); got.status != http.StatusOK {
			t.Errorf("%s (%s): %d %v", tc.id, alg, got.status, got.body)
		}
		other, _ := auth.GenerateClientKey()
		bad, _ := auth.KeyAssertion(tc.id, d.Token, other, kid, jose.ES256, time.Now())
		if got := opPost(t, hc, d.Token, cc("client_assertion_type", auth.ClientAssertionType, "client_assertion", bad), ""); got.status != http.StatusUnauthorized || got.str("error") != "invalid_client" {
			t.Errorf("%s with another key: %d %v", tc.id, got.status, got.body)
		}
	}
	a, err := auth.SecretAssertion(h.HMACClientID, d.Token, h.JWTSecret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := opPost(t, hc, d.Token, cc("client_assertion_type", auth.ClientAssertionType, "client_assertion", a), ""); got.status != http.StatusOK {
		t.Errorf("client_secret_jwt: %d %v", got.status, got.body)
	}

	// tls_client_auth at the mTLS alias, with the CA's certificate.
	mtlsToken := d.Aliases["token_endpoint"]
	if !strings.HasPrefix(mtlsToken, h.MTLSURL) {
		t.Fatalf("mtls_endpoint_aliases %v", d.Aliases)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(h.CAPEM)
	cert, err := tls.X509KeyPair(h.ClientCertPEM, h.ClientKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	withCert := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	if got := opPost(t, withCert, mtlsToken, cc("client_id", h.MTLSClientID), ""); got.status != http.StatusOK {
		t.Errorf("tls_client_auth: %d %v", got.status, got.body)
	}
	withoutCert := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	if got := opPost(t, withoutCert, mtlsToken, cc("client_id", h.MTLSClientID), ""); got.status != http.StatusUnauthorized {
		t.Errorf("tls_client_auth without a certificate: %d %v", got.status, got.body)
	}
}

func TestOpenIDProviderHardenedDPoPPARAndDevicePKCE(t *testing.T) {
	t.Parallel()
	p, d, hc := hardenedOP(t)
	h := p.Hardened
	if len(d.DPoP) == 0 || d.PAR == "" {
		t.Fatalf("discovery %+v", d)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {h.DPoPClientID}, "client_secret": {p.ClientSecret}}
	missing := opPost(t, hc, d.Token, form, "")
	if missing.status != http.StatusBadRequest {
		t.Errorf("no proof: %d %v", missing.status, missing.body)
	}
	t.Logf("oidc-provider without a proof: %d %v", missing.status, missing.body)
	k, _ := auth.NewDPoPKey()
	proof, _ := k.Proof("POST", d.Token, "", "", time.Now())
	first := opPost(t, hc, d.Token, form, proof)
	nonce := first.header.Get("DPoP-Nonce")
	if first.str("error") != "use_dpop_nonce" || nonce == "" {
		t.Fatalf("a proof without a nonce: %d %v", first.status, first.body)
	}
	proof, _ = k.Proof("POST", d.Token, "", nonce, time.Now())
	got := opPost(t, hc, d.Token, form, proof)
	if got.status != http.StatusOK || got.str("token_type") != "DPoP" {
		t.Fatalf("with the nonce: %d %v", got.status, got.body)
	}

	// PAR required: a plain authorization request is refused, a pushed one
	// gets a request_uri.
	q := url.Values{"client_id": {h.PARClientID}, "response_type": {"code"}, "redirect_uri": {"http://127.0.0.1:9/callback"},
		"scope": {"openid"}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	noFollow := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(d.Auth + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil || loc.Query().Get("error") != "invalid_request" {
		t.Errorf("an unpushed request: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	t.Logf("oidc-provider without PAR: %s", loc.Query().Get("error_description"))
	push := url.Values{"client_secret": {p.ClientSecret}}
	for k, v := range q {
		push[k] = v
	}
	if got := opPost(t, hc, d.PAR, push, ""); got.status != http.StatusCreated || !strings.HasPrefix(got.str("request_uri"), "urn:") {
		t.Errorf("PAR: %d %v", got.status, got.body)
	}

	// PKCE on the device grant.
	dev := url.Values{"client_id": {h.DevicePKCEClientID}, "scope": {"openid"}}
	if got := opPost(t, hc, d.Device, dev, ""); got.str("error_description") != "Missing parameter: code_challenge_method" {
		t.Errorf("device without PKCE: %d %v", got.status, got.body)
	}
	dev.Set("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
	dev.Set("code_challenge_method", "S256")
	started := opPost(t, hc, d.Device, dev, "")
	if started.status != http.StatusOK {
		t.Fatalf("device with PKCE: %d %v", started.status, started.body)
	}
	poll := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "client_id": {h.DevicePKCEClientID}, "device_code": {started.str("device_code")}}
	if got := opPost(t, hc, d.Token, poll, ""); got.str("error_description") != "PKCE code verifier not specified" {
		t.Errorf("poll without the verifier: %d %v", got.status, got.body)
	}
	poll.Set("code_verifier", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
	if got := opPost(t, hc, d.Token, poll, ""); got.str("error") != "authorization_pending" {
		t.Errorf("poll with the verifier: %d %v", got.status, got.body)
	}
}
