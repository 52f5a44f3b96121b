package etcdteam

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestWatchMissesNothingAfterItsRead: a key created on another machine
// between Watch's first read and its watch (the hook runs there) still
// reaches the cache: the watch goes on from the read's revision, not from
// whenever it started. Before, the key showed only with the next change.
func TestWatchMissesNothingAfterItsRead(t *testing.T) {
	c := etcdtest.Need(t, 1)
	srv := authtest.NewServer(authtest.Config{
		Users:   []authtest.User{{Username: "svc", Password: "pw-watch"}},
		Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-watch"}},
	})
	defer srv.Close()
	a, _ := auth.NewClient(auth.Options{})
	machine := func(name string) team.Engine {
		dir := filepath.Join(t.TempDir(), name)
		st, err := store.Open(store.Options{ConfigDir: dir + "/config", StateDir: dir + "/state", Backend: store.BackendPlaintext, Auth: a, Warn: discard{}})
		if err != nil {
			t.Fatal(err)
		}
		return New(team.Options{Store: st, Auth: a, Warn: discard{}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ea, eb := machine("a"), machine("b")
	tc := store.TeamConn{Name: "race", Endpoints: c.Endpoints()}
	if _, err := ea.Init(ctx, team.JoinOptions{Conn: tc}); err != nil {
		t.Fatal(err)
	}
	rb, err := eb.Join(ctx, team.JoinOptions{Conn: tc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ea.AddMember(ctx, "race", rb, "b"); err != nil {
		t.Fatal(err)
	}
	testHookWatchRead = func() {
		if _, err := eb.CreateKey(ctx, "race", team.NewKey{Label: "between", Conn: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"},
			Username: "svc", ClientSecret: "cs-watch", Password: "pw-watch"}); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { testHookWatchRead = func() {} })
	changes := make(chan struct{}, 16)
	go func() { _ = ea.Watch(ctx, "race", func() { changes <- struct{}{} }) }()
	for {
		select {
		case <-changes:
			if keys, _ := ea.CachedKeys("race"); len(keys) == 1 && keys[0].Label == "between" {
				return
			}
		case <-ctx.Done():
			t.Fatal("the key created between the read and the watch never reached the cache")
		}
	}
}
