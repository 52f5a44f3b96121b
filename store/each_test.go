package store

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestEachKeyMatchesKeys: the streamed walk yields exactly what Keys lists
// (label order, default, state), and an error from fn ends it.
func TestEachKeyMatchesKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	for _, l := range []string{"gamma", "alpha", "beta"} {
		e.create(s, l, false)
	}
	if err := s.SetDefault("beta"); err != nil {
		t.Fatal(err)
	}
	e.token(s, "gamma") // Last Used and a state record
	if _, err := s.Logout(t.Context(), "alpha"); err != nil {
		t.Fatal(err)
	}

	want, err := s.Keys()
	if err != nil {
		t.Fatal(err)
	}
	var got []Key
	if err := s.EachKey(func(k Key) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EachKey:\n%+v\nKeys:\n%+v", got, want)
	}

	stop := errors.New("stop")
	n := 0
	if err := s.EachKey(func(Key) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("EachKey with an error from fn = %v after %d keys", err, n)
	}
}

// TestEachKeyAcrossChunksEveryWay: a walk over more keys than it reads at
// once yields exactly what Keys lists, whether it partitions the states in
// a temporary file or, with none to be made, looks them up chunk by chunk;
// and when the ids bucket lacks a key (a damaged index), its state is
// still found.
func TestEachKeyAcrossChunksEveryWay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	for _, l := range []string{"echo", "charlie", "alpha", "delta", "bravo", "foxtrot", "golf"} {
		e.create(s, l, false)
	}
	e.token(s, "charlie")
	if _, err := s.Logout(t.Context(), "golf"); err != nil {
		t.Fatal(err)
	}
	want, err := s.Keys()
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string) {
		t.Helper()
		var got []Key
		if err := s.EachKey(func(k Key) error { got = append(got, k); return nil }); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EachKey, %s:\n%+v\nKeys:\n%+v", how, got, want)
		}
	}
	s.walkChunk = 2
	check("states partitioned")
	s.walkTemp = func() (*os.File, error) { return nil, os.ErrPermission }
	check("no temporary file")
	s.walkTemp = nil

	db, err := bolt.Open(filepath.Join(e.stateDir, dbFileName), filePerm, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIDs).Delete([]byte(want[3].ID))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	check("a key missing from the ids bucket")
}
