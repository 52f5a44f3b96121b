package authtest

import (
	"crypto"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
)

// The hardened realm's switches, driven by the client-side building blocks
// of package auth (assertions, DPoP proofs) as shipkey sends them.

const longSecret = "a-client-secret-of-thirty-two-bytes-or-more"

func hardenedTest(t *testing.T, mod func(*Config)) (*Server, *fakeClock) {
	t.Helper()
	return newTest(t, mod)
}

func jwksOf(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1"}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ccForm(kv ...string) url.Values {
	f := url.Values{"grant_type": {"client_credentials"}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

func TestPrivateKeyJWTAuthenticatesAndRefusesReplays(t *testing.T) {
	t.Parallel()
	key, _ := auth.GenerateClientKey()
	s, clock := hardenedTest(t, func(c *Config) {
		c.Clients = append(c.Clients, Client{ID: "signed", AuthMethod: AuthPrivateKeyJWT, ServiceAccount: true,
			JWKS: jwksOf(t, key.Public())})
	})
	tokenURL := oidcURL(s, "token")
	a, err := auth.KeyAssertion("signed", tokenURL, key, "k1", jose.ES256, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", a))
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	again := post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", a))
	wantError(t, again, http.StatusBadRequest, "invalid_client", "Client authentication with signed JWT failed: Token reuse detected")

	other, _ := auth.GenerateClientKey()
	bad, _ := auth.KeyAssertion("signed", tokenURL, other, "k1", jose.ES256, clock.Now())
	wantError(t, post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", bad)),
		http.StatusBadRequest, "invalid_client", "Client authentication with signed JWT failed: Signature on JWT token failed validation")

	wrongAud, _ := auth.KeyAssertion("signed", "https://elsewhere.example/token", key, "k1", jose.ES256, clock.Now())
	r = post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", wrongAud))
	if r.status != http.StatusBadRequest || !strings.Contains(r.str("error_description"), "audience") {
		t.Errorf("another audience: %d %s", r.status, r.body)
	}
	old, _ := auth.KeyAssertion("signed", tokenURL, key, "k1", jose.ES256, clock.Now())
	clock.Advance(2 * auth.AssertionLifetime)
	wantError(t, post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", old)),
		http.StatusBadRequest, "invalid_client", "Client authentication with signed JWT failed: Token is not active")

	// A client secret where a signed JWT is required names the parameter.
	wantError(t, post(t, tokenURL, ccForm("client_id", "signed", "client_secret", "x")),
		http.StatusBadRequest, "invalid_client", "Parameter client_assertion_type is missing")
}

func TestClientSecretJWT(t *testing.T) {
	t.Parallel()
	s, clock := hardenedTest(t, func(c *Config) {
		c.Clients = append(c.Clients, Client{ID: "hmac", Secret: longSecret, AuthMethod: AuthClientSecretJWT, ServiceAccount: true})
	})
	tokenURL := oidcURL(s, "token")
	a, err := auth.SecretAssertion("hmac", s.Issuer(), longSecret, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", a)); r.status != http.StatusOK {
		t.Fatalf("the issuer as audience: %d %s", r.status, r.body)
	}
	bad, _ := auth.SecretAssertion("hmac", tokenURL, strings.Repeat("x", 40), clock.Now())
	wantError(t, post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", bad)),
		http.StatusBadRequest, "invalid_client", "Client authentication with signed JWT failed: Signature on JWT token failed validation")
}

func mtlsClient(t *testing.T, s *Server, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: s.CA().Pool(), MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func TestTLSClientAuthBindsTokensToTheCertificate(t *testing.T) {
	t.Parallel()
	s, _ := hardenedTest(t, func(c *Config) {
		c.MTLS = true
		c.Clients = append(c.Clients, Client{ID: "x509", AuthMethod: AuthTLSClient, ServiceAccount: true})
	})
	var disc struct {
		Aliases map[string]string `json:"mtls_endpoint_aliases"`
		Methods []string          `json:"token_endpoint_auth_methods_supported"`
		PAR     string            `json:"pushed_authorization_request_endpoint"`
		DPoP    []string          `json:"dpop_signing_alg_values_supported"`
	}
	d := get(t, s.Issuer()+"/.well-known/openid-configuration")
	if err := json.Unmarshal(d.body, &disc); err != nil {
		t.Fatal(err)
	}
	tokenURL := disc.Aliases["token_endpoint"]
	if !strings.HasPrefix(tokenURL, s.MTLSURL()) || disc.PAR == "" || len(disc.DPoP) == 0 || !strings.Contains(strings.Join(disc.Methods, " "), "tls_client_auth") {
		t.Fatalf("discovery: %+v", disc)
	}
	certPEM, keyPEM, err := s.CA().IssueClient("x509")
	if err != nil {
		t.Fatal(err)
	}
	form := ccForm("client_id", "x509").Encode()
	resp, err := mtlsClient(t, s, certPEM, keyPEM).Post(tokenURL, "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cnf, _ := payload(t, tok.AccessToken)["cnf"].(map[string]any)
	c, _ := tls.X509KeyPair(certPEM, keyPEM)
	if cnf["x5t#S256"] != auth.CertificateThumbprint(c.Certificate[0]) {
		t.Errorf("cnf %v, want the certificate's thumbprint", cnf)
	}
	if iss := payload(t, tok.AccessToken)["iss"]; iss != s.Issuer() {
		t.Errorf("iss %v over mTLS, want %s", iss, s.Issuer())
	}

	other, _ := NewCA("another CA")
	otherCert, otherKey, _ := other.IssueClient("x509")
	for name, hc := range map[string]*http.Client{
		"another CA's certificate": mtlsClient(t, s, otherCert, otherKey),
		"no certificate":           mtlsClient(t, s, nil, nil),
	} {
		resp, err := hc.Post(tokenURL, "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
	}
}

func dpopHeader(t *testing.T, k *auth.DPoPKey, method, u, tok, nonce string, now time.Time) func(*http.Request) {
	t.Helper()
	p, err := k.Proof(method, u, tok, nonce, now)
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) { r.Header.Set("DPoP", p) }
}

func TestDPoPBindsTokensAndAsksForNonces(t *testing.T) {
	t.Parallel()
	s, clock := hardenedTest(t, func(c *Config) {
		c.DPoPNonces = true
		c.Clients[0].DPoP = true
	})
	tokenURL := oidcURL(s, "token")
	wantError(t, post(t, tokenURL, passwordForm()), http.StatusBadRequest, "invalid_request", "DPoP proof is missing")

	k, _ := auth.NewDPoPKey()
	r := post(t, tokenURL, passwordForm(), dpopHeader(t, k, "POST", tokenURL, "", "", clock.Now()))
	wantError(t, r, http.StatusBadRequest, "use_dpop_nonce", "")
	nonce := r.header.Get("DPoP-Nonce")
	if nonce == "" {
		t.Fatal("use_dpop_nonce without a DPoP-Nonce header")
	}
	h := dpopHeader(t, k, "POST", tokenURL, "", nonce, clock.Now())
	r = post(t, tokenURL, passwordForm(), h)
	if r.status != http.StatusOK || r.str("token_type") != "DPoP" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	cnf, _ := payload(t, r.str("access_token"))["cnf"].(map[string]any)
	if cnf["jkt"] != k.JKT() {
		t.Errorf("cnf %v, want jkt %s", cnf, k.JKT())
	}
	wantError(t, post(t, tokenURL, passwordForm(), h), http.StatusBadRequest, "invalid_dpop_proof", "DPoP proof has already been used")

	// The refresh needs a proof by the same key.
	rt, at := r.str("refresh_token"), r.str("access_token")
	wantError(t, refresh(t, s, rt), http.StatusBadRequest, "invalid_request", "DPoP proof is missing")
	other, _ := auth.NewDPoPKey()
	wantError(t, post(t, tokenURL, url.Values{"grant_type": {"refresh_token"}, "client_id": {DemoClientID}, "client_secret": {DemoClientSecret}, "refresh_token": {rt}},
		dpopHeader(t, other, "POST", tokenURL, "", nonce, clock.Now())), http.StatusBadRequest, "invalid_dpop_proof", "")
	r = post(t, tokenURL, url.Values{"grant_type": {"refresh_token"}, "client_id": {DemoClientID}, "client_secret": {DemoClientSecret}, "refresh_token": {rt}},
		dpopHeader(t, k, "POST", tokenURL, "", nonce, clock.Now()))
	if r.status != http.StatusOK || r.str("token_type") != "DPoP" {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}

	// The bound token is no bearer token at a resource.
	if got := get(t, oidcURL(s, "userinfo"), bearer(at)); got.status != http.StatusUnauthorized {
		t.Errorf("userinfo with the bound token as Bearer: %d", got.status)
	}
	ui := oidcURL(s, "userinfo")
	got := get(t, ui, func(r *http.Request) { r.Header.Set("Authorization", "DPoP "+at) }, dpopHeader(t, k, "GET", ui, at, "", clock.Now()))
	if got.status != http.StatusOK {
		t.Errorf("userinfo with DPoP: %d %s", got.status, got.body)
	}
}

func TestCheckDPoPRefusesWhatRFC9449Refuses(t *testing.T) {
	t.Parallel()
	k, _ := auth.NewDPoPKey()
	now := time.Unix(1_800_000_000, 0)
	const u = "https://api.example/v1/shipments"
	check := func(proof string, req DPoPRequest) error {
		req.Now = now
		_, err := CheckDPoP(proof, req)
		return err
	}
	good, _ := k.Proof("GET", u+"?page=2", "tok", "", now)
	var replay ReplayCache
	if err := check(good, DPoPRequest{Method: "GET", URL: u, AccessToken: "tok", Replay: &replay}); err != nil {
		t.Fatalf("a good proof: %v", err)
	}
	for name, tc := range map[string]struct {
		proof string
		req   DPoPRequest
		want  string
	}{
		"replayed":        {good, DPoPRequest{Method: "GET", URL: u, AccessToken: "tok", Replay: &replay}, "already been used"},
		"method":          {good, DPoPRequest{Method: "POST", URL: u, AccessToken: "tok"}, "method mismatch"},
		"url":             {good, DPoPRequest{Method: "GET", URL: "https://api.example/v2", AccessToken: "tok"}, "URL mismatch"},
		"token":           {good, DPoPRequest{Method: "GET", URL: u, AccessToken: "another"}, "hash mismatch"},
		"nonce":           {good, DPoPRequest{Method: "GET", URL: u, AccessToken: "tok", Nonce: "n"}, "use_dpop_nonce"},
		"not a proof":     {"abc.def.ghi", DPoPRequest{Method: "GET", URL: u}, "invalid_dpop_proof"},
		"stale":           {mustProof(t, k, "GET", u, now.Add(-10*time.Minute)), DPoPRequest{Method: "GET", URL: u}, "not active"},
		"from the future": {mustProof(t, k, "GET", u, now.Add(10*time.Minute)), DPoPRequest{Method: "GET", URL: u}, "not active"},
	} {
		if err := check(tc.proof, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func mustProof(t *testing.T, k *auth.DPoPKey, m, u string, at time.Time) string {
	t.Helper()
	p, err := k.Proof(m, u, "", "", at)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var noRedirect = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestPushedAuthorizationRequests(t *testing.T) {
	t.Parallel()
	s, clock := hardenedTest(t, func(c *Config) { c.Clients[0].RequirePAR = true })
	const redirect = "http://127.0.0.1:9/callback"
	authURL := oidcURL(s, "auth")
	q := url.Values{"response_type": {"code"}, "client_id": {DemoClientID}, "redirect_uri": {redirect}, "state": {"st"}}
	resp, err := noRedirect.Get(authURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil || loc.Query().Get("error_description") != "Pushed Authorization Request is only allowed." {
		t.Fatalf("an unpushed request: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	k, _ := auth.NewDPoPKey()
	parURL := oidcURL(s, "ext/par/request")
	push := clientForm("response_type", "code", "redirect_uri", redirect, "state", "st", "code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method", "S256")
	r := post(t, parURL, push, dpopHeader(t, k, "POST", parURL, "", "", clock.Now()))
	uri := r.str("request_uri")
	if r.status != http.StatusCreated || !strings.HasPrefix(uri, "urn:ietf:params:oauth:request_uri:") {
		t.Fatalf("PAR: %d %s", r.status, r.body)
	}
	approve := url.Values{"client_id": {DemoClientID}, "request_uri": {uri}, "username": {DemoUsername}, "password": {DemoPassword}, "action": {"approve"}}
	resp, err = noRedirect.PostForm(authURL, approve)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ = url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if code == "" || loc.Query().Get("state") != "st" {
		t.Fatalf("approval: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The request_uri is used once.
	resp, _ = noRedirect.PostForm(authURL, approve)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a used request_uri: %d", resp.StatusCode)
	}
	// The PAR request's DPoP key is the one the code is bound to.
	tokenURL := oidcURL(s, "token")
	redeem := clientForm("grant_type", "authorization_code", "code", code, "redirect_uri", redirect, "code_verifier", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
	other, _ := auth.NewDPoPKey()
	wantError(t, post(t, tokenURL, redeem, dpopHeader(t, other, "POST", tokenURL, "", "", clock.Now())),
		http.StatusBadRequest, "invalid_dpop_proof", "DPoP Proof public key thumbprint does not match dpop_jkt")
}

func TestDevicePKCE(t *testing.T) {
	t.Parallel()
	s, _ := hardenedTest(t, func(c *Config) { c.Clients[0].DevicePKCE = true })
	devURL := oidcURL(s, "auth/device")
	wantError(t, post(t, devURL, clientForm()), http.StatusBadRequest, "invalid_request", "Missing parameter: code_challenge_method")
	r := post(t, devURL, clientForm("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method", "S256"))
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	resp, err := http.PostForm(s.Issuer()+"/device", url.Values{"user_code": {r.str("user_code")}, "username": {DemoUsername}, "password": {DemoPassword}, "action": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	poll := clientForm("grant_type", grantDeviceCode, "device_code", r.str("device_code"))
	wantError(t, post(t, oidcURL(s, "token"), poll), http.StatusBadRequest, "invalid_grant", "PKCE code verifier not specified")
	poll.Set("code_verifier", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
	if r := post(t, oidcURL(s, "token"), poll); r.status != http.StatusOK {
		t.Fatalf("with the verifier: %d %s", r.status, r.body)
	}
}

func TestDemoRealmAcceptsTheHardenedClients(t *testing.T) {
	t.Parallel()
	s, clock := hardenedTest(t, nil)
	tokenURL := oidcURL(s, "token")
	a, err := auth.SecretAssertion(DemoJWTClientID, tokenURL, DemoJWTSecret, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, tokenURL, ccForm("client_assertion_type", auth.ClientAssertionType, "client_assertion", a)); r.status != http.StatusOK {
		t.Fatalf("client_secret_jwt: %d %s", r.status, r.body)
	}
	form := ccForm("client_id", DemoDPoPClientID, "client_secret", DemoClientSecret)
	wantError(t, post(t, tokenURL, form), http.StatusBadRequest, "invalid_request", "DPoP proof is missing")
	k, _ := auth.NewDPoPKey()
	r := post(t, tokenURL, form, dpopHeader(t, k, "POST", tokenURL, "", "", clock.Now()))
	if r.status != http.StatusOK || r.str("token_type") != "DPoP" {
		t.Fatalf("with a proof: %d %s", r.status, r.body)
	}
}
