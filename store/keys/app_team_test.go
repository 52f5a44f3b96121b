package keys

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestAppTeamKeysLive: the app's backend (the key service) shows a team key
// created on another machine, and its stamp changes so the 1 s tick reloads
// the table; the app's logout, login, refresh, rename and remove of a team
// key go to the team.
func TestAppTeamKeysLive(t *testing.T) {
	t.Parallel()
	c := etcdtest.Need(t, 1)
	srv := authtest.NewServer(authtest.Config{
		Users:   []authtest.User{{Username: "svc", Password: "pw-team-ui"}},
		Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-team-ui"}},
	})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ma, mb := etcdtest.TeamOfTwo(t, ctx, c, "ui")
	sa, ea, eb := ma.Store, ma.Engine, mb.Engine
	b := New(Options{Store: sa, Engine: func() (team.Engine, error) { return ea, nil }})
	b.Watch(ctx)
	stamp0, _ := b.Stamp()
	if _, err := eb.CreateKey(ctx, "ui", team.NewKey{Label: "k", Definition: store.Definition{Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Username: "svc"}, ClientSecret: "cs-team-ui", Password: "pw-team-ui"}); err != nil {
		t.Fatal(err)
	}
	for {
		var keys []store.Key
		if err := b.EachKey(func(k store.Key) error { keys = append(keys, k); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(keys) == 1 && keys[0].Label == "ui/k" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the app's backend never showed ui/k: %v", keys)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if s, _ := b.Stamp(); s == stamp0 {
		t.Error("the stamp did not change: the app would not reload")
	}
	if ts, err := b.Current("ui/k"); err != nil || ts.AccessToken == "" {
		t.Errorf("Current(ui/k): %v", err)
	}
	// The app's logout and login of a team key go to the team.
	if res, err := b.Logout(ctx, "ui/k"); err != nil || !res.Ended() {
		t.Fatalf("Logout(ui/k): %+v, %v", res, err)
	}
	if _, err := b.Current("ui/k"); !errors.Is(err, store.ErrLoginNeeded) {
		t.Errorf("Current(ui/k) after logout: %v, want login needed", err)
	}
	k, ts, err := b.Login(ctx, "ui/k", store.LoginOptions{})
	if err != nil || k.Label != "ui/k" || ts.AccessToken == "" {
		t.Fatalf("Login(ui/k): %v", err)
	}
	if cur, err := b.Current("ui/k"); err != nil || cur.AccessToken != ts.AccessToken {
		t.Errorf("Current(ui/k) after login: %v", err)
	}
	if err := b.SetDefault("ui/k"); err == nil || !strings.Contains(err.Error(), "cannot be the default") {
		t.Errorf("SetDefault(ui/k): %v", err)
	}
	// Refresh, rename and remove act for the whole team, as the CLI's do.
	k, rts, err := b.Refresh(ctx, "ui/k")
	if err != nil || k.Label != "ui/k" || k.Team != "ui" || rts.AccessToken == "" || rts.AccessToken == ts.AccessToken {
		t.Fatalf("Refresh(ui/k): %+v, %v (new token: %v)", k, err, rts != nil && rts.AccessToken != ts.AccessToken)
	}
	if err := b.Rename("ui/k", "ui/k2"); err != nil {
		t.Fatalf("Rename(ui/k, ui/k2): %v", err)
	}
	if err := b.Rename("ui/k2", "k3"); err != nil {
		t.Fatalf("Rename(ui/k2, k3): %v", err)
	}
	if others, err := eb.Keys(ctx, "ui"); err != nil || len(others) != 1 || others[0].Label != "k3" {
		t.Fatalf("the other member sees %+v, %v; want k3", others, err)
	}
	if _, err := b.Remove(ctx, "ui/k3"); err != nil {
		t.Fatalf("Remove(ui/k3): %v", err)
	}
	if others, err := eb.Keys(ctx, "ui"); err != nil || len(others) != 0 {
		t.Fatalf("the other member still sees %+v, %v", others, err)
	}
	// A local key's label with a slash is still the store's.
	if err := b.Rename("nosuch/x", "y"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Rename(nosuch/x): %v, want not found", err)
	}
}
