package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/shipkey/shipkey/auth"
)

// TestRebuildPutsInKeyOrder: rebuilding the index (config.toml edited by
// hand, its keys in another order; state.db lost) puts each bucket's
// records in key order. In config.toml's order (ids are random) bbolt moves
// every record already put for each new one: the rebuild of 100,000 keys
// took 28 s of CPU.
func TestRebuildPutsInKeyOrder(t *testing.T) {
	t.Parallel()
	const n = 300
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	now := e.clk.Now()
	var keys []ImportKey
	for i := range n {
		keys = append(keys, ImportKey{Label: fmt.Sprintf("key-%03d", i), Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "s",
			Token: &auth.TokenSet{AccessToken: fmt.Sprintf("at-%d", i), TokenType: "Bearer", ObtainedAt: now, AccessExpiresAt: now.Add(24 * 60 * 60 * 1e9)}})
	}
	if err := s.Import(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	// config.toml by hand: the same keys, in reverse label order.
	cfg, err := loadConfig(s.configPath())
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(cfg.Keys)
	if err := saveConfig(s.configPath(), cfg); err != nil {
		t.Fatal(err)
	}

	rebuild := func(what string, buckets ...[]byte) {
		t.Helper()
		var mu sync.Mutex
		last, puts, unordered := map[string][]byte{}, map[string]int{}, map[string]int{}
		opts := Options{Backend: BackendPlaintext}
		opts.hooks.indexPut = func(bucket, key []byte) {
			mu.Lock()
			defer mu.Unlock()
			b := string(bucket)
			if prev, ok := last[b]; ok && bytes.Compare(prev, key) >= 0 {
				unordered[b]++
			}
			last[b], puts[b] = bytes.Clone(key), puts[b]+1
		}
		s := e.open(opts)
		got, err := s.Keys()
		if err != nil || len(got) != n || got[0].Label != "key-000" || got[0].Token.ObtainedAt.IsZero() {
			t.Fatalf("%s: Keys = %d keys, %v", what, len(got), err)
		}
		for _, b := range buckets {
			if puts[string(b)] != n || unordered[string(b)] != 0 {
				t.Errorf("%s: bucket %s: %d records put, %d out of key order; want %d in order", what, b, puts[string(b)], unordered[string(b)], n)
			}
		}
	}
	rebuild("config.toml reordered", bucketEntries, bucketIDs)
	if err := os.Remove(s.dbPath()); err != nil {
		t.Fatal(err)
	}
	rebuild("state.db lost", bucketEntries, bucketIDs, bucketState)
}
