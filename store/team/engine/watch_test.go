package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/engine"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ma, mb := etcdtest.TeamOfTwo(t, ctx, c, "race")
	ea, eb := ma.Engine, mb.Engine
	restore := engine.SetTestHookWatchRead(func() {
		if _, err := eb.CreateKey(ctx, "race", team.NewKey{Label: "between", Definition: store.Definition{Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Username: "svc"}, ClientSecret: "cs-watch", Password: "pw-watch"}); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(restore)
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
