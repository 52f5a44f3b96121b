package auth_test

// Tests against a real third-party OAuth 2.0 server: the npm package
// oauth2-mock-server, pinned in testdata/oauth2server/package.json and driven
// by testdata/oauth2server/server.js. It is not Keycloak: no
// refresh_expires_in, session_state or not-before-policy, opaque refresh
// tokens, an issuer without /auth/realms/. shipkey must work with it anyway.
//
// Setup: npm ci --prefix auth/testdata/oauth2server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/optest"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/internal/text/texttest"
)

// mockOAuth2 is a running oauth2-mock-server with its one client and user.
type mockOAuth2 struct {
	URL                    string
	ClientID, ClientSecret string
	Username, Password     string
}

func randomSecret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// startMockOAuth2 runs node testdata/oauth2server/server.js with fresh random
// credentials in its environment (never in argv) and waits, bounded, for the
// URL it prints first. The server is stopped when the test ends: stdin is
// closed (it exits on EOF) and the process is killed if it lingers.
func startMockOAuth2(t *testing.T) *mockOAuth2 {
	t.Helper()
	dir := filepath.Join("testdata", "oauth2server")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "oauth2-mock-server", "package.json"))
	}
	if err != nil {
		msg := "the real OAuth 2.0 server needs node and its package: run `npm ci --prefix auth/testdata/oauth2server` (" + err.Error() + ")"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	m := &mockOAuth2{
		ClientID:     "shipping-api",
		ClientSecret: randomSecret(t, "cs-"),
		Username:     "demo",
		Password:     randomSecret(t, "pw-"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "server.js"))
	cmd.Env = append(os.Environ(),
		"SHIPKEY_MOCK_CLIENT_ID="+m.ClientID,
		"SHIPKEY_MOCK_CLIENT_SECRET="+m.ClientSecret,
		"SHIPKEY_MOCK_USERNAME="+m.Username,
		"SHIPKEY_MOCK_PASSWORD="+m.Password,
	)
	cmd.WaitDelay = 5 * time.Second
	var stderr optest.LockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start node: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		cancel() // kills the process if it is still there
		<-exited
	})

	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "http://127.0.0.1:") {
			t.Fatalf("server.js printed %q, want its URL; stderr: %s", line, stderr.String())
		}
		m.URL = line
	case <-exited:
		t.Fatalf("server.js exited before printing its URL; stderr: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server.js printed no URL in time; stderr: %s", stderr.String())
	}
	return m
}

// assertNoSecrets fails when err's message holds any of secrets or a
// control character.
func assertNoSecrets(t *testing.T, err error, secrets ...string) {
	t.Helper()
	msg := err.Error()
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			t.Errorf("error %q contains a secret", msg)
		}
	}
	texttest.RequireSafe(t, "error", msg)
}

func TestRealOAuth2Server(t *testing.T) {
	t.Parallel()
	m := startMockOAuth2(t)
	c, err := auth.NewClient(auth.Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	byTokenURL := auth.Connection{TokenURL: m.URL + "/token", ClientID: m.ClientID}
	byIssuer := auth.Connection{Issuer: m.URL, ClientID: m.ClientID}
	for _, conn := range []auth.Connection{byTokenURL, byIssuer} {
		if err := conn.Validate(); err != nil {
			t.Fatalf("Validate(%+v): %v", conn, err)
		}
	}

	var ts *auth.TokenSet
	t.Run("password grant with token URL", func(t *testing.T) {
		var err error
		ts, err = c.Login(ctx, byTokenURL, auth.ClientAuth{Secret: m.ClientSecret}, m.Username, m.Password)
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		if ts.AccessToken == "" || ts.RefreshToken == "" || !strings.EqualFold(ts.TokenType, "Bearer") {
			t.Errorf("token set lacks tokens: type %q, access %t, refresh %t", ts.TokenType, ts.AccessToken != "", ts.RefreshToken != "")
		}
		if ts.ExpiresIn != 3600 || !ts.AccessExpiresAt.Equal(ts.ObtainedAt.Add(time.Hour)) {
			t.Errorf("expires_in %d, access expires %v, obtained %v", ts.ExpiresIn, ts.AccessExpiresAt, ts.ObtainedAt)
		}
		if ts.JWTExpiresAt.IsZero() {
			t.Error("the access token is a JWT with exp, JWTExpiresAt is zero")
		}
		// Keycloak's extras are absent: nothing is invented.
		if ts.RefreshExpiresIn != 0 || !ts.RefreshExpiresAt.IsZero() || ts.SessionState != "" || ts.NotBeforePolicy != nil {
			t.Errorf("refresh_expires_in %d, refresh expires %v, session_state %q, not-before-policy %v: want none",
				ts.RefreshExpiresIn, ts.RefreshExpiresAt, ts.SessionState, ts.NotBeforePolicy)
		}
		if !ts.AccessValid(ts.ObtainedAt) || !ts.RefreshValid(ts.ObtainedAt) {
			t.Error("fresh tokens are not valid")
		}
	})
	if ts == nil {
		t.FailNow()
	}

	t.Run("password grant with discovery", func(t *testing.T) {
		eps, err := c.Endpoints(ctx, byIssuer)
		if err != nil {
			t.Fatalf("Endpoints: %v", err)
		}
		if eps.Token != m.URL+"/token" || eps.JWKS != m.URL+"/jwks" || eps.Issuer != m.URL {
			t.Errorf("discovered %+v", eps)
		}
		got, err := c.Login(ctx, byIssuer, auth.ClientAuth{Secret: m.ClientSecret}, m.Username, m.Password)
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		// Within the same second the server may sign the very same claims
		// again (it sets no jti), so only presence is checked.
		if got.AccessToken == "" || got.RefreshToken == "" {
			t.Error("discovery login gave no tokens")
		}
	})

	t.Run("refresh", func(t *testing.T) {
		next, err := c.Refresh(ctx, byTokenURL, auth.ClientAuth{Secret: m.ClientSecret}, ts)
		if err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		if next.AccessToken == "" || next.AccessToken == ts.AccessToken {
			t.Error("refresh gave no new access token")
		}
		if next.RefreshToken == "" || next.RefreshToken == ts.RefreshToken {
			t.Error("the server rotates refresh tokens; the new one must be kept")
		}
		d, err := auth.Decode(next.AccessToken, next.ObtainedAt)
		if err != nil || d.Subject != m.Username {
			t.Errorf("refreshed token: sub %q, err %v", d.Subject, err)
		}
		// The old refresh token was redeemed: the server refuses it now.
		_, err = c.Refresh(ctx, byTokenURL, auth.ClientAuth{Secret: m.ClientSecret}, ts)
		if err == nil {
			t.Fatal("reusing a redeemed refresh token succeeded")
		}
		if auth.KindOf(err) != auth.KindLoginRequired {
			t.Errorf("reused refresh token: kind %v (%v), want login_required", auth.KindOf(err), err)
		}
		assertNoSecrets(t, err, ts.RefreshToken, next.RefreshToken, m.ClientSecret)
	})

	t.Run("wrong password", func(t *testing.T) {
		wrong := randomSecret(t, "wrong-pw-")
		_, err := c.Login(ctx, byTokenURL, auth.ClientAuth{Secret: m.ClientSecret}, m.Username, wrong)
		if auth.KindOf(err) != auth.KindInvalidCredentials {
			t.Fatalf("kind %v (%v), want invalid_credentials", auth.KindOf(err), err)
		}
		assertNoSecrets(t, err, wrong, m.Password, m.ClientSecret)
	})

	t.Run("unknown user", func(t *testing.T) {
		_, err := c.Login(ctx, byTokenURL, auth.ClientAuth{Secret: m.ClientSecret}, "nobody", m.Password)
		if auth.KindOf(err) != auth.KindInvalidCredentials {
			t.Fatalf("kind %v (%v), want invalid_credentials", auth.KindOf(err), err)
		}
		assertNoSecrets(t, err, m.Password, m.ClientSecret)
	})

	t.Run("wrong client secret", func(t *testing.T) {
		wrong := randomSecret(t, "wrong-cs-")
		for _, conn := range []auth.Connection{byTokenURL, {TokenURL: byTokenURL.TokenURL, ClientID: m.ClientID, BasicAuth: true}} {
			_, err := c.Login(ctx, conn, auth.ClientAuth{Secret: wrong}, m.Username, m.Password)
			if auth.KindOf(err) != auth.KindInvalidClient {
				t.Fatalf("basic auth %t: kind %v (%v), want invalid_client", conn.BasicAuth, auth.KindOf(err), err)
			}
			assertNoSecrets(t, err, wrong, m.Password, m.ClientSecret)
		}
	})

	t.Run("client secret in basic auth", func(t *testing.T) {
		conn := auth.Connection{TokenURL: byTokenURL.TokenURL, ClientID: m.ClientID, BasicAuth: true}
		if _, err := c.Login(ctx, conn, auth.ClientAuth{Secret: m.ClientSecret}, m.Username, m.Password); err != nil {
			t.Fatalf("Login with HTTP Basic client credentials: %v", err)
		}
	})

	t.Run("decode", func(t *testing.T) {
		d, err := auth.Decode(ts.AccessToken, ts.ObtainedAt)
		if err != nil {
			t.Fatal(err)
		}
		if d.Format != auth.FormatJWT || d.Alg != "RS256" || d.Kid == "" || d.SymmetricSigned {
			t.Errorf("header: format %v alg %q kid %q", d.Format, d.Alg, d.Kid)
		}
		if d.Issuer != m.URL || d.Subject != m.Username || d.ExpiresAt.IsZero() || d.IssuedAt.IsZero() || d.NotBefore.IsZero() {
			t.Errorf("iss %q sub %q exp %v iat %v nbf %v", d.Issuer, d.Subject, d.ExpiresAt, d.IssuedAt, d.NotBefore)
		}
		if d.Typ != "" || d.Username != "" || d.RealmRoles != nil || d.ClientRoles != nil {
			t.Errorf("claims a non-Keycloak server does not send were filled: typ %q user %q roles %v %v", d.Typ, d.Username, d.RealmRoles, d.ClientRoles)
		}
		want := []string{"iss", "sub", "azp", "exp", "iat", "nbf", "amr"}
		if got := claimNames(d.Payload); !slices.Equal(got, want) {
			t.Errorf("claims %q, want %q", got, want)
		}
		if amr, _ := d.Claim("amr"); amr.Kind != auth.ClaimList || !slices.Equal(amr.Items, text.SanitizeAll([]string{"pwd"})) {
			t.Errorf("amr = %+v", amr)
		}
		// Relative to its own iat, the token lives exactly an hour.
		atIat, err := auth.Decode(ts.AccessToken, d.IssuedAt)
		if err != nil {
			t.Fatal(err)
		}
		if exp, _ := atIat.Claim("exp"); exp.Kind != auth.ClaimTime || !strings.HasSuffix(exp.Display.String(), "UTC (in 1h)") {
			t.Errorf("exp = %+v", exp)
		}
		if azp, _ := d.Claim("azp"); azp.Display.String() != m.ClientID {
			t.Errorf("azp = %+v", azp)
		}
		// Its refresh tokens are opaque UUIDs.
		if r, err := auth.Decode(ts.RefreshToken, ts.ObtainedAt); err != nil || r.Format != auth.FormatOpaque {
			t.Errorf("refresh token: %+v, %v; want opaque", r, err)
		}
	})

	t.Run("verify", func(t *testing.T) {
		conns := []auth.Connection{byIssuer}
		v := c.Verify(ctx, conns, ts.AccessToken)
		if v.State != auth.SigVerified || v.Issuer.String() != m.URL || v.KeyID.String() == "" {
			t.Fatalf("Verify = %+v, want verified", v)
		}
		if v := c.Verify(ctx, conns, ts.IDToken); ts.IDToken != "" && v.State != auth.SigVerified {
			t.Errorf("ID token: %+v", v)
		}
		tampered := editJWT(t, ts.AccessToken, 1, func(m map[string]any) { m["sub"] = "admin" })
		if v := c.Verify(ctx, conns, tampered); v.State != auth.SigFailed {
			t.Errorf("tampered: %+v", v)
		}
		if v := c.Verify(ctx, conns, ts.RefreshToken); v.State != auth.SigNotChecked {
			t.Errorf("opaque refresh token: %+v", v)
		}
		// The token-URL-only connection does not name this issuer.
		if v := c.Verify(ctx, []auth.Connection{byTokenURL}, ts.AccessToken); v.State != auth.SigNotChecked {
			t.Errorf("no connection with this issuer: %+v", v)
		}
	})

	t.Run("refresh expiry not stated", func(t *testing.T) {
		if ts.RefreshExpirySource != auth.RefreshExpiryUnstated {
			t.Errorf("refresh expiry source %q: the server stated none", ts.RefreshExpirySource)
		}
	})

	t.Run("end session", func(t *testing.T) {
		fresh, err := c.Login(ctx, byIssuer, auth.ClientAuth{Secret: m.ClientSecret}, m.Username, m.Password)
		if err != nil {
			t.Fatal(err)
		}
		// Its end_session_endpoint is a browser redirect (GET); a POST there
		// is not Keycloak's logout, so revocation ends the session.
		res, err := c.EndSession(ctx, byIssuer, auth.ClientAuth{Secret: m.ClientSecret}, fresh)
		if err != nil {
			t.Fatalf("EndSession: %v", err)
		}
		if !res.Ended() {
			t.Errorf("EndSession = %+v, want the session ended", res)
		}
		if l := c.Liveness(ctx, byIssuer, auth.ClientAuth{Secret: m.ClientSecret}, fresh.AccessToken); l.State == auth.LiveInactive && l.Via.String() != "introspection" {
			t.Errorf("liveness %+v: only introspection may say 'not active'", l)
		}
	})
}
