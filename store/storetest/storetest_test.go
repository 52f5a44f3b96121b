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

// tokenEveryHour opens a store of n keys whose clock moves an hour between
// two calls (each writes Last Used), and returns a token call that finds a
// sweep due each time (.swept an hour old).
func tokenEveryHour(tb testing.TB, n int) (call func(), swept func() time.Time) {
	s := Populate(tb, n, store.BackendPlaintext)
	// A copy: a sweep, were it to run, would write the shared store.
	dir := tb.TempDir()
	cp := Store{ConfigDir: filepath.Join(dir, "c"), StateDir: filepath.Join(dir, "s"), Backend: s.Backend, N: n}
	for _, d := range [][2]string{{s.ConfigDir, cp.ConfigDir}, {s.StateDir, cp.StateDir}} {
		if err := os.CopyFS(d[1], os.DirFS(d[0])); err != nil {
			tb.Fatal(err)
		}
	}
	opts := cp.Options()
	clock := time.Now()
	opts.Now = func() time.Time { return clock }
	st, err := store.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	stamp := filepath.Join(cp.StateDir, ".swept")
	label := Label(n / 2)
	call = func() {
		clock = clock.Add(time.Hour)
		old := time.Now().Add(-time.Hour)
		if err := os.WriteFile(stamp, nil, 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chtimes(stamp, old, old); err != nil { // a sweep is due
			tb.Fatal(err)
		}
		if _, err := st.Token(context.Background(), label, store.TokenOptions{MarkUsed: true}); err != nil {
			tb.Fatal(err)
		}
	}
	swept = func() time.Time {
		fi, err := os.Stat(stamp)
		if err != nil {
			tb.Fatal(err)
		}
		return fi.ModTime()
	}
	return call, swept
}

// TestTokenNeverSweeps: `shipkey token` (Store.Token, Last Used written)
// leaves the sweep of what killed processes left behind to serve and to
// the commands that change config.toml, even when one is due: the sweep
// reads config.toml and every secret file's name, a cost that grows with
// the keys. Checked by the sweep's own stamp, which a sweep renews.
func TestTokenNeverSweeps(t *testing.T) {
	t.Parallel()
	call, swept := tokenEveryHour(t, 2000)
	for range 3 {
		call()
		if at := swept(); time.Since(at) < 30*time.Minute {
			t.Fatalf("a token call swept the store (.swept renewed at %v)", at)
		}
	}
}

// BenchmarkTokenAtKeys reports a token call's allocations at 10 and at
// 2,000 keys, a sweep due each time: the same (docs/performance.md).
func BenchmarkTokenAtKeys(b *testing.B) {
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			call, _ := tokenEveryHour(b, n)
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}
