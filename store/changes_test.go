package store

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/shipkey/shipkey/auth"
)

// TestChangesSinceListsTheKeysUsed: ChangesSince names the keys whose
// state another process wrote since a stamp, read again, and says to read
// every key when it cannot tell (config.toml changed, state.db rebuilt, a
// stamp it did not make).
func TestChangesSinceListsTheKeysUsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	now := e.clk.Now()
	var keys []ImportKey
	for i := range 5 {
		keys = append(keys, ImportKey{Label: fmt.Sprintf("k%d", i), Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "s",
			Token: &auth.TokenSet{AccessToken: fmt.Sprintf("at-%d", i), TokenType: "Bearer", ObtainedAt: now, AccessExpiresAt: now.Add(24 * 60 * 60 * 1e9)}})
	}
	if err := s.Import(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	since, err := s.Stamp()
	if err != nil {
		t.Fatal(err)
	}
	other := e.open(Options{Backend: BackendPlaintext})
	e.clk.Advance(60 * 1e9)
	for _, label := range []string{"k3", "k1", "k3"} {
		if err := other.MarkUsed(label); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := s.ChangesSince(since)
	if err != nil || ch.All || len(ch.Keys) != 2 {
		t.Fatalf("ChangesSince = %d keys, all %v, %v; want k3 and k1", len(ch.Keys), ch.All, err)
	}
	for _, k := range ch.Keys {
		if k.Label != "k1" && k.Label != "k3" || !k.LastUsed.Equal(e.clk.Now()) {
			t.Errorf("changed key %s, last used %v", k.Label, k.LastUsed)
		}
	}
	if now, _ := s.Stamp(); ch.Stamp != now {
		t.Errorf("ChangesSince's stamp %q, the store's %q", ch.Stamp, now)
	}
	if again, err := s.ChangesSince(ch.Stamp); err != nil || again.All || len(again.Keys) != 0 {
		t.Errorf("ChangesSince its own stamp = %d keys, all %v, %v; want none", len(again.Keys), again.All, err)
	}
	for _, bad := range []Stamp{"", "x", ch.Stamp + ";teams:1"} {
		if got, _ := s.ChangesSince(bad); !got.All {
			t.Errorf("ChangesSince(%q) did not say to read all", bad)
		}
	}
	last := ch.Stamp
	if err := other.Rename("k2", "k2b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ChangesSince(last); !got.All {
		t.Error("after a rename ChangesSince did not say to read all")
	}
	last, _ = s.Stamp()
	if err := os.Remove(s.dbPath()); err != nil { // rebuilt from config.toml and the secrets
		t.Fatal(err)
	}
	if got, err := s.ChangesSince(last); err != nil || !got.All {
		t.Errorf("after state.db was rebuilt ChangesSince = all %v, %v", got.All, err)
	}
}
