// Package optest runs a real third-party OpenID provider for tests: the npm
// package oidc-provider, pinned in auth/testdata/oidcprovider/package-lock.json
// and driven by auth/testdata/oidcprovider/server.js, on 127.0.0.1. It also
// holds Browser, which completes the provider's development login, consent
// and device pages over HTTP as a person would.
//
// The auth package's tests call the grants directly against it; cmd/internal/cli's
// run the shipkey binary against it with Browser as a scripted $BROWSER.
//
// Setup: npm ci --prefix auth/testdata/oidcprovider (.ci/test.sh does it).
package optest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth/authtest"
)

// Provider is the running oidc-provider. ClientID is a confidential client
// (client_secret_post) allowed client credentials, the device flow, the
// authorization code grant and refresh; PublicClientID has no secret and
// all of them but client credentials. ShortClientID is ClientID again, with
// the same secret, but its access tokens live 2 s: a test sees a real expiry
// after a short wait. DPoPAPIClientID is ClientID again, with the same
// secret, whose tokens must be DPoP-bound (at the usual life: the API
// tests). All accept codes on any loopback port.
type Provider struct {
	Issuer                 string
	ClientID, ClientSecret string
	PublicClientID         string
	ShortClientID          string
	DPoPAPIClientID        string
	Hardened               Hardened
	CI                     CI
}

// Hardened are the provider's clients configured as a hardened realm would
// be (see server.js), with the keys and certificates a test hands shipkey.
// Their access tokens live 2 s. Every DPoP proof needs a server nonce.
type Hardened struct {
	// RSAClientID and ECClientID authenticate with private_key_jwt; the
	// provider holds the public halves of RSAKeyPEM and ECKeyPEM (PKCS#8).
	RSAClientID, ECClientID string
	RSAKeyPEM, ECKeyPEM     []byte
	// HMACClientID authenticates with client_secret_jwt over JWTSecret.
	HMACClientID, JWTSecret string
	// MTLSClientID authenticates with tls_client_auth: ClientCertPEM and
	// ClientKeyPEM, issued by the CA in CAPEM (which also issued the HTTPS
	// listener's certificate at MTLSURL). Its tokens are certificate-bound.
	MTLSClientID, MTLSURL       string
	CAPEM                       []byte
	ClientCertPEM, ClientKeyPEM []byte
	// DPoPClientID (client_secret_post with ClientSecret) must get
	// DPoP-bound tokens; PARClientID (likewise) must push its
	// authorization requests; DevicePKCEClientID (public) must send PKCE
	// on the device grant.
	DPoPClientID, PARClientID, DevicePKCEClientID string
	// SelfSignedClientID authenticates with self_signed_tls_client_auth:
	// SelfSignedCertPEM is a self-signed certificate (key
	// SelfSignedKeyPEM) the client registered in its JWKS (x5c).
	SelfSignedClientID                  string
	SelfSignedCertPEM, SelfSignedKeyPEM []byte
}

// Active asks the provider's introspection endpoint (RFC 7662, as the
// confidential client) whether token is still active: false once it expired
// or was revoked.
func (p *Provider) Active(token string) (bool, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	var disc struct {
		Introspection string `json:"introspection_endpoint"`
	}
	if err := getJSON(c, p.Issuer+"/.well-known/openid-configuration", &disc); err != nil {
		return false, err
	}
	if disc.Introspection == "" {
		return false, fmt.Errorf("the provider announces no introspection endpoint")
	}
	resp, err := c.PostForm(disc.Introspection, url.Values{
		"token": {token}, "client_id": {p.ClientID}, "client_secret": {p.ClientSecret},
	})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("introspection: HTTP %d", resp.StatusCode)
	}
	var res struct {
		Active bool `json:"active"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&res); err != nil {
		return false, fmt.Errorf("introspection: %w", err)
	}
	return res.Active, nil
}

// Issued reports whether the provider issued token (an opaque access
// token), whether or not it has expired since: unlike Active, it does not
// race a short-lived token's expiry.
func (p *Provider) Issued(token string) (bool, error) {
	var res struct {
		Issued bool `json:"issued"`
	}
	err := getJSON(&http.Client{Timeout: 10 * time.Second}, p.Issuer+"/test/issued?"+url.Values{"token": {token}}.Encode(), &res)
	return res.Issued, err
}

func getJSON(c *http.Client, u string, v any) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// instance is one provider a process shares, started on first use.
type instance struct {
	once    sync.Once
	p       *Provider
	failure string
	env     []string // added to server.js's environment
}

var (
	shared = &instance{}
	// noExchange is the provider without token exchange registered.
	noExchange = &instance{env: []string{"SHIPKEY_OP_NO_TOKEN_EXCHANGE=1"}}
	mu         sync.Mutex
	stops      []func()
)

// Start returns the provider shared by the tests of the process, starting it
// on first use. When node or the npm package is missing it skips the test,
// or fails it under CI=true; any other failure to start fails the test.
// Call Stop from TestMain once the tests have run.
func Start(t testing.TB) *Provider {
	t.Helper()
	return shared.start(t)
}

// StartWithoutTokenExchange is Start for a second provider, also shared,
// on which token exchange is not registered: it answers the grant
// unsupported_grant_type, as oidc-provider itself and most servers do.
func StartWithoutTokenExchange(t testing.TB) *Provider {
	t.Helper()
	return noExchange.start(t)
}

func (in *instance) start(t testing.TB) *Provider {
	t.Helper()
	in.once.Do(func() { in.p, in.failure = launch(in.env...) })
	if in.p == nil {
		if os.Getenv("CI") == "true" || !strings.HasPrefix(in.failure, "missing:") {
			t.Fatal(in.failure)
		}
		t.Skip(in.failure)
	}
	return in.p
}

// Stop ends the providers that were started.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	stops = nil
}

// dir is auth/testdata/oidcprovider, found from this file's place in the module.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "auth", "testdata", "oidcprovider")
}

func launch(extraEnv ...string) (*Provider, string) {
	d := dir()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(d, "node_modules", "oidc-provider", "package.json"))
	}
	if err != nil {
		return nil, "missing: the real OpenID provider needs node and its package: run `npm ci --prefix auth/testdata/oidcprovider` (" + err.Error() + ")"
	}
	secret := make([]byte, 12)
	_, _ = rand.Read(secret)
	p := &Provider{ClientID: "shipping-api", ClientSecret: "op-" + hex.EncodeToString(secret),
		PublicClientID: "shipping-cli", ShortClientID: "shipping-short", DPoPAPIClientID: "shipping-dpop-api"}
	hardenedEnv, err := p.Hardened.make()
	if err != nil {
		return nil, "hardened clients: " + err.Error()
	}
	ciEnv, err := p.CI.make()
	if err != nil {
		return nil, "CI logins: " + err.Error()
	}
	hardenedEnv = append(hardenedEnv, ciEnv...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, filepath.Join(d, "server.js"))
	// The secret goes through the environment, never argv.
	cmd.Env = append(os.Environ(), "SHIPKEY_OP_CLIENT_ID="+p.ClientID, "SHIPKEY_OP_CLIENT_SECRET="+p.ClientSecret,
		"SHIPKEY_OP_PUBLIC_CLIENT_ID="+p.PublicClientID, "SHIPKEY_OP_SHORT_CLIENT_ID="+p.ShortClientID)
	cmd.Env = append(cmd.Env, hardenedEnv...)
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.WaitDelay = 5 * time.Second
	var stderr LockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err.Error()
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err.Error()
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, "start node: " + err.Error()
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	mu.Lock()
	// server.js exits when its stdin closes; the context kills it otherwise.
	stops = append(stops, func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		cancel()
		<-exited
	})
	mu.Unlock()
	lines := make(chan [2]string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		mtls, _ := r.ReadString('\n')
		lines <- [2]string{strings.TrimSpace(line), strings.TrimSpace(mtls)}
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case got := <-lines:
		line := got[0]
		if !strings.HasPrefix(line, "http://127.0.0.1:") || !strings.HasPrefix(got[1], "https://127.0.0.1:") {
			return nil, fmt.Sprintf("server.js printed %q, want its issuer and its mTLS URL; stderr: %s", got, stderr.String())
		}
		p.Issuer, p.Hardened.MTLSURL = line, got[1]
	case <-exited:
		return nil, "server.js exited before printing its issuer; stderr: " + stderr.String()
	case <-time.After(60 * time.Second):
		return nil, "server.js printed no issuer in time; stderr: " + stderr.String()
	}
	return p, ""
}

// LockedBuffer collects a server's stderr for failure messages; it may be
// written from one goroutine while another reads it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Browser completes oidc-provider's pages as a person would: it fills each
// page's first form (login and password, the user code's confirmation,
// consent) and submits it, following redirects with cookies, until a page
// without a form (the device's success page, or shipkey's "you can close
// this tab" page after the redirect to the loopback callback). With Deny it
// presses the page's abort instead.
type Browser struct {
	Deny bool
	// Login is the login name it signs in with; "" is alice. The
	// provider's accounts are any name, with preferred_username that name
	// and email NAME@example.com (at userinfo, as the spec has it for the
	// code flow, with the profile and email scopes).
	Login string
	// Roots, when set, are the CAs its HTTPS requests trust (a verification
	// URL at the provider's mTLS listener, whose certificate the test CA
	// issued); nil: the system's.
	Roots *x509.CertPool
}

var (
	formRe   = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`)
	inputRe  = regexp.MustCompile(`(?is)<(?:input|button)\b([^>]*)>`)
	attrRe   = regexp.MustCompile(`(?is)([a-z_-]+)="([^"]*)"`)
	abortRe  = regexp.MustCompile(`(?is)href="([^"]*/abort)"`)
	titleTag = regexp.MustCompile(`(?is)<title>(.*?)</title>`)
)

func attrs(s string) map[string]string {
	m := map[string]string{}
	for _, a := range attrRe.FindAllStringSubmatch(s, -1) {
		m[strings.ToLower(a[1])] = html.UnescapeString(a[2])
	}
	return m
}

// Visit opens start and walks the pages, at most a few; it returns the last
// page's title and its HTTP status.
func (b Browser) Visit(start string) (title string, status int, err error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	if b.Roots != nil {
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: b.Roots, MinVersion: tls.VersionTLS12}}
	}
	resp, err := c.Get(start)
	for step := 0; ; step++ {
		if err != nil {
			return "", 0, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		page, base := string(body), resp.Request.URL
		title = ""
		if m := titleTag.FindStringSubmatch(page); m != nil {
			title = strings.TrimSpace(m[1])
		}
		if step > 8 {
			return title, resp.StatusCode, fmt.Errorf("still at %q after %d pages", title, step)
		}
		if b.Deny {
			if m := abortRe.FindStringSubmatch(page); m != nil {
				u, _ := base.Parse(html.UnescapeString(m[1]))
				resp, err = c.Get(u.String())
				continue
			}
		}
		f := formRe.FindStringSubmatch(page)
		if f == nil {
			return title, resp.StatusCode, nil
		}
		form := url.Values{}
		for _, in := range inputRe.FindAllStringSubmatch(f[2], -1) {
			a := attrs(in[1])
			switch name := a["name"]; {
			case name == "":
			case name == "login":
				form.Set(name, cmp.Or(b.Login, "alice"))
			case name == "password":
				form.Set(name, "any password")
			case name == "abort":
				if b.Deny {
					form.Set(name, a["value"])
				}
			default:
				form.Set(name, a["value"])
			}
		}
		action, _ := base.Parse(attrs(f[1])["action"])
		resp, err = c.PostForm(action.String(), form)
	}
}

// make fills in the hardened clients' keys and certificates and returns the
// environment server.js reads them from (public keys, the CA and the
// listener's certificate; the JWT secret, a test value, too).
func (h *Hardened) make() ([]string, error) {
	h.RSAClientID, h.ECClientID, h.HMACClientID, h.MTLSClientID = "shipping-rsa", "shipping-ec", "shipping-hmac", "shipping-mtls"
	h.DPoPClientID, h.PARClientID, h.DevicePKCEClientID = "shipping-dpop", "shipping-par", "shipping-device-pkce"
	h.SelfSignedClientID = "shipping-selfsigned"
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	h.JWTSecret = "op-jwt-" + hex.EncodeToString(secret)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	env := []string{"SHIPKEY_OP_JWT_SECRET=" + h.JWTSecret}
	for _, k := range []struct {
		name string
		key  crypto.Signer
		pem  *[]byte
	}{{"SHIPKEY_OP_RSA_JWKS", rsaKey, &h.RSAKeyPEM}, {"SHIPKEY_OP_EC_JWKS", ecKey, &h.ECKeyPEM}} {
		der, err := x509.MarshalPKCS8PrivateKey(k.key)
		if err != nil {
			return nil, err
		}
		*k.pem = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		pub := jose.JSONWebKey{Key: k.key.Public(), Use: "sig"}
		tp, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			return nil, err
		}
		pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
		set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}})
		if err != nil {
			return nil, err
		}
		env = append(env, k.name+"="+string(set))
	}
	ca, err := authtest.NewCA("oidc-provider test CA")
	if err != nil {
		return nil, err
	}
	h.CAPEM = ca.CertPEM()
	if h.ClientCertPEM, h.ClientKeyPEM, err = ca.IssueClient(h.MTLSClientID); err != nil {
		return nil, err
	}
	serverCert, serverKey, err := ca.IssueServer()
	if err != nil {
		return nil, err
	}
	selfJWKS, err := h.selfSigned()
	if err != nil {
		return nil, err
	}
	env = append(env, "SHIPKEY_OP_SELFSIGNED_JWKS="+selfJWKS)
	return append(env, "SHIPKEY_OP_TLS_CA="+string(h.CAPEM), "SHIPKEY_OP_TLS_CERT="+string(serverCert), "SHIPKEY_OP_TLS_KEY="+string(serverKey)), nil
}

// selfSigned makes the self_signed_tls_client_auth client's certificate and
// returns the JWKS that registers it (the key with its certificate in x5c,
// which oidc-provider matches by x5t#S256).
func (h *Hardened) selfSigned() (string, error) {
	var err error
	if h.SelfSignedCertPEM, h.SelfSignedKeyPEM, err = authtest.SelfSignedClient(h.SelfSignedClientID); err != nil {
		return "", err
	}
	block, _ := pem.Decode(h.SelfSignedCertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.Raw)
	jwk := jose.JSONWebKey{Key: cert.PublicKey, Use: "sig", Certificates: []*x509.Certificate{cert}, CertificateThumbprintSHA256: sum[:]}
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk}})
	return string(set), err
}
