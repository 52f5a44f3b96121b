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

// On a machine whose only keys are a team's, a command that names no key
// says so and names the teams, and takes the team's key when it is the only
// one, as it takes the only key of this machine; with several it names
// them. Before, it said "no API keys yet".
func TestTeamOnlyMachineFindsItsKey(t *testing.T) {
	t.Parallel()
	c := etcdtest.Need(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ma, mb := etcdtest.TeamOfTwo(t, ctx, c, "solo")
	svc := New(Options{Store: ma.Store, Engine: func() (team.Engine, error) { return ma.Engine, nil }})

	if _, err := svc.Find(""); err == nil || !strings.Contains(err.Error(), "its teams (solo) have none") {
		t.Fatalf("no keys anywhere: %v, want one line naming the team", err)
	}
	srv := authtest.NewServer(authtest.Config{Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-solo", ServiceAccount: true}}})
	defer srv.Close()
	conn := auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}
	for _, label := range []string{"one", "two"} {
		if _, err := mb.Engine.CreateKey(ctx, "solo", team.NewKey{Label: label, Definition: store.Definition{Connection: conn, Grant: auth.GrantClientCredentials},
			ClientSecret: "cs-solo"}); err != nil {
			t.Fatal(err)
		}
		if label == "one" {
			waitCached(t, ctx, svc, 1)
			ref, err := svc.Find("")
			if err != nil || ref.Key.Label != "solo/one" || ref.Key.Team != "solo" {
				t.Fatalf("one team key: %+v, %v; want solo/one", ref.Key, err)
			}
		}
	}
	waitCached(t, ctx, svc, 2)
	var ue *UsageError
	if _, err := svc.Find(""); !errors.As(err, &ue) || !strings.Contains(err.Error(), "solo/one, solo/two") {
		t.Errorf("two team keys: %v, want a usage error naming both", err)
	}
}

// waitCached waits until this machine's cache of its teams holds n keys.
func waitCached(t *testing.T, ctx context.Context, svc *Service, n int) {
	t.Helper()
	for {
		if _, err := svc.TeamKeys(ctx, Live); err != nil {
			t.Fatal(err)
		}
		if keys, err := svc.TeamKeys(ctx, Cached); err == nil && len(keys) == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the cache never held %d team keys", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
