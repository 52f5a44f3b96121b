package store

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text"
)

func TestCreateListResolveRenameDefaultRemove(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{})
	ctx := context.Background()

	if _, err := s.Resolve(""); !errors.Is(err, ErrNoKeys) || !strings.Contains(err.Error(), "shipkey keys new") {
		t.Fatalf("Resolve on empty store: %v", err)
	}

	a := e.create(s, "alpha", false)
	if !a.Default || a.ID == "" || a.Masked == "" || a.Token.ObtainedAt.IsZero() || a.Token.AccessToken != "" {
		t.Fatalf("first key: %+v", a)
	}
	if a.StatusAt(e.clk.Now()) != StatusValid {
		t.Fatalf("status = %v", a.StatusAt(e.clk.Now()))
	}
	b := e.create(s, "  beta  ", true)
	if b.Label != "beta" || b.Default {
		t.Fatalf("second key: %+v", b)
	}

	keys, err := s.Keys()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].Label != "alpha" || keys[1].Label != "beta" {
		t.Fatalf("Keys = %+v", keys)
	}

	// Labels: taken, empty, too long, control characters; no grant is sent.
	before := e.srv.Count("password")
	for _, bad := range []string{"alpha", "", "   ", strings.Repeat("x", 65), "evil\x1b[31m", "bidi\u202e"} {
		_, _, err := s.Create(ctx, e.newKey(bad, false))
		if err == nil {
			t.Fatalf("Create(%q) succeeded", bad)
		}
		e.noSecretIn(err)
		if bad == "alpha" && !errors.Is(err, ErrLabelTaken) {
			t.Fatalf("Create(alpha) = %v, want ErrLabelTaken", err)
		}
	}
	if _, _, err := s.Create(ctx, e.newKey(strings.Repeat("é", 64), false)); err != nil {
		t.Fatalf("64-rune label: %v", err)
	}
	if _, err := s.Remove(context.Background(), strings.Repeat("é", 64)); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Count("password"); got != before+1 {
		t.Fatalf("password grants = %d, want %d", got, before+1)
	}

	// Resolve: label, SHIPKEY_KEY, default.
	if k, err := s.Resolve(""); err != nil || k.Label != "alpha" {
		t.Fatalf("Resolve default = %v, %v", k.Label, err)
	}
	t.Setenv(EnvKey, "beta")
	if k, err := s.Resolve(""); err != nil || k.Label != "beta" {
		t.Fatalf("Resolve SHIPKEY_KEY = %v, %v", k.Label, err)
	}
	t.Setenv(EnvKey, "nope")
	if _, err := s.Resolve(""); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), EnvKey) {
		t.Fatalf("Resolve bad SHIPKEY_KEY = %v", err)
	}
	t.Setenv(EnvKey, "")
	_, err = s.Resolve("nope")
	if !errors.Is(err, ErrNotFound) || err.Error() != `no key labelled "nope"; see: shipkey keys list` {
		t.Fatalf("Resolve(nope) = %v", err)
	}
	_, err = s.Key("bad\x1b]52;c;x\x07")
	if !errors.Is(err, ErrNotFound) || strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Fatalf("Key(control) = %q", err)
	}

	// Rename keeps the ID and the secrets.
	if err := s.Rename("beta", "gamma"); err != nil {
		t.Fatal(err)
	}
	g := mustKey(t, s, "gamma")
	if g.ID != b.ID {
		t.Fatalf("rename changed the id: %s -> %s", b.ID, g.ID)
	}
	if cs, err := s.ClientSecret("gamma"); err != nil || cs != testClientSecret {
		t.Fatalf("ClientSecret after rename: %v", err)
	}
	if err := s.Rename("gamma", "alpha"); !errors.Is(err, ErrLabelTaken) {
		t.Fatalf("Rename onto alpha = %v", err)
	}
	if err := s.Rename("nope", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Rename(nope) = %v", err)
	}
	e.check(s)

	// Default moves, follows a rename, is cleared by remove.
	if err := s.SetDefault("gamma"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename("gamma", "delta"); err != nil {
		t.Fatal(err)
	}
	if k, _ := s.Resolve(""); k.Label != "delta" {
		t.Fatalf("default after rename = %q", k.Label)
	}
	if err := s.SetDefault("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetDefault(nope) = %v", err)
	}
	e.create(s, "epsilon", false)
	if _, err := s.Remove(context.Background(), "delta"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(""); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "shipkey keys default") {
		t.Fatalf("Resolve with two keys and no default = %v", err)
	}
	if _, err := s.ClientSecret("delta"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed key still there: %v", err)
	}
	if _, err := s.Remove(context.Background(), "epsilon"); err != nil {
		t.Fatal(err)
	}
	if k, err := s.Resolve(""); err != nil || k.Label != "alpha" {
		t.Fatalf("Resolve only key = %v, %v", k.Label, err)
	}
	if _, err := s.Remove(context.Background(), "alpha"); err != nil {
		t.Fatal(err)
	}
	if vals := e.keyringHeld(s); len(vals) != 0 {
		t.Fatalf("keyring still holds %d records after removing every key", len(vals))
	}
	if _, err := s.Resolve(""); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("Resolve after removing all = %v", err)
	}
	e.check(s)

	// config.toml is readable TOML with the documented fields.
	data, err := os.ReadFile(filepath.Join(e.cfgDir, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"secrets = 'auto'", "clipboard_clear = '30s'", "auto_refresh = true"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, data)
		}
	}
}

func TestConfigFileFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	nk := e.newKey("prod", true)
	nk.Connection.Realm = "master"
	nk.Connection.Scopes = []string{"email"}
	if _, _, err := s.Create(context.Background(), nk); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(e.cfgDir, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"default = 'prod'", "[[keys]]", "id = '", "label = 'prod'", "auth_url = '" + e.srv.URL() + "'",
		"realm = 'master'", "client_id = 'shipping-api'", "scopes = ['email']", "username = 'demo'", "remember_password = true", "created_at = 2026-03-01T12:00:00Z"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, data)
		}
	}
	if conns := s.Connections(); len(conns) != 1 || conns[0].AuthURL != e.srv.URL() {
		t.Fatalf("Connections = %+v", conns)
	}
	e.check(s)
}

func TestSettings(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{})
	if got := s.Settings(); got.ClipboardClear != 30*time.Second || !got.AutoRefresh || got.Secrets != "auto" || got.Timeout != 0 {
		t.Fatalf("defaults = %+v", got)
	}
	if err := os.MkdirAll(e.cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.cfgDir, "config.toml"), []byte("clipboard_clear = \"never\"\nauto_refresh = false\nsecrets = \"file\"\ntimeout = \"45s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := s.Settings(); got.ClipboardClear != 0 || got.AutoRefresh || got.Secrets != "file" || got.Timeout != 45*time.Second {
		t.Fatalf("custom = %+v", got)
	}
	// The config's secrets setting chooses the backend unless overridden.
	if s3, err := Open(Options{ConfigDir: e.cfgDir, StateDir: e.stateDir}); err != nil || s3.choice != BackendFile {
		t.Fatalf("config secrets=file: %v", err)
	}
	t.Setenv(EnvSecrets, "plaintext")
	if s4, err := Open(Options{ConfigDir: e.cfgDir, StateDir: e.stateDir}); err != nil || s4.choice != BackendPlaintext {
		t.Fatalf("SHIPKEY_SECRETS=plaintext: %v", err)
	}
	t.Setenv(EnvSecrets, "memory")
	if _, err := Open(Options{ConfigDir: e.cfgDir, StateDir: e.stateDir}); err == nil {
		t.Fatal("SHIPKEY_SECRETS=memory accepted: memory is for the demo only")
	}
	t.Setenv(EnvSecrets, "")

	if err := os.WriteFile(filepath.Join(e.cfgDir, "config.toml"), []byte("clipboard_clear = \"soon\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tryOpen(Options{}); err == nil || !strings.Contains(err.Error(), "config.toml") || !strings.Contains(err.Error(), "clipboard_clear") {
		t.Fatalf("bad clipboard_clear: %v", err)
	}
	if err := os.WriteFile(filepath.Join(e.cfgDir, "config.toml"), []byte("secrets = \"memory\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tryOpen(Options{}); err == nil || !strings.Contains(err.Error(), "secrets") {
		t.Fatalf("secrets = memory in config accepted: %v", err)
	}
}

func TestDirectoriesFromEnvironment(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv(EnvConfigDir, e.cfgDir)
	t.Setenv(EnvStateDir, e.stateDir)
	s, err := Open(Options{Backend: BackendKeyring, Keyring: e.kr, Auth: e.client, Now: e.clk.Now, Warn: e.warn})
	if err != nil {
		t.Fatal(err)
	}
	if c, st := s.Paths(); c != e.cfgDir || st != e.stateDir {
		t.Fatalf("Paths = %s, %s", c, st)
	}
	e.create(s, "k", false)
	for _, p := range []string{filepath.Join(e.cfgDir, "config.toml"), filepath.Join(e.stateDir, "state.db")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKeysDoesNotTouchKeyring(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "one", false)
	e.create(s, "two", false)
	for _, backend := range []string{BackendKeyring, BackendAuto} {
		s2 := e.open(Options{Backend: backend})
		e.kr.calls.Store(0)
		keys, err := s2.Keys()
		if err != nil || len(keys) != 2 || keys[0].Masked == "" {
			t.Fatalf("Keys = %+v, %v", keys, err)
		}
		if _, err := s2.Key("one"); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.Resolve(""); err != nil {
			t.Fatal(err)
		}
		_ = s2.Settings()
		_ = s2.Connections()
		if n := e.kr.calls.Load(); n != 0 {
			t.Fatalf("%s: listing made %d keyring calls", backend, n)
		}
	}
}

// TestLastUsedAtMostOncePerMinute: a key handed out again within a minute of
// its recorded use is not written again (Last Used is shown to the minute);
// after a minute it is.
func TestLastUsedAtMostOncePerMinute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)

	e.token(s, "k")
	first := e.clk.Now()
	e.clk.Advance(59 * time.Second)
	e.token(s, "k")
	if k := mustKey(t, s, "k"); !k.LastUsed.Equal(first) {
		t.Fatalf("LastUsed = %v, want the first use %v (written again within a minute)", k.LastUsed, first)
	}
	e.clk.Advance(time.Second)
	e.token(s, "k")
	if k := mustKey(t, s, "k"); !k.LastUsed.Equal(e.clk.Now()) {
		t.Fatalf("LastUsed = %v, want %v (a minute after the last write)", k.LastUsed, e.clk.Now())
	}
}

func TestTokenCachedThenRefreshed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil) // access 5m, refresh 30m
	s := e.open(Options{})
	e.create(s, "k", false)

	t1 := e.token(s, "k")
	t2 := e.token(s, "k")
	if t1.AccessToken != t2.AccessToken || e.srv.Count("refresh_token") != 0 {
		t.Fatalf("a valid token was not reused (refreshes: %d)", e.srv.Count("refresh_token"))
	}
	if k := mustKey(t, s, "k"); !k.LastUsed.Equal(e.clk.Now()) {
		t.Fatalf("LastUsed = %v", k.LastUsed)
	}

	e.clk.Advance(5*time.Minute - auth.MaxMargin + time.Second) // inside the margin (30 s for a 5-minute token)
	t3 := e.token(s, "k")
	if t3.AccessToken == t1.AccessToken || e.srv.Count("refresh_token") != 1 {
		t.Fatalf("no refresh inside the expiry margin (refreshes: %d)", e.srv.Count("refresh_token"))
	}
	t4 := e.token(s, "k")
	if t4.AccessToken != t3.AccessToken || e.srv.Count("refresh_token") != 1 {
		t.Fatal("the refreshed token was not reused")
	}
	k := mustKey(t, s, "k")
	if k.Masked != text.Mask(t3.AccessToken) || !k.Token.ObtainedAt.Equal(e.clk.Now()) {
		t.Fatalf("metadata not updated: %+v", k)
	}
	cur, err := s.Current("k")
	if err != nil || cur.AccessToken != t3.AccessToken {
		t.Fatalf("Current = %v", err)
	}
	// Refresh forces one.
	k2, _, err := s.Refresh(context.Background(), "k")
	if err != nil || e.srv.Count("refresh_token") != 2 || k2.Masked == k.Masked {
		t.Fatalf("Refresh: %v (refreshes %d)", err, e.srv.Count("refresh_token"))
	}
	e.check(s)
}

func TestLongAccessShortRefresh(t *testing.T) {
	t.Parallel()
	// The Shipping Service: 15-day access tokens, 30-minute refresh tokens.
	e := newEnv(t, func(c *authtest.Config) {
		c.AccessTTL = 1314000 * time.Second
		c.RefreshTTL = 30 * time.Minute
	})
	s := e.open(Options{})
	e.create(s, "k", false)
	t1 := e.token(s, "k")
	e.clk.Advance(2 * time.Hour) // refresh token long dead, access token fine
	if k := mustKey(t, s, "k"); k.StatusAt(e.clk.Now()) != StatusValid {
		t.Fatalf("status = %v", k.StatusAt(e.clk.Now()))
	}
	t2 := e.token(s, "k")
	if t2.AccessToken != t1.AccessToken || e.srv.Count("refresh_token") != 0 {
		t.Fatal("a valid 15-day access token was not used")
	}
	// A forced refresh now needs a login, but keeps the working token.
	_, _, err := s.Refresh(context.Background(), "k")
	if !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("Refresh with a dead refresh token = %v", err)
	}
	e.noSecretIn(err)
	if t3 := e.token(s, "k"); t3.AccessToken != t1.AccessToken {
		t.Fatal("the access token was dropped")
	}
	e.clk.Advance(16 * 24 * time.Hour)
	_, err = s.Token(context.Background(), "k", TokenOptions{})
	if !errors.Is(err, ErrLoginNeeded) || auth.KindOf(err) != auth.KindLoginRequired {
		t.Fatalf("both expired: %v", err)
	}
}

func TestRotationPersisted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) { c.RevokeRefreshToken = true })
	s := e.open(Options{})
	e.create(s, "k", false)
	old, err := s.Current("k")
	if err != nil {
		t.Fatal(err)
	}
	e.remember(old)
	for i := 0; i < 3; i++ {
		e.clk.Advance(6 * time.Minute)
		ts := e.token(s, "k")
		if ts.RefreshToken == old.RefreshToken {
			t.Fatal("the refresh token was not replaced")
		}
		for _, v := range e.keyringHeld(s) {
			if strings.Contains(v, old.RefreshToken) {
				t.Fatal("the old refresh token is still stored")
			}
		}
		old = ts
	}
	if n := e.srv.Count("refresh_token"); n != 3 {
		t.Fatalf("refreshes = %d", n)
	}
}

func TestRefreshExpiredNeedsLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) { c.RefreshTTL = 10 * time.Minute })
	s := e.open(Options{})
	e.create(s, "my key", false)
	e.clk.Advance(11 * time.Minute)
	if k := mustKey(t, s, "my key"); k.StatusAt(e.clk.Now()) != StatusLoginNeeded {
		t.Fatalf("status = %v", k.StatusAt(e.clk.Now()))
	}
	_, err := s.Token(context.Background(), "my key", TokenOptions{MarkUsed: true})
	if !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("err = %v, want ErrLoginNeeded", err)
	}
	if auth.KindOf(err) != auth.KindLoginRequired {
		t.Fatalf("auth.KindOf = %v", auth.KindOf(err))
	}
	want := "key my key: login needed (the refresh token expired at 2026-03-01 12:10:00 UTC); run: shipkey login 'my key'"
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	e.noSecretIn(err)
	if e.srv.Count("refresh_token") != 0 {
		t.Fatal("a locally expired refresh token was sent")
	}
	k := mustKey(t, s, "my key")
	if !k.LoggedOut || !k.LastUsed.IsZero() {
		t.Fatalf("key after login needed: %+v", k)
	}
	// Logging in again brings it back.
	if _, _, err := s.Login(context.Background(), "my key", LoginOptions{}); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("Login without a remembered password = %v", err)
	}
	if _, _, err := s.Login(context.Background(), "my key", LoginOptions{Password: "wrong"}); auth.KindOf(err) != auth.KindInvalidCredentials {
		t.Fatalf("Login wrong password = %v", err)
	} else {
		e.noSecretIn(err)
	}
	k, _, err = s.Login(context.Background(), "my key", LoginOptions{Password: authtest.DemoPassword})
	if err != nil || k.LoggedOut || k.StatusAt(e.clk.Now()) != StatusValid {
		t.Fatalf("Login: %v %+v", err, k)
	}
	e.token(s, "my key")
}

func TestSessionEndedAtServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)
	e.srv.EndSessions()
	e.clk.Advance(6 * time.Minute)
	_, err := s.Token(context.Background(), "k", TokenOptions{})
	if !errors.Is(err, ErrLoginNeeded) || auth.KindOf(err) != auth.KindLoginRequired {
		t.Fatalf("err = %v", err)
	}
	if e.srv.Count("refresh_token") != 1 || !strings.Contains(err.Error(), "run: shipkey login k") {
		t.Fatalf("refreshes = %d, err = %v", e.srv.Count("refresh_token"), err)
	}
	e.noSecretIn(err)
	// Known dead: no second refresh is sent.
	if _, err := s.Token(context.Background(), "k", TokenOptions{}); !errors.Is(err, ErrLoginNeeded) || e.srv.Count("refresh_token") != 1 {
		t.Fatalf("second call: %v (refreshes %d)", err, e.srv.Count("refresh_token"))
	}
}

func TestRememberedPasswordRelogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) { c.RefreshTTL = 10 * time.Minute })
	s := e.open(Options{})
	e.create(s, "k", true)
	e.clk.Advance(11 * time.Minute)
	ts := e.token(s, "k")
	if e.srv.Count("password") != 2 || e.srv.Count("refresh_token") != 0 {
		t.Fatalf("password grants %d, refreshes %d", e.srv.Count("password"), e.srv.Count("refresh_token"))
	}
	if !ts.AccessValid(e.clk.Now()) {
		t.Fatal("re-login gave no valid token")
	}
	// Server ended the session: the refresh fails, the remembered password works.
	e.srv.EndSessions()
	e.clk.Advance(6 * time.Minute)
	e.token(s, "k")
	if e.srv.Count("password") != 3 || e.srv.Count("refresh_token") != 1 {
		t.Fatalf("password grants %d, refreshes %d", e.srv.Count("password"), e.srv.Count("refresh_token"))
	}
	// Empty password on Login uses the remembered one.
	if _, _, err := s.Login(context.Background(), "k", LoginOptions{}); err != nil {
		t.Fatal(err)
	}
	// A remembered password the server now refuses: login needed.
	e.srv.SetUser(authtest.User{Username: authtest.DemoUsername, Password: "changed"})
	e.clk.Advance(11 * time.Minute)
	_, err := s.Token(context.Background(), "k", TokenOptions{})
	if !errors.Is(err, ErrLoginNeeded) || !strings.Contains(err.Error(), "remembered password") {
		t.Fatalf("refused remembered password: %v", err)
	}
	e.noSecretIn(err)
	e.check(s)
}

func TestNetworkErrorKeepsKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)
	e.clk.Advance(6 * time.Minute)
	e.srv.Inject(authtest.Fault{Endpoint: "token", Status: 503, Body: "down"})
	_, err := s.Token(context.Background(), "k", TokenOptions{})
	if err == nil || errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("err = %v", err)
	}
	e.noSecretIn(err)
	if k := mustKey(t, s, "k"); k.LoggedOut {
		t.Fatal("a server failure marked the key dead")
	}
	e.token(s, "k")
}

func TestLogoutDropsTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "ok", false)
	e.create(s, "refused", false)

	if _, err := s.Logout(context.Background(), "ok"); err != nil {
		t.Fatal(err)
	}
	if e.srv.Count("logout") != 1 {
		t.Fatalf("logouts = %d", e.srv.Count("logout"))
	}

	e.create(s, "ended", false)
	e.srv.Inject(authtest.Fault{Endpoint: "logout", Status: 400, Body: `{"error":"invalid_grant","error_description":"Session not active"}`})
	if res, err := s.Logout(context.Background(), "ended"); err != nil || !res.Ended() || !res.AlreadyEnded {
		t.Fatalf("a session that had already ended: %+v, %v", res, err)
	}

	// Twice: with no client authentication chosen, invalid_client to the
	// secret in the form is tried again with HTTP Basic.
	e.srv.Inject(authtest.Fault{Endpoint: "logout", Status: 401, Times: 2, Body: `{"error":"invalid_client","error_description":"Invalid client credentials"}`})
	_, err := s.Logout(context.Background(), "refused")
	if err == nil {
		t.Fatal("the server's refusal was not returned")
	}
	e.noSecretIn(err)
	// Refused: the end is pending, the tokens are kept for the retry, and
	// none is handed out meanwhile.
	if k := mustKey(t, s, "refused"); !k.LoggedOut || k.EndPending.IsZero() {
		t.Fatalf("refused logout left no pending end: %+v", k)
	}
	if _, err := s.Token(context.Background(), "refused", TokenOptions{}); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("Token with a pending end = %v", err)
	}
	before := e.srv.Count("logout")
	if res, err := s.Logout(context.Background(), "refused"); err != nil || !res.Ended() {
		t.Fatalf("retried logout: %+v, %v", res, err)
	}
	if e.srv.Count("logout") != before+1 {
		t.Fatal("the retry sent no logout")
	}
	if k := mustKey(t, s, "refused"); !k.EndPending.IsZero() {
		t.Fatalf("pending end kept after the server ended the session: %+v", k)
	}

	for _, label := range []string{"ok", "ended", "refused"} {
		k := mustKey(t, s, label)
		if !k.LoggedOut || k.Masked != "" || k.StatusAt(e.clk.Now()) != StatusNoToken {
			t.Fatalf("%s after logout: %+v", label, k)
		}
		if _, err := s.Current(label); !errors.Is(err, ErrLoginNeeded) {
			t.Fatalf("Current after logout = %v", err)
		}
		if _, err := s.Token(context.Background(), label, TokenOptions{}); !errors.Is(err, ErrLoginNeeded) || !strings.Contains(err.Error(), "logged out") {
			t.Fatalf("Token after logout = %v", err)
		}
		if cs, err := s.ClientSecret(label); err != nil || cs != testClientSecret {
			t.Fatalf("the client secret went with the tokens: %v", err)
		}
	}
	for _, v := range e.keyringHeld(s) {
		if strings.Contains(v, "access_token") || strings.Contains(v, "refresh_token") {
			t.Fatal("tokens kept in the keyring after logout")
		}
	}
	e.check(s)
	if _, _, err := s.Login(context.Background(), "ok", LoginOptions{Password: authtest.DemoPassword}); err != nil {
		t.Fatal(err)
	}
	e.token(s, "ok")
}

func TestLiveness(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)
	lv, err := s.Liveness(context.Background(), "k")
	if err != nil || lv.State != auth.LiveActive {
		t.Fatalf("Liveness = %+v, %v", lv, err)
	}
	e.srv.EndSessions()
	if lv, err := s.Liveness(context.Background(), "k"); err != nil || lv.State != auth.LiveInactive {
		t.Fatalf("Liveness after end = %+v, %v", lv, err)
	}
}

func TestTokenSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)
	src := s.TokenSource(context.Background(), "k")
	tok, err := src.Token()
	if err != nil || tok.AccessToken == "" || tok.TokenType != "Bearer" {
		t.Fatalf("Token = %+v, %v", tok, err)
	}
	e.remember(&auth.TokenSet{AccessToken: tok.AccessToken})
	if _, err := src.Token(); err != nil || e.srv.Count("refresh_token") != 0 {
		t.Fatalf("second Token: %v", err)
	}
	if _, err := s.TokenSource(context.Background(), "nope").Token(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestConcurrentRefreshOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) { c.RevokeRefreshToken = true })
	// Two stores on the same files stand for two processes; each has its
	// own goroutines. The file lock must let exactly one refresh.
	s1 := e.open(Options{})
	s2 := e.open(Options{})
	e.create(s1, "k", false)
	e.clk.Advance(6 * time.Minute)

	const n = 8
	var wg sync.WaitGroup
	toks := make([]string, 2*n)
	errs := make([]error, 2*n)
	for i := 0; i < 2*n; i++ {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Add(1)
		go func(i int, s *Store) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ts, err := s.Token(ctx, "k", TokenOptions{MarkUsed: true})
			errs[i] = err
			if err == nil {
				toks[i] = ts.AccessToken
			}
		}(i, s)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
		if toks[i] != toks[0] {
			t.Fatalf("goroutine %d got another token", i)
		}
	}
	if got := e.srv.Count("refresh_token"); got != 1 {
		t.Fatalf("refreshes = %d, want exactly 1", got)
	}
	e.check(s1)
}

func TestConcurrentWritersKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s1 := e.open(Options{})
	s2 := e.open(Options{})
	for _, l := range []string{"a", "b", "c"} {
		e.create(s1, l, false)
	}
	e.clk.Advance(time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 5; i++ {
		for _, l := range []string{"a", "b", "c"} {
			wg.Add(1)
			go func(s *Store, l string) {
				defer wg.Done()
				errs <- s.MarkUsed(l)
			}([]*Store{s1, s2}[i%2], l)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, err := s2.Create(context.Background(), e.newKey("d", false))
		errs <- err
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s1.Keys()
	if err != nil || len(keys) != 4 {
		t.Fatalf("Keys = %d, %v", len(keys), err)
	}
	for _, k := range keys[:3] {
		if !k.LastUsed.Equal(e.clk.Now()) {
			t.Fatalf("%s lost its Last Used", k.Label)
		}
	}
	e.check(s1)
}

func TestCorruptedFilesAreNeverOverwritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)
	cfgPath := filepath.Join(e.cfgDir, "config.toml")
	goodConfig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}

	badConfig := []byte("default = \"k\"\n\n[[keys]\nid = 1\n")
	if err := os.WriteFile(cfgPath, badConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tryOpen(Options{}); err == nil || !strings.Contains(err.Error(), cfgPath+": line 3: ") || !strings.HasSuffix(err.Error(), "; fix or move it away") {
		t.Fatalf("Open on a corrupted config = %v", err)
	}
	ops := map[string]func() error{
		"Keys":     func() error { _, err := s.Keys(); return err },
		"MarkUsed": func() error { return s.MarkUsed("k") },
		"Create":   func() error { _, _, err := s.Create(context.Background(), e.newKey("new", false)); return err },
		"Token":    func() error { _, err := s.Token(context.Background(), "k", TokenOptions{MarkUsed: true}); return err },
		"Rename":   func() error { return s.Rename("k", "j") },
		"Remove":   func() error { _, err := s.Remove(context.Background(), "k"); return err },
		"Default":  func() error { return s.SetDefault("k") },
		"Logout":   func() error { _, err := s.Logout(context.Background(), "k"); return err },
	}
	for name, op := range ops {
		err := op()
		if err == nil || !strings.Contains(err.Error(), "config.toml") {
			t.Fatalf("%s on a corrupted config = %v", name, err)
		}
		e.noSecretIn(err)
		if got, _ := os.ReadFile(cfgPath); string(got) != string(badConfig) {
			t.Fatalf("%s rewrote the corrupted config.toml", name)
		}
	}
	// Wrong types are reported too.
	if err := os.WriteFile(cfgPath, []byte("auto_refresh = \"yes\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys(); err == nil || !strings.Contains(err.Error(), "config.toml: line 1") {
		t.Fatalf("type error = %v", err)
	}

	// An emptied config.toml beside the state of key k: an error naming
	// both files and what to do; nothing is written.
	for _, emptied := range []string{"", "null\n", "# shipkey configuration: no secrets are kept in this file.\n\x00\x00\x00"} {
		if err := os.WriteFile(cfgPath, []byte(emptied), 0o600); err != nil {
			t.Fatal(err)
		}
		dbBefore, _ := os.ReadFile(filepath.Join(e.stateDir, "state.db"))
		for name, op := range map[string]func() error{
			"Open":     func() error { _, err := e.tryOpen(Options{}); return err },
			"Keys":     func() error { _, err := s.Keys(); return err },
			"MarkUsed": func() error { return s.MarkUsed("k") },
			"Create":   func() error { _, _, err := s.Create(context.Background(), e.newKey("new", false)); return err },
			"Default":  func() error { return s.SetDefault("k") },
		} {
			err := op()
			if err == nil || !strings.Contains(err.Error(), cfgPath+" holds no keys, but "+filepath.Join(e.stateDir, "state.db")+" holds the data of 1 key") ||
				!strings.Contains(err.Error(), "restore config.toml from a backup, or move "+e.stateDir+" away to start over") {
				t.Fatalf("%s on config %q = %v", name, emptied, err)
			}
			if got, _ := os.ReadFile(cfgPath); string(got) != emptied {
				t.Fatalf("%s rewrote the emptied config.toml", name)
			}
			if got, _ := os.ReadFile(filepath.Join(e.stateDir, "state.db")); !bytes.Equal(got, dbBefore) {
				t.Fatalf("%s changed state.db beside an emptied config", name)
			}
		}
	}

	// Restore the config; break state.db.
	if err := os.WriteFile(cfgPath, goodConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(e.stateDir, "state.db")
	badState := bytes.Repeat([]byte("not a database "), 1000)
	if err := os.WriteFile(dbPath, badState, 0o600); err != nil {
		t.Fatal(err)
	}
	// A damaged state.db is only an index: every operation sets it aside
	// (never over an earlier one), says so, rebuilds it and goes on.
	damagedSoFar := 0
	for name, op := range map[string]func() error{
		"Keys":     func() error { _, err := s.Keys(); return err },
		"MarkUsed": func() error { return s.MarkUsed("k") },
		"Create": func() error {
			_, _, err := s.Create(context.Background(), e.newKey("new-"+strconv.Itoa(rand.IntN(1e6)), false))
			return err
		},
	} {
		if err := os.WriteFile(dbPath, badState, 0o600); err != nil {
			t.Fatal(err)
		}
		before := e.warn.String()
		if err := op(); err != nil {
			t.Fatalf("%s on a damaged state.db = %v", name, err)
		}
		if w := strings.TrimPrefix(e.warn.String(), before); !strings.Contains(w, dbPath+" was damaged") || strings.Count(w, "\n") != 1 {
			t.Fatalf("%s: not said in one line: %q", name, w)
		}
		aside, _ := filepath.Glob(dbPath + ".damaged-*")
		kept := 0
		for _, p := range aside {
			if got, _ := os.ReadFile(p); bytes.Equal(got, badState) {
				kept++
			}
		}
		if kept != len(aside) || kept != damagedSoFar+1 {
			t.Fatalf("%s: the damaged state.db was not kept aside beside the earlier ones: %d of %v", name, kept, aside)
		}
		damagedSoFar++
		if _, err := s.Key("k"); err != nil {
			t.Fatalf("%s: key lost with the index: %v", name, err)
		}
	}
	// A leftover temporary file from a crash is harmless.
	if err := os.WriteFile(filepath.Join(e.cfgDir, ".config.toml.tmp-123"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys(); err != nil {
		t.Fatal(err)
	}
}

func TestKeyringFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)

	// No D-Bus: a clear error wrapping ErrBackendMissing, nothing stored.
	s := e.open(Options{Keyring: failKeyring{}})
	_, _, err := s.Create(context.Background(), e.newKey("k", false))
	if !errors.Is(err, ErrBackendMissing) || !strings.Contains(err.Error(), "dbus-launch") {
		t.Fatalf("Create with no keyring = %v", err)
	}
	e.noSecretIn(err)
	if keys, _ := s.Keys(); len(keys) != 0 {
		t.Fatal("a key was stored although its secrets were not")
	}

	// A keyring that never answers: bounded by the timeout.
	s = e.open(Options{Keyring: newHangKeyring(t)})
	s.keyringBackendForTest().timeout = 50 * time.Millisecond
	_, _, err = s.Create(context.Background(), e.newKey("k", false))
	var be *BackendError
	if !errors.Is(err, ErrBackendMissing) || !errors.As(err, &be) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Create with a hanging keyring = %v", err)
	}
	if keys, _ := s.Keys(); len(keys) != 0 {
		t.Fatal("a key was stored although its secrets were not")
	}
	// The keyring is probed before the grant: no session was opened.
	if e.srv.Count("password") != 0 {
		t.Fatalf("password grants = %d", e.srv.Count("password"))
	}

	// The keyring fails after the grant: the session is ended again.
	fk := &flakyKeyring{fakeKeyring: newFakeKeyring()}
	s = e.open(Options{Keyring: fk})
	_, _, err = s.Create(context.Background(), e.newKey("k", false))
	if !errors.Is(err, ErrBackendMissing) || e.srv.Count("logout") != 1 {
		t.Fatalf("Create with a failing Set = %v (logouts %d)", err, e.srv.Count("logout"))
	}
	if keys, _ := s.Keys(); len(keys) != 0 {
		t.Fatal("a key was stored although its secrets were not")
	}

	// A locked keyring.
	if !errors.Is(keyringError("read", errors.New("Cannot create an item in a locked collection")), ErrBackendLocked) {
		t.Fatal("locked collection not classified as locked")
	}
	e.check(nil)
}

// flakyKeyring answers reads but cannot write.
type flakyKeyring struct{ *fakeKeyring }

func (f *flakyKeyring) Set(string, string, string) error { return errNoDBus }

func TestAutoFallsBackToFile(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv(EnvPassphrase, "correct horse battery staple")

	// The probe of a hanging keyring is bounded too.
	hs := e.open(Options{Backend: BackendAuto, Keyring: newHangKeyring(t)})
	hs.probeTimeout = 50 * time.Millisecond
	if b := hs.Backend(); b != BackendFile {
		t.Fatalf("Backend = %s", b)
	}
	if w := e.warn.String(); w != "" {
		t.Fatalf("warned before any secret was written: %q", w)
	}
	e.create(hs, "h", false)
	if w := e.warn.String(); !strings.Contains(w, "no OS keyring available (") || !strings.Contains(w, "did not answer") {
		t.Fatalf("warning = %q", w)
	}

	e2 := newEnv(t, nil)
	t.Setenv(EnvPassphrase, "correct horse battery staple")
	s := e2.open(Options{Backend: BackendAuto, Keyring: failKeyring{}})
	e2.create(s, "k", false)
	if s.Backend() != BackendFile {
		t.Fatalf("Backend = %s", s.Backend())
	}
	want := "shipkey: no OS keyring available (" + errNoDBus.Error() + "); the auto backend keeps secrets in the encrypted files in " +
		filepath.Join(e2.stateDir, "secrets.d") + "; to choose it without this check, set SHIPKEY_SECRETS=file (or secrets = \"file\" in config.toml). Said once.\n"
	if w := e2.warn.String(); w != want {
		t.Fatalf("warning:\n got %q\nwant %q", w, want)
	}
	e2.token(s, "k")
	// Once per process: a second store says nothing more.
	s2 := e2.open(Options{Backend: BackendAuto, Keyring: failKeyring{}})
	s2.fileBackend().identity = s.fileBackend().identity // skip a second scrypt derivation
	e2.token(s2, "k")
	if strings.Count(e2.warn.String(), "no OS keyring") != 1 {
		t.Fatalf("warned again: %q", e2.warn.String())
	}
	// Once per store: a later process (the per-process memory forgotten)
	// says nothing either; the store remembers.
	fallbackWarned.Delete(e2.stateDir)
	s4 := e2.open(Options{Backend: BackendAuto, Keyring: failKeyring{}})
	s4.fileBackend().identity = s.fileBackend().identity
	e2.token(s4, "k")
	if strings.Count(e2.warn.String(), "no OS keyring") != 1 {
		t.Fatalf("warned again in a new process: %q", e2.warn.String())
	}
	k2 := mustKey(t, s, "k")
	for _, f := range []string{"secrets.d/" + k2.ID + ".age", "secrets.key.age"} {
		if _, err := os.Stat(filepath.Join(e2.stateDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	e2.check(s)

	// A working keyring is used by auto.
	e3 := newEnv(t, nil)
	s3 := e3.open(Options{Backend: BackendAuto})
	e3.create(s3, "k", false)
	if s3.Backend() != BackendKeyring || len(e3.keyringHeld(s3)) != 1 || e3.warn.String() != "" {
		t.Fatalf("auto with a keyring: %s, %d records, warn %q", s3.Backend(), len(e3.keyringHeld(s3)), e3.warn.String())
	}
}

func TestFileBackend(t *testing.T) {
	e := newEnv(t, nil)
	// Each open below stands for another process; nothing is kept between
	// them (the session is tested in session_test.go).
	t.Setenv(EnvUnlockMech, MechNone)
	prompts := 0
	pass := func(prompt string) (string, error) {
		prompts++
		return "s3cret passphrase", nil
	}
	s := e.open(Options{Backend: BackendFile, Passphrase: pass})
	e.create(s, "k", true)
	e.create(s, "j", false)
	e.clk.Advance(6 * time.Minute)
	e.token(s, "k")
	if _, err := s.Logout(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	e.check(s)
	if prompts != 2 { // a new passphrase and its confirmation
		t.Fatalf("prompted %d times, want once per process", prompts)
	}

	// Another process, no passphrase anywhere: locked, clearly.
	locked := e.open(Options{Backend: BackendFile})
	_, err := locked.Token(context.Background(), "k", TokenOptions{})
	if !errors.Is(err, ErrBackendLocked) || !strings.Contains(err.Error(), "no terminal to ask its passphrase on") || !strings.Contains(err.Error(), "set SHIPKEY_PASSPHRASE") {
		t.Fatalf("no passphrase = %v", err)
	}
	if keys, err := locked.Keys(); err != nil || len(keys) != 2 {
		t.Fatalf("listing needs no passphrase: %v", err)
	}

	// Another process, wrong passphrase.
	t.Setenv(EnvPassphrase, "not it")
	wrong := e.open(Options{Backend: BackendFile, Passphrase: pass})
	_, err = wrong.Token(context.Background(), "k", TokenOptions{})
	if !errors.Is(err, ErrBackendLocked) || !strings.Contains(err.Error(), "wrong passphrase for "+filepath.Join(e.stateDir, "secrets.key.age")) {
		t.Fatalf("wrong passphrase = %v", err)
	}
	e.noSecretIn(err)
	if strings.Contains(err.Error(), "not it") {
		t.Fatal("the passphrase is in the error")
	}
	if prompts != 2 { // a new passphrase and its confirmation
		t.Fatal("SHIPKEY_PASSPHRASE did not take precedence over the prompt")
	}

	// Another process with the right passphrase derives once.
	t.Setenv(EnvPassphrase, "s3cret passphrase")
	right := e.open(Options{Backend: BackendFile})
	n0 := scryptUnwraps.Load()
	if _, err := right.Token(context.Background(), "k", TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	want := n0 + 1
	if got := scryptUnwraps.Load(); got != want {
		t.Fatalf("derivations = %d, want %d", got-n0, want-n0)
	}

	// Remove deletes the key's secrets file.
	kID := mustKey(t, s, "k").ID
	if _, err := s.Remove(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if n := countSecretFiles(filepath.Join(e.stateDir, "secrets.d")); n != 1 {
		t.Fatalf("secrets files after remove: %d, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "secrets.d", kID+".age")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the removed key's secrets file: %v", err)
	}
	e.check(s)
}

func TestPlaintextBackend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	e.create(s, "k", false)
	e.clk.Advance(6 * time.Minute)
	e.token(s, "k") // a renewal: written again
	e.create(e.open(Options{Backend: BackendPlaintext}), "k2", false)
	if n := strings.Count(e.warn.String(), "stored unencrypted in "+filepath.Join(e.stateDir, "plaintext.d")); n != 1 {
		t.Fatalf("warned %d times, want once, at the store's first write:\n%s", n, e.warn.String())
	}
	data, err := os.ReadFile(filepath.Join(e.stateDir, "plaintext.d", mustKey(t, s, "k").ID+".json"))
	if err != nil || !strings.Contains(string(data), testClientSecret) {
		t.Fatalf("plaintext.d: %v", err)
	}
	e.check(s) // permissions, and nothing but secrets.json holds a secret
}

func TestMemoryBackend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendMemory})
	e.create(s, "demo", false)
	e.token(s, "demo")
	if s.Backend() != BackendMemory {
		t.Fatal(s.Backend())
	}
	for _, f := range []string{"secrets.d", "plaintext.d", "secrets.age", "secrets.json"} {
		if _, err := os.Stat(filepath.Join(e.stateDir, f)); err == nil {
			t.Fatalf("%s written by the memory backend", f)
		}
	}
	e.check(s)
}

func TestCreateFailureStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	nk := e.newKey("k", false)
	nk.Password = "wrong"
	_, _, err := s.Create(context.Background(), nk)
	if auth.KindOf(err) != auth.KindInvalidCredentials {
		t.Fatalf("err = %v", err)
	}
	e.noSecretIn(err)
	nk = e.newKey("k", false)
	nk.ClientSecret = "wrong-secret"
	_, _, err = s.Create(context.Background(), nk)
	if auth.KindOf(err) != auth.KindInvalidClient {
		t.Fatalf("err = %v", err)
	}
	nk = e.newKey("k", false)
	nk.Connection.AuthURL = "http://example.com"
	if _, _, err := s.Create(context.Background(), nk); auth.KindOf(err) != auth.KindConfig {
		t.Fatalf("plain http to a remote host = %v", err)
	}
	if keys, _ := s.Keys(); len(keys) != 0 || len(e.kr.values()) != 0 || len(e.keyringHeld(s)) != 0 {
		t.Fatal("something was stored")
	}
	if _, err := os.Stat(filepath.Join(e.cfgDir, "config.toml")); err == nil {
		t.Fatal("config.toml written although nothing was created")
	}
}

func TestLoginNeededErrorShape(t *testing.T) {
	t.Parallel()
	cause := &auth.Error{Kind: auth.KindLoginRequired, Msg: "x"}
	err := error(&LoginNeededError{Label: "a\x1bb", Why: "why\nnot", Err: cause})
	if !errors.Is(err, ErrLoginNeeded) || !errors.Is(err, cause) || auth.KindOf(err) != auth.KindLoginRequired {
		t.Fatal("unwrap")
	}
	if strings.ContainsAny(err.Error(), "\x1b\n") {
		t.Fatalf("unsafe message %q", err)
	}
	if got := text.ShellQuote("it's"); got != `'it'\''s'` {
		t.Fatalf("text.ShellQuote = %s", got)
	}
}

// Unlock asks for the passphrase and says the keyring fallback up front, so
// the interactive app never has a prompt or a warning land on its screen.
func TestUnlockBeforeTheApp(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv(EnvPassphrase, "")
	asked := 0
	s := e.open(Options{Backend: BackendAuto, Keyring: failKeyring{}, Passphrase: func(string) (string, error) {
		asked++
		return "correct horse battery staple", nil
	}})
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	if asked != 2 { // a new passphrase and its confirmation
		t.Fatalf("passphrase asked %d times by Unlock, want 2", asked)
	}
	if w := e.warn.String(); !strings.Contains(w, "no OS keyring available (") {
		t.Fatalf("Unlock did not say the fallback: %q", w)
	}
	before := e.warn.String()
	e.create(s, "k", false)
	e.token(s, "k")
	if asked != 2 || e.warn.String() != before {
		t.Fatalf("after Unlock: asked %d times, warnings %q", asked, e.warn.String())
	}

	locked := newEnv(t, nil)
	t.Setenv(EnvPassphrase, "")
	ls := locked.open(Options{Backend: BackendFile})
	if err := ls.Unlock(); !errors.Is(err, ErrBackendLocked) {
		t.Fatalf("Unlock without a passphrase = %v, want ErrBackendLocked", err)
	}
}

// TestCreateSplitsPastedRealmURL: a realm URL pasted as the auth URL (as
// copied from a browser or the realm's discovery document) is split into the
// auth URL and the realm, so credentials go to the token endpoint and the
// key keeps the clean connection; a query is refused before anything is sent.
func TestCreateSplitsPastedRealmURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	nk := e.newKey("pasted", false)
	base := nk.Connection.AuthURL
	nk.Connection.AuthURL = base + "/auth/realms/" + nk.Connection.RealmName() + "/protocol/openid-connect/token"
	nk.Connection.Realm = ""
	k, _, err := s.Create(context.Background(), nk)
	if err != nil {
		t.Fatalf("Create with a pasted realm URL: %v", err)
	}
	if k.Connection.AuthURL != base || k.Connection.RealmName() != e.newKey("x", false).Connection.RealmName() {
		t.Fatalf("connection kept = %+v, want auth URL %s", k.Connection, base)
	}

	q := e.newKey("query", false)
	q.Connection.AuthURL += "?kc_idp_hint=x"
	before := e.srv.Count("password")
	if _, _, err := s.Create(context.Background(), q); err == nil || !strings.Contains(err.Error(), "query") {
		t.Fatalf("an auth URL with a query: %v", err)
	}
	if e.srv.Count("password") != before {
		t.Fatal("credentials were sent to an auth URL with a query")
	}
}

// A timeout that is not a positive duration is one line naming the setting.
func TestTimeoutSettingMustBeADuration(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"soon", "0s", "-5s"} {
		c := &configFile{Timeout: bad}
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), `timeout = "`+bad+`" is not a positive duration`) {
			t.Errorf("timeout = %q: %v", bad, err)
		}
	}
	if d, err := ParseTimeout("--timeout", "2m"); err != nil || d != 2*time.Minute {
		t.Fatalf("2m: %v %v", d, err)
	}
}
