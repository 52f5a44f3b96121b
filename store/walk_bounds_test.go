package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// boundsDB is a bare state.db with the entries and ids buckets of the given
// labels (ids made up; the entries' values are not read).
func boundsDB(t *testing.T, labels []string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	err = db.Update(func(tx *bolt.Tx) error {
		entries, err := tx.CreateBucket(bucketEntries)
		if err != nil {
			return err
		}
		ids, err := tx.CreateBucket(bucketIDs)
		if err != nil {
			return err
		}
		for i, l := range labels {
			// Ids in another order than labels, as newID's are.
			id := fmt.Sprintf("%08x", uint32(sampleHash([]byte(l)))) + fmt.Sprint(i)
			if err := entries.Put([]byte(l), []byte("-")); err != nil {
				return err
			}
			if err := ids.Put([]byte(id), []byte(l)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scanByPread(t, db)
	return db
}

// scanByPread makes walks over db read its buckets by pread (bucketScan), as
// over a state.db that openDB opened.
func scanByPread(t *testing.T, db *bolt.DB) {
	t.Helper()
	f, err := os.Open(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	dbFiles.Store(db, f)
	t.Cleanup(func() { dbFiles.Delete(db); _ = f.Close() })
}

// chunkSizes is how many of labels (sorted) each chunk that bounds begin
// holds.
func chunkSizes(t *testing.T, db *bolt.DB, bounds [][]byte) []int {
	t.Helper()
	sizes := make([]int, len(bounds)+1)
	err := db.View(func(tx *bolt.Tx) error {
		part := 0
		c := tx.Bucket(bucketEntries).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			for part < len(bounds) && bytes.Compare(k, bounds[part]) >= 0 {
				part++
			}
			sizes[part]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}

// TestWalkBoundsFromASample: the chunks a walk partitions its states by are
// taken from a sample of the ids bucket's labels, not a pass over the
// entries bucket: each chunk is near walkChunk keys; a store of one chunk
// has none; and labels made so that the sample misses them (hashes chosen
// against it) get exact bounds from the entries bucket, so that no chunk,
// and no walk's memory, grows with the number of keys.
func TestWalkBoundsFromASample(t *testing.T) {
	t.Parallel()
	const chunk, chunks = 512, 12 // a sample of one in 2
	bounds := func(db *bolt.DB) (b [][]byte) {
		err := db.View(func(btx *bolt.Tx) error {
			var err error
			b, err = walkBounds(&tx{s: &Store{}, btx: btx}, btx.Bucket(bucketEntries), btx.Bucket(bucketIDs), chunk)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var plain, missed []string
	for i := 0; len(missed) < chunks*chunk; i++ {
		l := fmt.Sprintf("svc-%d", i)
		if len(plain) < chunks*chunk {
			plain = append(plain, l)
		}
		if sampleHash([]byte(l))%(chunk/256) != 0 {
			missed = append(missed, l)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		slack  float64
	}{
		{"sampled", plain, 0.25},
		{"missed by the sample", missed, 0},
	} {
		db := boundsDB(t, c.labels)
		b := bounds(db)
		sizes := chunkSizes(t, db, b)
		if len(sizes) < chunks-1 || len(sizes) > chunks+1 {
			t.Errorf("%s: %d chunks of %d × %d keys: %v", c.name, len(sizes), chunks, chunk, sizes)
		}
		for i, n := range sizes[:len(sizes)-1] {
			if float64(n) < chunk*(1-c.slack) || float64(n) > chunk*(1+c.slack) {
				t.Errorf("%s: chunk %d holds %d keys, want %d ± %.0f%%: %v", c.name, i, n, chunk, 100*c.slack, sizes)
				break
			}
		}
	}
	if b := bounds(boundsDB(t, plain[:chunk])); len(b) != 0 {
		t.Errorf("one chunk of keys: %d bounds, want none", len(b))
	}
}
