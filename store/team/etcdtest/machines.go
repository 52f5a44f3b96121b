package etcdtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdteam"
)

// Machine is one machine of a test: its own store (plaintext secrets, in a
// temporary folder) and its team engine.
type Machine struct {
	Store  *store.Store
	Engine team.Engine
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TeamOfTwo makes two machines that are both members of team name on c: a
// creates it, b joins and a adds b.
func TeamOfTwo(tb testing.TB, ctx context.Context, c *Cluster, name string) (a, b Machine) {
	tb.Helper()
	return TeamOfTwoWith(tb, ctx, etcdteam.New, c.Endpoints(), name)
}

// TeamOfTwoWith is TeamOfTwo with the engines newEngine makes, at
// endpoints (drivertest.Memory ignores them).
func TeamOfTwoWith(tb testing.TB, ctx context.Context, newEngine func(team.Options) team.Engine, endpoints []string, name string) (a, b Machine) {
	tb.Helper()
	client, err := auth.NewClient(auth.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	machine := func(which string) Machine {
		dir := filepath.Join(tb.TempDir(), which)
		st, err := store.Open(store.Options{ConfigDir: dir + "/config", StateDir: dir + "/state", Backend: store.BackendPlaintext, Auth: client, Warn: discard{}})
		if err != nil {
			tb.Fatal(err)
		}
		return Machine{Store: st, Engine: newEngine(team.Options{Store: st, Auth: client, Warn: discard{}})}
	}
	a, b = machine("a"), machine("b")
	tc := store.TeamConn{Name: name, Endpoints: endpoints}
	if _, err := a.Engine.Init(ctx, team.JoinOptions{Conn: tc}); err != nil {
		tb.Fatal(err)
	}
	rb, err := b.Engine.Join(ctx, team.JoinOptions{Conn: tc})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := a.Engine.AddMember(ctx, name, rb, "b"); err != nil {
		tb.Fatal(err)
	}
	return a, b
}
