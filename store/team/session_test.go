package team_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// TestLogoutClientCredentials: a logout on a revokes the shared token at the
// server once; b, which cached it unexpired, renews by client credentials
// (one grant for the team) instead of handing it out. Login on a serves b.
func TestLogoutClientCredentials(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := authtest.NewServer(authtest.Config{
		Clients:   []authtest.Client{{ID: "robot", Secret: clientSecret, ServiceAccount: true}},
		AccessTTL: 10 * time.Minute,
	})
	t.Cleanup(srv.Close)
	ctx := context.Background()
	a, b := twoMachines(t, c, "ccbye")
	nk := team.NewKey{Label: "robot", Definition: store.Definition{Grant: auth.GrantClientCredentials, Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "robot"}}, ClientSecret: clientSecret}
	if _, err := a.eng.CreateKey(ctx, "ccbye", nk); err != nil {
		t.Fatal(err)
	}
	old, err := b.eng.Token(ctx, "ccbye", "robot", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	grants, revokes := srv.Count("client_credentials"), srv.Count("revoke")
	res, err := a.eng.Logout(ctx, "ccbye", "robot")
	if err != nil || !res.HadToken || res.End.Via != "revocation" {
		t.Fatalf("logout: %+v, %v; want the token revoked", res, err)
	}
	if n := srv.Count("revoke") - revokes; n != 1 {
		t.Errorf("revocations: %d, want 1", n)
	}
	tb, err := b.eng.Token(ctx, "ccbye", "robot", team.TokenOptions{})
	if err != nil || tb.AccessToken == old.AccessToken {
		t.Fatalf("b after a's logout: the old token handed out again (%v)", err)
	}
	ta, err := a.eng.Token(ctx, "ccbye", "robot", team.TokenOptions{})
	if err != nil || ta.AccessToken != tb.AccessToken {
		t.Fatalf("a and b disagree after the logout (%v)", err)
	}
	if n := srv.Count("client_credentials") - grants; n != 1 {
		t.Errorf("client credentials grants after the logout: %d, want 1 for the team", n)
	}

	k, tl, err := a.eng.Login(ctx, "ccbye", "robot", team.LoginOptions{})
	if err != nil || k.Label != "robot" || tl.AccessToken == tb.AccessToken {
		t.Fatalf("login: %v", err)
	}
	if got, err := b.eng.Token(ctx, "ccbye", "robot", team.TokenOptions{}); err != nil || got.AccessToken != tl.AccessToken {
		t.Fatalf("b does not serve a's login (%v)", err)
	}
	if _, err := a.eng.Logout(ctx, "ccbye", "nope"); !errors.Is(err, team.ErrKeyNotFound) {
		t.Errorf("logout of no key: %v", err)
	}
}

// TestRemovedKeyCachedTokenRefused: a key removed on b is refused on a at
// once, though a cached a token that has not expired.
func TestRemovedKeyCachedTokenRefused(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	a, b := twoMachines(t, c, "gonekey")
	if _, err := a.eng.CreateKey(ctx, "gonekey", newKey(srv, "one")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.Token(ctx, "gonekey", "one", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.eng.RemoveKey(ctx, "gonekey", "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.Token(ctx, "gonekey", "one", team.TokenOptions{}); !errors.Is(err, team.ErrKeyNotFound) {
		t.Fatalf("token of a removed key: %v", err)
	}
}
