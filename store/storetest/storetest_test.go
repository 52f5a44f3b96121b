package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"
)

func TestGenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Store{ConfigDir: filepath.Join(dir, "c"), StateDir: filepath.Join(dir, "s"), Backend: store.BackendPlaintext, N: 30}
	Generate(t, s)
	st, err := store.Open(s.Options())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.Keys()
	if err != nil || len(keys) != 30 || keys[0].Label != Label(0) || !keys[0].Default {
		t.Fatalf("Keys = %d, %v", len(keys), err)
	}
	ts, err := st.Token(context.Background(), Label(17), store.TokenOptions{MarkUsed: true})
	if err != nil || ts.AccessToken == "" {
		t.Fatalf("Token = %v", err)
	}
}

// BenchmarkKeys is Store.Keys (what `keys list` and the app's key table
// read) on stores of 1k and 100k keys (cached, see Populate).
func BenchmarkKeys(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			st, err := store.Open(Populate(b, n, store.BackendFile).Options())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if keys, err := st.Keys(); err != nil || len(keys) != n {
					b.Fatalf("Keys = %d, %v", len(keys), err)
				}
			}
		})
	}
}

// TestEachKeyMatchesKeysAcrossChunks: a walk over more keys than it reads
// at once (store.EachKey reads them in chunks, each chunk's states in id
// order) yields exactly what Keys lists, in label order, state included.
func TestEachKeyMatchesKeysAcrossChunks(t *testing.T) {
	t.Parallel()
	const n = 20000
	st, err := store.Open(Populate(t, n, store.BackendPlaintext).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want, err := st.Keys()
	if err != nil || len(want) != n {
		t.Fatalf("Keys = %d, %v", len(want), err)
	}
	i := 0
	err = st.EachKey(func(k store.Key) error {
		if !reflect.DeepEqual(k, want[i]) {
			t.Fatalf("key %d of the walk:\n%+v\nKeys:\n%+v", i, k, want[i])
		}
		i++
		return nil
	})
	if err != nil || i != n {
		t.Fatalf("EachKey walked %d keys of %d: %v", i, n, err)
	}
}

// TestTokenCostIndependentOfKeys: `shipkey token` (Store.Token, Last Used
// written) allocates as much at 2,000 keys as at 10, even when the sweep of
// what killed processes left behind is due: the sweep reads config.toml
// and every secret file's name, so it is left to serve and to the
// commands that change config.toml. Not parallel: it counts allocations.
func TestTokenCostIndependentOfKeys(t *testing.T) {
	allocs := func(n int) float64 {
		s := Populate(t, n, store.BackendPlaintext)
		opts := s.Options()
		// An hour passes between two calls: each writes Last Used.
		clock := time.Now()
		opts.Now = func() time.Time { return clock }
		st, err := store.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		label := Label(n / 2)
		return testing.AllocsPerRun(5, func() {
			clock = clock.Add(time.Hour)
			old := time.Now().Add(-time.Hour)
			_ = os.Chtimes(filepath.Join(s.StateDir, ".swept"), old, old) // a sweep is due
			if _, err := st.Token(context.Background(), label, store.TokenOptions{MarkUsed: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(10), allocs(2000)
	t.Logf("allocations of a token call: %.0f at 10 keys, %.0f at 2,000", small, large)
	if large > 2*small+100 {
		t.Errorf("a token call allocates %.0f times at 2,000 keys, %.0f at 10: its cost grows with the keys", large, small)
	}
}
