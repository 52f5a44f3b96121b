package storetest

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

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
