package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadOnceReadsEachFileOnce: a ReadOnce store (token, header, status)
// answers every read after its first from what that read found: with
// config.toml and state.db moved away meanwhile it still resolves the key,
// hands out the token and lists the teams. Its own write (Last Used) ends
// the hold and opens state.db again, so it neither waits on itself nor
// keeps other processes' writers out after it.
func TestReadOnceReadsEachFileOnce(t *testing.T) {
	t.Parallel()
	e, _, tokens := integrityStore(t, BackendPlaintext)
	s := e.open(Options{Backend: BackendPlaintext, ReadOnce: true})
	if _, err := s.Resolve("alpha"); err != nil {
		t.Fatal(err)
	}
	cfg, db := filepath.Join(e.cfgDir, configFileName), filepath.Join(e.stateDir, dbFileName)
	for _, p := range []string{cfg, db} {
		if err := os.Rename(p, p+".away"); err != nil {
			t.Fatal(err)
		}
	}
	k, err := s.Resolve("beta")
	if err != nil {
		t.Fatalf("Resolve after the files moved: %v", err)
	}
	ts, err := s.Token(context.Background(), k.Label, TokenOptions{})
	if err != nil || ts.AccessToken != tokens["beta"] {
		t.Fatalf("Token after the files moved: %v", err)
	}
	if _, err := s.Teams(); err != nil {
		t.Fatalf("Teams after the files moved: %v", err)
	}
	for _, p := range []string{cfg, db} {
		if err := os.Rename(p+".away", p); err != nil {
			t.Fatal(err)
		}
	}
	// The write drops the hold: no wait on this process's own read lock.
	e.clk.Advance(2 * lastUsedStep)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Token(ctx, "gamma", TokenOptions{MarkUsed: true}); err != nil {
		t.Fatalf("Token with Last Used: %v", err)
	}
	other := e.open(Options{Backend: BackendPlaintext})
	k, err = other.Key("gamma")
	if err != nil || !k.LastUsed.Equal(e.clk.Now()) {
		t.Fatalf("Last Used as another store reads it: %v, %v (want %v)", err, k.LastUsed, e.clk.Now())
	}
	// After Close another store writes at once.
	if _, err := s.Resolve("alpha"); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if err := other.MarkUsed("alpha"); err != nil {
		t.Fatalf("MarkUsed after the ReadOnce store closed: %v", err)
	}
}

// TestReadOnceRecoversDamage: the integrity checks hold for a ReadOnce store:
// a state.db cut short is set aside and rebuilt, and every key comes back.
func TestReadOnceRecoversDamage(t *testing.T) {
	t.Parallel()
	e, _, tokens := integrityStore(t, BackendPlaintext)
	dbPath := filepath.Join(e.stateDir, dbFileName)
	whole, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{0, 100, 4096, len(whole) / 2} {
		if err := os.WriteFile(dbPath, whole[:off], filePerm); err != nil {
			t.Fatal(err)
		}
		s := e.open(Options{Backend: BackendPlaintext, ReadOnce: true})
		keys, err := s.Keys()
		if err != nil || len(keys) != len(tokens) {
			t.Fatalf("cut at %d: Keys: %v (%d keys)", off, err, len(keys))
		}
		for _, k := range keys {
			if st := k.StatusAt(e.clk.Now()); st != StatusValid {
				t.Fatalf("cut at %d: %s: status %v", off, k.Label, st)
			}
			ts, err := s.Token(context.Background(), k.Label, TokenOptions{})
			if err != nil || ts.AccessToken != tokens[k.Label] {
				t.Fatalf("cut at %d: Token(%s): %v", off, k.Label, err)
			}
		}
		_ = s.Close()
		_ = os.WriteFile(dbPath, whole, filePerm)
	}
}

// TestStampOfSettledFiles: once config.toml and state.db are older than
// stampSettle, Stamp answers from their stat, and still changes when
// another process writes (the write moves state.db's mtime; here it is set
// to another old instant, so the stat is what shows the change).
func TestStampOfSettledFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	other := e.open(Options{})
	e.create(s, "k", true)
	cfg, db := filepath.Join(e.cfgDir, configFileName), filepath.Join(e.stateDir, dbFileName)
	old := time.Now().Add(-time.Hour)
	settle := func(at time.Time) {
		t.Helper()
		for _, p := range []string{cfg, db} {
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(old)
	first, err := s.Stamp()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Stamp(); again != first {
		t.Fatal("the stamp changed with nothing written")
	}
	if err := other.MarkUsed("k"); err != nil {
		t.Fatal(err)
	}
	settle(old.Add(time.Second))
	if after, _ := s.Stamp(); after == first {
		t.Fatal("the stamp did not change after another store's write")
	}
}

// TestEndReadOnce: the app reads its first screen with ReadOnce, then ends
// it. The stamp of that first read is the stamp read afresh afterwards (the
// first tick reloads nothing), and after EndReadOnce every read looks at the
// files again.
func TestEndReadOnce(t *testing.T) {
	t.Parallel()
	e, _, _ := integrityStore(t, BackendPlaintext)
	s := e.open(Options{Backend: BackendPlaintext, ReadOnce: true})
	if _, err := s.Keys(); err != nil {
		t.Fatal(err)
	}
	held, err := s.Stamp()
	if err != nil {
		t.Fatal(err)
	}
	s.EndReadOnce()
	if fresh, err := s.Stamp(); err != nil || fresh != held {
		t.Fatalf("stamp after EndReadOnce %q (%v), while held %q", fresh, err, held)
	}
	// Nothing held: another process's writer gets in at once.
	if err := e.open(Options{Backend: BackendPlaintext}).MarkUsed("alpha"); err != nil {
		t.Fatalf("MarkUsed by another store after EndReadOnce: %v", err)
	}
	if err := os.Rename(filepath.Join(e.cfgDir, configFileName), filepath.Join(e.cfgDir, "away.toml")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("alpha"); err == nil {
		t.Fatal("Resolve after EndReadOnce found a key whose config.toml is gone: it did not read afresh")
	}
}
