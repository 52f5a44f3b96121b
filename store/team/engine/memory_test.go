package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/drivertest"
	"github.com/shipkey/shipkey/store/team/engine"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestProtocolOnAnotherDriver: the team protocol needs nothing of etcd
// beyond team.Driver. On the in-memory driver (a test double that passes
// the drivers' conformance suite) two machines make a team, one creates a
// key, both hand out the one token with one token request, and after b is
// removed it reads nothing. The product runs on etcd (etcdteam) and so do
// every other team test.
func TestProtocolOnAnotherDriver(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.Config{
		Users:   []authtest.User{{Username: "svc", Password: "pw-mem"}},
		Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-mem"}},
	})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := drivertest.NewMemory()
	newEngine := func(o team.Options) team.Engine { return engine.New(o, mem.Dialer()) }
	a, b := etcdtest.TeamOfTwoWith(t, ctx, newEngine, []string{"memory"}, "mem")
	if _, err := a.Engine.CreateKey(ctx, "mem", team.NewKey{Label: "svc", Definition: store.Definition{Grant: auth.GrantPassword, Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Username: "svc"}, ClientSecret: "cs-mem", Password: "pw-mem"}); err != nil {
		t.Fatal(err)
	}
	ta, err := a.Engine.Token(ctx, "mem", "svc", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Engine.Token(ctx, "mem", "svc", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ta.AccessToken != tb.AccessToken || srv.Count("token") != 1 {
		t.Fatalf("the two machines: same token %v, token requests %d (want 1)", ta.AccessToken == tb.AccessToken, srv.Count("token"))
	}
	if _, err := a.Engine.RemoveMember(ctx, "mem", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Engine.Token(ctx, "mem", "svc", team.TokenOptions{Force: true}); !errors.Is(err, team.ErrNotMember) {
		t.Fatalf("the removed member's token: %v, want not a member", err)
	}
}

// TestRosterWrittenAgainOnADriverWithoutHistory: a driver that keeps no
// earlier values (no team.FormerReader, like an etcd that compacted them)
// cannot show what the roster key held meanwhile: a roster written again
// over the pinned one, unchanged, or an unsigned one, leaves the machine
// unable to tell whether it is behind a removal, and it refuses
// (team.ErrBehind) instead of handing out its cached token.
func TestRosterWrittenAgainOnADriverWithoutHistory(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.Config{
		Users:   []authtest.User{{Username: "svc", Password: "pw-mem"}},
		Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-mem"}},
	})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := drivertest.NewMemory()
	newEngine := func(o team.Options) team.Engine { return engine.New(o, mem.Dialer()) }
	a, b := etcdtest.TeamOfTwoWith(t, ctx, newEngine, []string{"memory"}, "mem")
	if _, err := a.Engine.CreateKey(ctx, "mem", team.NewKey{Label: "svc", Definition: store.Definition{Grant: auth.GrantPassword, Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Username: "svc"}, ClientSecret: "cs-mem", Password: "pw-mem"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Engine.Token(ctx, "mem", "svc", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	kvs, _, err := mem.Get(ctx, team.Prefix("mem")+"roster")
	if err != nil || kvs[0] == nil {
		t.Fatal(err)
	}
	for _, roster := range [][]byte{kvs[0].Value, []byte(`[{"name":"x","recipient":"age1x"}]`)} {
		if ok, _, err := mem.Commit(ctx, nil, []team.Op{team.Put(team.Prefix("mem")+"roster", roster)}); !ok || err != nil {
			t.Fatal(err)
		}
		if ts, err := b.Engine.Token(ctx, "mem", "svc", team.TokenOptions{}); !errors.Is(err, team.ErrBehind) || ts != nil {
			t.Fatalf("roster %.20q written again: %v, want refused as maybe behind", roster, err)
		}
	}
}
