package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// TestWalkOverADamagedPageHandsNoKeyTwice: a page of the entries bucket
// found damaged after the walk has handed keys on (a large walk reads its
// entries as it hands them on) sets state.db aside and rebuilds it, as any
// damage does; the walk must not then start again and hand the same keys on
// a second time (keys list --json would print them twice). It ends with one
// error that says what happened and to run the command again; the next walk
// reads the rebuilt index whole.
func TestWalkOverADamagedPageHandsNoKeyTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	const n = 60
	for i := range n {
		e.create(s, fmt.Sprintf("key-%03d", i), false)
	}
	s.walkChunk = 8
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage the leaf page of the entries bucket that holds key-040's
	// definition (found through bbolt's map): its header names another page.
	path := filepath.Join(e.stateDir, dbFileName)
	db, err := bolt.Open(path, filePerm, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var page int64 = -1
	err = db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketEntries).Cursor().Seek([]byte("key-040"))
		if string(k) != "key-040" {
			return fmt.Errorf("no key-040 in the entries bucket")
		}
		page = int64(uintptr(unsafe.Pointer(&k[0]))-db.Info().Data) / int64(db.Info().PageSize)
		return nil
	})
	ps := int64(db.Info().PageSize)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var id [8]byte
	binary.NativeEndian.PutUint64(id[:], 1<<40)
	if _, err := f.WriteAt(id[:], page*ps); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	s = e.open(Options{})
	s.walkChunk = 8
	seen := map[string]int{}
	err = s.EachKey(func(k Key) error { seen[k.Label]++; return nil })
	for l, c := range seen {
		if c > 1 {
			t.Fatalf("the walk handed %s on %d times (err %v)", l, c, err)
		}
	}
	if !errors.Is(err, ErrWalkInterrupted) {
		t.Fatalf("the walk over the damaged page ended with %v (%d keys), want ErrWalkInterrupted", err, len(seen))
	}
	if len(seen) == 0 || len(seen) == n {
		t.Fatalf("the walk handed on %d of %d keys: the damage was not met part way", len(seen), n)
	}
	if !strings.Contains(e.warn.String(), "was damaged") {
		t.Errorf("no warning that state.db was set aside: %q", e.warn.String())
	}
	clear(seen)
	if err := s.EachKey(func(k Key) error { seen[k.Label]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("after the rebuild the walk handed on %d of %d keys", len(seen), n)
	}
}
