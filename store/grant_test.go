package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// A client credentials key: no refresh token, so never "refreshable"; at
// expiry the store runs its grant again unasked ("renews itself"); a refused
// client secret ends it (login needed) instead of being retried forever.
func TestClientCredentialsRenewsItself(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{})
	ctx := context.Background()
	k, ts, err := s.Create(ctx, NewKey{Label: "ci", Definition: Definition{Connection: e.conn(), Grant: auth.GrantClientCredentials, Username: "ignored"}, ClientSecret: testClientSecret, Password: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	e.remember(ts)
	e.check(s)
	if k.Grant != auth.GrantClientCredentials || k.Username != "" || k.HasRefreshToken || ts.RefreshToken != "" {
		t.Fatalf("key %+v, tokens %+v", k, ts.Redacted())
	}
	if got := k.StatusAt(e.clk.Now()); got != StatusValid {
		t.Fatalf("fresh key status %v", got)
	}
	e.clk.Advance(6 * time.Minute)
	if got := mustKey(t, s, "ci").StatusAt(e.clk.Now()); got != StatusRenewsItself {
		t.Fatalf("expired client credentials key: status %v, want %v", got, StatusRenewsItself)
	}
	before := e.srv.Count("client_credentials")
	ts2 := e.token(s, "ci")
	if ts2.AccessToken == ts.AccessToken || e.srv.Count("client_credentials") != before+1 || e.srv.Count("refresh_token") != 0 {
		t.Fatalf("renewal did not run the grant again (grants %d→%d, refreshes %d)", before, e.srv.Count("client_credentials"), e.srv.Count("refresh_token"))
	}
	// Refresh returns the set it holds.
	_, ts3, err := s.Refresh(ctx, "ci")
	if err != nil || ts3 == nil || ts3.AccessToken == ts2.AccessToken {
		t.Fatalf("Refresh: %v, %v", ts3, err)
	}
	e.remember(ts3)

	// The secret is refused from now on (rotated at the server): login needed.
	e.srv.SetClient(authtest.Client{ID: authtest.DemoClientID, Secret: "rotated-secret", ServiceAccount: true})
	e.clk.Advance(6 * time.Minute)
	_, err = s.Token(ctx, "ci", TokenOptions{})
	if !errors.Is(err, ErrLoginNeeded) || auth.KindOf(err) != auth.KindInvalidClient {
		t.Fatalf("refused secret: %v", err)
	}
	if got := mustKey(t, s, "ci").StatusAt(e.clk.Now()); got != StatusNoToken {
		t.Fatalf("after a refused secret: status %v", got)
	}
	e.check(s)
}

// A key of the password grant without a refresh token in its answer is not
// "refreshable" once its access token expired.
func TestNoRefreshTokenNeverRefreshable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k := Key{Token: auth.TokenSet{ObtainedAt: now, AccessExpiresAt: now.Add(time.Minute)}}
	if got := k.StatusAt(now.Add(2 * time.Minute)); got != StatusLoginNeeded {
		t.Fatalf("status %v, want %v", got, StatusLoginNeeded)
	}
	k.HasRefreshToken = true
	if got := k.StatusAt(now.Add(2 * time.Minute)); got != StatusRefreshable {
		t.Fatalf("with a refresh token of unstated expiry: %v", got)
	}
}

// An interactive grant reports its prompt through NewKey.Prompt, and a
// cancelled wait stores nothing.
func TestInteractiveGrantCancelledStoresNothing(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var got auth.Prompt
	_, _, err := s.Create(ctx, NewKey{Label: "dev", Definition: Definition{Connection: e.conn(), Grant: auth.GrantDeviceCode}, ClientSecret: testClientSecret, Prompt: func(p auth.Prompt) { got = p; cancel() }})
	if err == nil || got.UserCode == "" || got.VerificationURIComplete == "" {
		t.Fatalf("Create: %v, prompt %+v", err, got)
	}
	if keys, _ := s.Keys(); len(keys) != 0 {
		t.Fatalf("a cancelled grant stored %d keys", len(keys))
	}
}
