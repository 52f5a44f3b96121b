package authtest

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTest starts a demo server with a fake clock; mod may change the config.
func newTest(t *testing.T, mod func(*Config)) (*Server, *fakeClock) {
	t.Helper()
	clock := newClock()
	cfg := DemoConfig()
	cfg.Now = clock.Now
	if mod != nil {
		mod(&cfg)
	}
	s := NewServer(cfg)
	t.Cleanup(s.Close)
	return s, clock
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

type result struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (r *result) str(k string) string {
	v, _ := r.json[k].(string)
	return v
}

func (r *result) num(k string) float64 {
	v, _ := r.json[k].(float64)
	return v
}

func do(t *testing.T, req *http.Request) *result {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	r := &result{status: resp.StatusCode, header: resp.Header, body: body}
	if len(body) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &r.json) // callers that need JSON check r.json

	}
	return r
}

func post(t *testing.T, u string, form url.Values, edit ...func(*http.Request)) *result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, e := range edit {
		e(req)
	}
	return do(t, req)
}

func get(t *testing.T, u string, edit ...func(*http.Request)) *result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edit {
		e(req)
	}
	return do(t, req)
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func oidcURL(s *Server, path string) string {
	return s.Issuer() + "/protocol/openid-connect/" + path
}

func passwordForm() url.Values {
	return url.Values{
		"grant_type":    {"password"},
		"client_id":     {DemoClientID},
		"client_secret": {DemoClientSecret},
		"username":      {DemoUsername},
		"password":      {DemoPassword},
	}
}

func login(t *testing.T, s *Server) *result {
	t.Helper()
	r := post(t, oidcURL(s, "token"), passwordForm())
	if r.status != http.StatusOK {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	return r
}

func refresh(t *testing.T, s *Server, rt string) *result {
	t.Helper()
	return post(t, oidcURL(s, "token"), url.Values{
		"grant_type":    {"refresh_token"},
		"client_id":     {DemoClientID},
		"client_secret": {DemoClientSecret},
		"refresh_token": {rt},
	})
}

func clientForm(kv ...string) url.Values {
	f := url.Values{"client_id": {DemoClientID}, "client_secret": {DemoClientSecret}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

func introspect(t *testing.T, s *Server, tok string) *result {
	t.Helper()
	r := post(t, oidcURL(s, "token/introspect"), clientForm("token", tok))
	if r.status != http.StatusOK {
		t.Fatalf("introspect: %d %s", r.status, r.body)
	}
	return r
}

// wantError asserts a Keycloak error answer.
func wantError(t *testing.T, r *result, status int, code, desc string) {
	t.Helper()
	if r.status != status || r.str("error") != code || (desc != "" && r.str("error_description") != desc) {
		t.Fatalf("got %d %s, want %d error=%q error_description=%q", r.status, r.body, status, code, desc)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
}

// payload decodes a JWT's payload without verifying it.
func payload(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// verifyWithCerts checks tok's signature against the server's published
// JWKS, as a client would, and returns the payload and header.
func verifyWithCerts(t *testing.T, s *Server, tok string) (map[string]any, jose.Header) {
	t.Helper()
	r := get(t, oidcURL(s, "certs"))
	if r.status != http.StatusOK {
		t.Fatalf("certs: %d", r.status)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(r.body, &set); err != nil {
		t.Fatal(err)
	}
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	b, err := jws.Verify(&set)
	if err != nil {
		t.Fatalf("signature does not verify against /certs: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, jws.Signatures[0].Header
}
