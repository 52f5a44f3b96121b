package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// scanShape is how a test bucket is made: n keys put over txs transactions,
// keys of 1 to maxKey bytes, values of 0 to maxValue bytes (one in bigEvery
// of bigValue bytes: overflow pages), then one in dropEvery deleted.
type scanShape struct {
	n, txs, maxKey, maxValue, bigEvery, bigValue, dropEvery, pageSize int
}

// shapedDB makes a bbolt file with bucket "b" of the given shape, and a
// small bucket "small" (kept inside its parent's page: no scan), and
// returns its path.
func shapedDB(t testing.TB, sh scanShape, seed uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: sh.pageSize})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(seed, 1))
	var keys [][]byte
	per := (sh.n + sh.txs - 1) / sh.txs
	for done := 0; done < sh.n; {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			small, err := tx.CreateBucketIfNotExists([]byte("small"))
			if err != nil {
				return err
			}
			if err := small.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			for i := 0; i < per && done < sh.n; i, done = i+1, done+1 {
				k := make([]byte, 1+r.IntN(sh.maxKey))
				for j := range k {
					k[j] = byte('a' + r.IntN(4)) // few letters: shared prefixes, some repeats
				}
				size := r.IntN(sh.maxValue + 1)
				if sh.bigEvery > 0 && r.IntN(sh.bigEvery) == 0 {
					size = sh.bigValue
				}
				v := make([]byte, size)
				for j := range v {
					v[j] = byte(r.Uint32())
				}
				if err := b.Put(k, v); err != nil {
					return err
				}
				keys = append(keys, k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if sh.dropEvery > 0 {
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("b"))
			for _, k := range keys {
				if r.IntN(sh.dropEvery) == 0 {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

type scanPair struct{ k, v []byte }

// pairsFrom copies what first and next yield, up to limit pairs.
func pairsFrom(first func() ([]byte, []byte), next func() ([]byte, []byte), limit int) []scanPair {
	var ps []scanPair
	for k, v := first(); k != nil && len(ps) < limit; k, v = next() {
		ps = append(ps, scanPair{bytes.Clone(k), bytes.Clone(v)})
	}
	return ps
}

func samePairs(a, b []scanPair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].k, b[i].k) || !bytes.Equal(a[i].v, b[i].v) {
			return false
		}
	}
	return true
}

// openScan opens the bbolt file at path read-only with, for the bucket
// named name, a bucketScan reading it by pread (nil: the bucket is inline).
func openScan(t testing.TB, path string, name string) (*bolt.DB, *bolt.Tx, *bucketScan) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	dbFiles.Store(db, f)
	btx, err := db.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = btx.Rollback()
		dbFiles.Delete(db)
		_ = f.Close()
		_ = db.Close()
	})
	return db, btx, (&tx{s: &Store{}, btx: btx}).scanner(btx.Bucket([]byte(name)))
}

// TestBucketScanYieldsWhatTheCursorDoes: read by pread (bucketScan), a
// bucket of any shape yields exactly the pairs bbolt's cursor yields, in
// order: small and large, deep (small pages), with values spanning pages,
// sparse after deletions, written over many transactions; and Seek lands
// where the cursor's does, for present and absent keys, before the first
// and past the last, and steps on from there alike. A bucket kept inside
// its parent's page is left to the cursor.
func TestBucketScanYieldsWhatTheCursorDoes(t *testing.T) {
	t.Parallel()
	shapes := []scanShape{
		{n: 10, txs: 1, maxKey: 8, maxValue: 3000, pageSize: 4096},
		{n: 200, txs: 3, maxKey: 40, maxValue: 200, bigEvery: 20, bigValue: 9000, pageSize: 4096},
		{n: 3000, txs: 7, maxKey: 64, maxValue: 300, bigEvery: 50, bigValue: 5000, dropEvery: 2, pageSize: 4096},
		{n: 5000, txs: 20, maxKey: 24, maxValue: 600, bigEvery: 100, bigValue: 12000, pageSize: 1024},
		{n: 20000, txs: 5, maxKey: 30, maxValue: 40, dropEvery: 3, pageSize: 512},
		{n: 50000, txs: 4, maxKey: 20, maxValue: 120, bigEvery: 2000, bigValue: 10000, pageSize: 4096},
	}
	for i, sh := range shapes {
		t.Run(fmt.Sprintf("n=%d,page=%d", sh.n, sh.pageSize), func(t *testing.T) {
			t.Parallel()
			path := shapedDB(t, sh, uint64(i))
			_, btx, s := openScan(t, path, "b")
			if s == nil {
				t.Fatal("no scan of a bucket with its own pages")
			}
			c := btx.Bucket([]byte("b")).Cursor()
			want := pairsFrom(c.First, c.Next, 1<<30)
			got := pairsFrom(s.First, s.Next, 1<<30)
			if s.Err() != nil {
				t.Fatalf("scan: %v", s.Err())
			}
			if !samePairs(got, want) {
				t.Fatalf("scan yields %d pairs, the cursor %d (or other ones)", len(got), len(want))
			}
			t.Logf("%d pairs", len(want))
			r := rand.New(rand.NewPCG(uint64(i), 2))
			seeks := [][]byte{{}, {0}, []byte("a"), bytes.Repeat([]byte{'d'}, 100), {0xff}}
			for range 300 {
				k := want[r.IntN(len(want))].k
				seeks = append(seeks, k, append(bytes.Clone(k), 0), append(bytes.Clone(k), 'b'), k[:len(k)/2])
			}
			for _, seek := range seeks {
				steps := 1 + r.IntN(20)
				wantAt := pairsFrom(func() ([]byte, []byte) { return c.Seek(seek) }, c.Next, steps)
				gotAt := pairsFrom(func() ([]byte, []byte) { return s.Seek(seek) }, s.Next, steps)
				if s.Err() != nil {
					t.Fatalf("scan: %v", s.Err())
				}
				if !samePairs(gotAt, wantAt) {
					t.Fatalf("Seek(%q) and %d steps on: scan and cursor differ (%d and %d pairs)", seek, steps, len(gotAt), len(wantAt))
				}
			}
			if (&tx{s: &Store{}, btx: btx}).scanner(btx.Bucket([]byte("small"))) != nil {
				t.Error("a bucket inside its parent's page is scanned")
			}
		})
	}
}

// FuzzBucketScanDamagedPages: bytes changed anywhere in a small state.db's
// pages but its meta pages and the one naming the buckets' roots (headers, elements, keys, child page ids, overflow counts) never
// make a bucketScan panic or run on: it yields an error, or exactly the pairs
// bbolt's cursor yields from the same bytes (First/Next, and Seek).
func FuzzBucketScanDamagedPages(f *testing.F) {
	path := shapedDB(f, scanShape{n: 400, txs: 3, maxKey: 12, maxValue: 100, bigEvery: 30, bigValue: 2500, dropEvery: 4, pageSize: 1024}, 7)
	intact, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	_, btx, s := openScan(f, path, "b")
	ps := btx.DB().Info().PageSize
	pages, root := uint64(btx.Size())/uint64(ps), s.root
	top := uint64(btx.Cursor().Bucket().Root()) // the page naming the buckets' roots
	var seeks [][]byte
	for k, _ := s.First(); k != nil; k, _ = s.Next() {
		if len(seeks) < 5 || len(k)%9 == 0 {
			seeks = append(seeks, bytes.Clone(k))
		}
	}
	// Seeds: each field of the root's header and of its first element, a
	// byte of a key, of a value, and several pages at once.
	flip := func(page uint64, off int, x byte) []byte {
		return []byte{byte(page), byte(page >> 8), byte(off), byte(off >> 8), x}
	}
	for _, off := range []int{0, 8, 10, 12, 16, 20, 24, 28, 40, 300, 900} {
		f.Add(flip(root, off, 0x01))
		f.Add(flip(root, off, 0x80))
	}
	f.Add(append(flip(root+1, 10, 0x7f), flip(root+2, 24, 0x3)...))
	f.Add(flip(pages-1, 12, 0x01))
	f.Add(flip(2, 16+8, 0x1))
	f.Fuzz(func(t *testing.T, flips []byte) {
		data := bytes.Clone(intact)
		for i := 0; i+5 <= len(flips) && i < 40; i += 5 {
			page := 2 + (uint64(flips[i])|uint64(flips[i+1])<<8)%(pages-2) // the meta pages stay
			if page == top {
				continue // so that bbolt reads the same tree
			}
			off := int(uint16(flips[i+2])|uint16(flips[i+3])<<8) % ps
			data[int(page)*ps+off] ^= max(flips[i+4], 1)
		}
		s := newBucketScan(bytes.NewReader(data), ps, pages, root)
		got := pairsFrom(s.First, s.Next, 1<<20)
		var gotSeeks [][]scanPair
		for _, seek := range seeks {
			gotSeeks = append(gotSeeks, pairsFrom(func() ([]byte, []byte) { return s.Seek(seek) }, s.Next, 3))
		}
		if s.Err() != nil {
			return // damage found
		}
		// No damage found: what bbolt's cursor reads from these bytes (the
		// same pages, each once) is what the scan yielded.
		want, wantSeeks, err := cursorPairs(t, data, len(got)+1, seeks)
		if err != nil {
			t.Fatalf("the scan yielded %d pairs with no error where bbolt's cursor fails: %v", len(got), err)
		}
		if !samePairs(got, want) {
			t.Fatalf("the scan yielded %d pairs with no error, bbolt's cursor %d (or other ones)", len(got), len(want))
		}
		for i := range seeks {
			if !samePairs(gotSeeks[i], wantSeeks[i]) {
				t.Fatalf("Seek(%q): the scan and bbolt's cursor differ", seeks[i])
			}
		}
	})
}

// cursorPairs is what bbolt's cursor yields from bucket "b" of the file
// data: up to limit pairs, and each Seek's first three; err is its panic.
func cursorPairs(t *testing.T, data []byte, limit int, seeks [][]byte) (all []scanPair, at [][]scanPair, err error) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err) // the meta pages are intact
	}
	defer db.Close()
	err = runGuarded(path, func() error {
		return db.View(func(btx *bolt.Tx) error {
			c := btx.Bucket([]byte("b")).Cursor()
			all = pairsFrom(c.First, c.Next, limit)
			for _, seek := range seeks {
				at = append(at, pairsFrom(func() ([]byte, []byte) { return c.Seek(seek) }, c.Next, 3))
			}
			return nil
		})
	})
	return all, at, err
}
