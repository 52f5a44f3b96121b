package auth

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text"
)

// Secrets used by the tests of this file; none may ever show in an error.
const (
	cliPassword     = "pw-Secret-8c1f"
	cliClientSecret = "cs-Secret-2b7e"
	cliAccess       = "at-Secret-93aa0f"
	cliRefresh      = "rt-Secret-5d21c4"
)

// cliSafeErr checks err's kind and that its message holds no secret and no
// control character.
func cliSafeErr(t *testing.T, err error, want ErrorKind, secrets ...string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error of kind %v, got nil", want)
	}
	if got := KindOf(err); got != want {
		t.Fatalf("kind = %v, want %v (err: %v)", got, want, err)
	}
	msg := err.Error()
	for _, s := range append(secrets, cliPassword, cliClientSecret, cliAccess, cliRefresh) {
		if s != "" && strings.Contains(msg, s) {
			t.Fatalf("error message leaks a secret %q: %s", s, msg)
		}
	}
	for _, r := range msg {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Fatalf("error message holds control character %U: %q", r, msg)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Fatalf("error message is not one line: %q", msg)
	}
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("error is not *auth.Error: %T", err)
	}
	return ae
}

// cliTimeout is the request bound (and the connect and TLS handshake bound)
// of the tests' clients where the bound is not what a test is about (those
// set their own, in milliseconds): two runs at once under -race next to CPU
// hogs took over 5 s for a 2 MiB answer and over DefaultDialTimeout (10 s)
// for a TLS handshake with the test's own server, and the tests failed
// with a timeout instead.
const cliTimeout = 30 * time.Second

func cliNewClient(t *testing.T, opts Options) *Client {
	t.Helper()
	if opts.Timeout == 0 && opts.HTTPClient == nil {
		opts.Timeout = cliTimeout
	}
	if opts.DialTimeout == 0 && opts.HTTPClient == nil {
		opts.DialTimeout = cliTimeout
	}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cliCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*cliTimeout)
	t.Cleanup(cancel)
	return ctx
}

// cliTokenConn is a connection whose token URL is srv's /token.
func cliTokenConn(url string) Connection {
	return Connection{ClientID: "shipping", TokenURL: url + "/token"}
}

func cliJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// TestStatusMapping provokes every server answer of the token endpoint with
// an httptest server and checks the kind and the message.
func TestClientStatusMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		op     string // login or refresh
		status int
		body   string
		want   ErrorKind
	}{
		{"wrong password", "login", 401, `{"error":"invalid_grant","error_description":"Invalid user credentials"}`, KindInvalidCredentials},
		{"unknown user", "login", 400, `{"error":"invalid_grant","error_description":"Invalid user credentials"}`, KindInvalidCredentials},
		{"disabled", "login", 400, `{"error":"invalid_grant","error_description":"Account disabled"}`, KindAccountDisabled},
		{"not set up", "login", 400, `{"error":"invalid_grant","error_description":"Account is not fully set up"}`, KindAccountNotSetUp},
		{"wrong client secret", "login", 401, `{"error":"unauthorized_client","error_description":"Invalid client or Invalid client credentials"}`, KindInvalidClient},
		{"unknown client", "login", 401, `{"error":"invalid_client","error_description":"Invalid client or Invalid client credentials"}`, KindInvalidClient},
		{"direct grants off", "login", 400, `{"error":"unauthorized_client","error_description":"Client not allowed for direct access grants"}`, KindDirectGrantDisabled},
		{"unsupported grant", "login", 400, `{"error":"unsupported_grant_type"}`, KindDirectGrantDisabled},
		{"bad scope", "login", 400, `{"error":"invalid_scope","error_description":"Invalid scopes: write"}`, KindInvalidScope},
		{"refresh expired", "refresh", 400, `{"error":"invalid_grant","error_description":"Token is not active"}`, KindLoginRequired},
		{"session ended", "refresh", 400, `{"error":"invalid_grant","error_description":"Session not active"}`, KindLoginRequired},
		{"reuse", "refresh", 400, `{"error":"invalid_grant","error_description":"Maximum allowed refresh token reuse exceeded"}`, KindLoginRequired},
		{"refresh wrong secret", "refresh", 401, `{"error":"unauthorized_client","error_description":"Invalid client secret"}`, KindInvalidClient},
		{"500 with body", "login", 500, `<html>Internal Server Error</html>`, KindServer},
		{"503", "refresh", 503, ``, KindServer},
		{"server_error json", "login", 500, `{"error":"server_error"}`, KindServer},
		{"418 odd", "login", 418, `teapot`, KindServer},
		{"200 with error", "login", 200, `{"error":"invalid_grant","error_description":"Account disabled"}`, KindAccountDisabled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(cliJSON(tc.status, tc.body))
			defer srv.Close()
			c := cliNewClient(t, Options{})
			var err error
			if tc.op == "login" {
				_, err = c.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
			} else {
				_, err = c.Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh})
			}
			e := cliSafeErr(t, err, tc.want)
			if e.Op != tc.op || e.Status != tc.status {
				t.Errorf("op/status = %q/%d, want %q/%d", e.Op, e.Status, tc.op, tc.status)
			}
			if tc.status >= 500 && !strings.Contains(err.Error(), fmt.Sprint(tc.status)) {
				t.Errorf("server error does not state the status: %v", err)
			}
		})
	}
}

func TestClientErrorMessages(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(cliJSON(401, `{"error":"invalid_grant","error_description":"Invalid user credentials"}`))
	defer srv.Close()
	_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
	want := "login: wrong username or password (server said: invalid_grant: Invalid user credentials); check them and try again"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}

	srv2 := httptest.NewServer(cliJSON(400, `{"error":"invalid_grant","error_description":"Session not active"}`))
	defer srv2.Close()
	_, err = cliNewClient(t, Options{}).Refresh(cliCtx(t), cliTokenConn(srv2.URL), ClientAuth{Secret: cliClientSecret}, &TokenSet{RefreshToken: cliRefresh})
	if err == nil || !strings.Contains(err.Error(), "log in again with `shipkey login`") || !IsLoginRequired(err) {
		t.Fatalf("refresh error = %v", err)
	}
}

// TestHostileDescription: escape sequences in error_description come out
// escaped, and secrets a server echoes back are redacted.
func TestClientHostileDescription(t *testing.T) {
	t.Parallel()
	desc := "bad \x1b]52;c;SGVsbG8=\x07 then \x1b[2J and " + cliPassword + " and " + cliClientSecret + " and eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4eHh4eHh4eCJ9.c2lnbmF0dXJlc2lnbmF0dXJl\u009b31m"
	body := fmt.Sprintf(`{"error":"invalid_grant\u001b[31m","error_description":%q}`, desc)
	body = strings.ReplaceAll(body, `\x1b`, `\u001b`)
	body = strings.ReplaceAll(body, `\a`, `\u0007`)
	srv := httptest.NewServer(cliJSON(400, body))
	defer srv.Close()
	_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
	if KindOf(err) == KindUnknown {
		t.Fatalf("unexpected error %v", err)
	}
	e := cliSafeErr(t, err, KindOf(err), "eyJhbGciOiJSUzI1NiJ9")
	msg := err.Error()
	for _, want := range []string{`\x1b]52;c;`, `\x1b[2J`, `\x07`, "[redacted]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.ContainsRune(e.Description, 0x1b) || strings.ContainsRune(e.Code, 0x1b) {
		t.Errorf("fields not sanitized: %q %q", e.Code, e.Description)
	}

	// A 500 whose body echoes the password and a long token: excerpt redacted and short.
	long := strings.Repeat("x", 5000)
	srv2 := httptest.NewServer(cliJSON(500, "oops \x1b[2J "+cliPassword+" "+cliClientSecret+" "+long))
	defer srv2.Close()
	_, err = cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv2.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
	e = cliSafeErr(t, err, KindServer)
	if e.Excerpt == "" || len(e.Excerpt) > excerptSize+10 || !strings.Contains(e.Excerpt, `\x1b[2J`) {
		t.Errorf("excerpt = %q", e.Excerpt)
	}
	// On refresh the server may echo the refresh and access tokens.
	srv3 := httptest.NewServer(cliJSON(502, "bad gateway "+cliRefresh+" "+cliAccess+" "+cliClientSecret))
	defer srv3.Close()
	_, err = cliNewClient(t, Options{}).Refresh(cliCtx(t), cliTokenConn(srv3.URL), ClientAuth{Secret: cliClientSecret}, &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh})
	if e = cliSafeErr(t, err, KindServer); !strings.Contains(e.Excerpt, "bad gateway [redacted]") {
		t.Errorf("excerpt = %q", e.Excerpt)
	}
}

// TestTransportFailures covers failures before or without an answer.
func TestClientTransportFailures(t *testing.T) {
	t.Parallel()
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn("http://"+addr), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		cliSafeErr(t, err, KindNetwork)
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}))
		defer srv.Close()
		defer close(release)
		c := cliNewClient(t, Options{Timeout: 100 * time.Millisecond})
		_, err := c.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		cliSafeErr(t, err, KindTimeout)
		// A context deadline is a timeout too.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = cliNewClient(t, Options{}).Refresh(ctx, cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, &TokenSet{RefreshToken: cliRefresh})
		cliSafeErr(t, err, KindTimeout)
	})
	t.Run("tls unknown authority", func(t *testing.T) {
		srv := httptest.NewTLSServer(cliJSON(200, `{"access_token":"x","token_type":"Bearer"}`))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		e := cliSafeErr(t, err, KindTLS)
		if !strings.Contains(e.Msg, "unknown authority") {
			t.Errorf("msg = %q", e.Msg)
		}
		// The way to trust a private CA is named both ways it can be given.
		if line := e.Error(); !strings.Contains(line, "SHIPKEY_CA_FILE=PATH") || !strings.Contains(line, "--ca-file PATH") {
			t.Errorf("the TLS line does not say how to pass the CA's bundle: %q", line)
		}
	})
	t.Run("tls with CAFile", func(t *testing.T) {
		srv := httptest.NewTLSServer(cliJSON(200, `{"access_token":"abc","token_type":"Bearer","expires_in":60}`))
		defer srv.Close()
		ca := filepath.Join(t.TempDir(), "ca.pem")
		cert := srv.Certificate()
		if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		ts, err := cliNewClient(t, Options{CAFile: ca}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		if err != nil || ts.AccessToken != "abc" {
			t.Fatalf("login over TLS with CAFile: %v", err)
		}
	})
	t.Run("bad CAFile", func(t *testing.T) {
		_, err := NewClient(Options{CAFile: filepath.Join(t.TempDir(), "missing.pem")})
		cliSafeErr(t, err, KindConfig)
		junk := filepath.Join(t.TempDir(), "junk.pem")
		os.WriteFile(junk, []byte("not pem"), 0o600)
		_, err = NewClient(Options{CAFile: junk})
		cliSafeErr(t, err, KindConfig)
	})
	t.Run("plain tcp speaking to TLS client", func(t *testing.T) {
		srv := httptest.NewServer(cliJSON(200, `{}`))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(strings.Replace(srv.URL, "http://", "https://", 1)), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		cliSafeErr(t, err, KindTLS)
	})
	t.Run("dropped connection", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		cliSafeErr(t, err, KindNetwork)
	})
	t.Run("plain http to remote host refused before sending", func(t *testing.T) {
		c := cliNewClient(t, Options{})
		for _, conn := range []Connection{
			{ClientID: "x", AuthURL: "http://auth.example.com"},
			{ClientID: "x", TokenURL: "http://auth.example.com/token"},
			{ClientID: "x", Issuer: "http://auth.example.com/realms/x"},
		} {
			_, err := c.Login(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
			e := cliSafeErr(t, err, KindConfig)
			if e.Op != "login" {
				t.Errorf("op = %q", e.Op)
			}
			_, err = c.Refresh(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, &TokenSet{RefreshToken: cliRefresh})
			cliSafeErr(t, err, KindConfig)
			cliSafeErr(t, c.Logout(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, cliRefresh), KindConfig)
		}
		// The transport itself refuses too (a redirect or a discovered URL
		// could lead there).
		req, _ := http.NewRequest(http.MethodPost, "http://auth.example.com/token", strings.NewReader("password="+cliPassword))
		_, err := c.http.Do(req)
		if !errors.Is(err, errInsecureURL) {
			t.Fatalf("transport sent plain http to a remote host: %v", err)
		}
		cliSafeErr(t, mapTransportError(context.Background(), "login", "http://auth.example.com/token", err), KindConfig)
	})
}

// TestMalformedAnswers covers answers that are not token responses.
func TestClientMalformedAnswers(t *testing.T) {
	t.Parallel()
	huge := func(withLength bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			n := 2 << 20
			if withLength {
				w.Header().Set("Content-Length", fmt.Sprint(n))
			}
			chunk := []byte(strings.Repeat(" ", 64<<10))
			chunk[0] = '{'
			for written := 0; written < n; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				chunk[0] = ' '
			}
		}
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"not json", cliJSON(200, `<html>hello `+cliAccess+`</html>`)},
		{"truncated json", cliJSON(200, `{"access_token":"`)},
		{"missing access_token", cliJSON(200, `{"token_type":"Bearer","expires_in":300}`)},
		{"huge chunked", huge(false)},
		{"huge with length", huge(true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c := cliNewClient(t, Options{})
			_, err := c.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
			cliSafeErr(t, err, KindMalformedResponse)
			_, err = c.Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, &TokenSet{RefreshToken: cliRefresh})
			cliSafeErr(t, err, KindMalformedResponse)
		})
	}
}

// TestRedirectNotFollowed: a 3xx from the token endpoint is reported and the
// credentials never reach the redirect target.
func TestClientRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		cliJSON(200, `{"access_token":"stolen"}`)(w, r)
	}))
	defer target.Close()
	for _, code := range []int{301, 302, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/token", code)
		}))
		_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		e := cliSafeErr(t, err, KindServer)
		if e.Status != code || !strings.Contains(err.Error(), "redirect") {
			t.Errorf("%d: %v", code, err)
		}
		srv.Close()
	}
	if hits.Load() != 0 {
		t.Fatalf("redirect target was called %d times", hits.Load())
	}
}

func TestClientCappedBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size int
		over bool
	}{{0, false}, {100, false}, {MaxBodySize, false}, {MaxBodySize + 1, true}, {3 * MaxBodySize, true}} {
		tr := &bodyTracker{}
		b := &cappedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("a", tc.size))), tracker: tr}
		// Read the way x/oauth2 does: exactly MaxBodySize at most.
		data, err := io.ReadAll(io.LimitReader(b, MaxBodySize))
		if tc.over {
			if !errors.Is(err, errBodyTooLarge) || !tr.Over() {
				t.Errorf("size %d: err=%v over=%v", tc.size, err, tr.Over())
			}
			continue
		}
		if err != nil || len(data) != tc.size || tr.Over() {
			t.Errorf("size %d: err=%v len=%d over=%v", tc.size, err, len(data), tr.Over())
		}
		if len(tr.Head()) != min(tc.size, headSize) {
			t.Errorf("size %d: head %d", tc.size, len(tr.Head()))
		}
	}
}

func TestClientToIntAndJWTExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want int64
	}{{float64(1314000), 1314000}, {int64(5), 5}, {7, 7}, {"1800", 1800}, {" 12 ", 12}, {"3.0", 3}, {nil, 0}, {"x", 0}, {true, 0}} {
		if got := toInt(tc.in); got != tc.want {
			t.Errorf("toInt(%#v) = %d, want %d", tc.in, got, tc.want)
		}
	}
	jwt := func(payload string) string {
		return "eyJhbGciOiJSUzI1NiJ9." + cliB64(payload) + ".c2ln"
	}
	if got := jwtExpiry(jwt(`{"exp":1700000000}`)); !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("exp = %v", got)
	}
	if got := jwtExpiry(jwt(`{"exp":1.7e9}`)); !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("float exp = %v", got)
	}
	for _, tok := range []string{"opaque", "a.b", jwt(`{}`), jwt(`not json`), jwt(`{"exp":"soon"}`), "a.!!!.c"} {
		if got := jwtExpiry(tok); !got.IsZero() {
			t.Errorf("jwtExpiry(%q) = %v, want zero", tok, got)
		}
	}
}

func TestClientScrub(t *testing.T) {
	t.Parallel()
	got := scrub("a\x1b[2Jb "+cliPassword+" "+strings.Repeat("Z", 40)+" "+strings.Repeat("é", 300), []string{cliPassword, "", "ab"})
	if strings.Contains(got, cliPassword) || strings.Contains(got, strings.Repeat("Z", 40)) || strings.ContainsRune(got, 0x1b) {
		t.Fatalf("scrub = %q", got)
	}
	if len(got) > excerptSize+len("…")+20 || !strings.HasSuffix(got, "…") {
		t.Fatalf("scrub did not cut: %d %q", len(got), got)
	}
}

// TestTLSMinVersion: the built transport verifies and refuses TLS < 1.2.
func TestClientTLSMinVersion(t *testing.T) {
	t.Parallel()
	c := cliNewClient(t, Options{})
	tr := c.http.Transport.(*guardTransport).base.(*http.Transport)
	if tr.TLSClientConfig.InsecureSkipVerify || tr.TLSClientConfig.MinVersion != tls.VersionTLS12 || tr.Proxy == nil {
		t.Fatalf("transport settings: %+v", tr.TLSClientConfig)
	}
	if c.http.CheckRedirect == nil || c.http.Timeout != cliTimeout {
		t.Fatal("redirects or timeout not set")
	}
}

func cliB64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// A login refused with a 400 or 401 that carries no OAuth error (empty,
// text or HTML) names the likely causes and their settings in one line.
func TestLoginRefusedWithoutReasonNamesCauses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   ErrorKind
	}{
		{"400 empty", 400, ``, KindServer},
		{"400 html", 400, `<html><body>Bad Request</body></html>`, KindServer},
		{"401 empty", 401, ``, KindCredentialsRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(cliJSON(tc.status, tc.body))
			defer srv.Close()
			_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
			cliSafeErr(t, err, tc.want)
			msg := err.Error()
			if !strings.Contains(msg, "--scope openid") || !strings.Contains(msg, "--basic-auth") || strings.Contains(msg, "\n") {
				t.Fatalf("not one line naming --scope openid and --basic-auth: %q", msg)
			}
		})
	}
	// The in-process server that requires a scope and sends empty error
	// bodies, as some servers do.
	s := cliServer(t, &cliClock{}, func(c *authtest.Config) { c.RequireScope, c.ErrorBodies = true, authtest.ErrorBodiesEmpty })
	_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err == nil || !strings.Contains(err.Error(), "--scope openid") {
		t.Fatalf("login without a scope: %v", err)
	}
}

// A check that fails on a refusal reads as one sentence: the message, then
// the server's words after a colon; never parentheses inside parentheses.
func TestLivenessDetailIsFlat(t *testing.T) {
	t.Parallel()
	l := unknownFrom(text.Trusted("introspection"), mapStatus("introspect", 400, "invalid_request", "Missing (token)", nil, nil))
	want := "introspect: the server refused the request (status 400); the server said: invalid_request: Missing (token)"
	if got := l.Detail().String(); got != want {
		t.Fatalf("detail\n got %q\nwant %q", got, want)
	}
	if (Liveness{Reason: text.Trusted("no answer")}).Detail().String() != "no answer" {
		t.Fatal("a reason without the server's words gained a colon")
	}
}

// SetTimeout bounds every request; the timeout error names the settings
// that raise it; Waiting hears of each request and of its end.
func TestSetTimeoutAndWaiting(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	defer close(release)
	var sent, ended atomic.Int32
	c, err := NewClient(Options{Waiting: func() func() { sent.Add(1); return func() { ended.Add(1) } }})
	if err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(200 * time.Millisecond)
	if c.Timeout() != 200*time.Millisecond {
		t.Fatalf("Timeout = %v", c.Timeout())
	}
	_, err = c.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
	e := cliSafeErr(t, err, KindTimeout)
	if !strings.Contains(e.Error(), "raise --timeout (or SHIPKEY_TIMEOUT, or timeout in config.toml)") {
		t.Fatalf("the timeout message does not name the settings: %v", e)
	}
	if sent.Load() != 1 || ended.Load() != 1 {
		t.Fatalf("waiting: %d sent, %d ended", sent.Load(), ended.Load())
	}
}
