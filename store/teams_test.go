package store

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestTeamsFromTheIndex: Teams answers from state.db's index, which records
// config.toml's [[teams]] whenever it is rebuilt: a hand-edited config.toml
// is seen, an index without the record (written by an earlier release) or
// with the record of another config.toml is rebuilt, and config.toml itself
// is not parsed (keys list and status at 100,000 keys parsed all of it to
// find the teams).
func TestTeamsFromTheIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "alpha", false)
	joined := e.clk.Now()
	if err := s.PutTeam(t.Context(), TeamConn{Name: "ops", Endpoints: []string{"https://127.0.0.1:2379"}, CA: "/etc/ca.pem",
		Cert: "/etc/c.pem", Key: "/etc/k.pem", User: "me", Timeout: "3s", Recipient: "age1ops", JoinedAt: joined}); err != nil {
		t.Fatal(err)
	}
	teams := func(want ...string) {
		t.Helper()
		got, err := s.Teams()
		if err != nil {
			t.Fatalf("Teams: %v", err)
		}
		var names []string
		for _, tc := range got {
			names = append(names, tc.Name)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("Teams = %q, want %q", names, want)
		}
		if ops := got[len(got)-1]; ops.Name == "ops" && (ops.User != "me" || ops.Timeout != "3s" || ops.Key != "/etc/k.pem" || !ops.JoinedAt.Equal(joined)) {
			t.Fatalf("team ops from the index = %+v", ops)
		}
	}
	teams("ops")

	// A hand edit adds a team (and makes config.toml too large to be hashed).
	cfgPath := filepath.Join(e.cfgDir, configFileName)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "\n[[teams]]\nname = \"dev\"\netcd = [\"https://127.0.0.1:2380\"]\nrecipient = \"age1dev\"\njoined_at = 2026-03-01T12:00:00Z\n"...)
	data = append(data, "# "+strings.Repeat("x", smallConfig)+"\n"...)
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	teams("dev", "ops")

	// Not parsed: the same file (size, time, inode) with content that is no
	// TOML still gives the teams the index recorded.
	fi, err := os.Stat(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	setContent := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(cfgPath, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	setContent(bytes.Repeat([]byte("!"), len(data)))
	teams("dev", "ops")
	setContent(data)

	// An index without the teams record, or with the record of another
	// config.toml, is rebuilt.
	for _, rec := range [][]byte{nil, []byte("another config.toml\n[]")} {
		db, err := bolt.Open(filepath.Join(e.stateDir, dbFileName), filePerm, &bolt.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			if rec == nil {
				return tx.Bucket(bucketMeta).Delete(metaTeams)
			}
			return tx.Bucket(bucketMeta).Put(metaTeams, rec)
		})
		if cerr := db.Close(); err != nil || cerr != nil {
			t.Fatal(err, cerr)
		}
		teams("dev", "ops")
	}
}

// TestTeamIdentitySurvivesConfigChangesAndSweeps: a machine whose only keys
// are team keys keeps working when config.toml changes in any way (a touch
// rebuilds the index, whose emptied-config check counted the team identity
// as a key's secrets), and the sweep of orphaned secret files never takes a
// team's member identity, even on a machine that also has a local key.
func TestTeamIdentitySurvivesConfigChangesAndSweeps(t *testing.T) {
	t.Parallel()
	// The file backend keeps its files as the plaintext one does (keyFiles);
	// it needs a passphrase from the environment, which a parallel test
	// cannot set.
	for _, backend := range []string{BackendPlaintext} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, nil)
			s := e.open(Options{Backend: backend})
			if err := s.PutTeam(t.Context(), TeamConn{Name: "ops", Endpoints: []string{"https://127.0.0.1:2379"}, Recipient: "age1ops"}); err != nil {
				t.Fatal(err)
			}
			if err := s.PutTeamSecrets("ops", TeamSecrets{Identity: "AGE-SECRET-KEY-1TEST"}); err != nil {
				t.Fatal(err)
			}
			cfgPath := filepath.Join(e.cfgDir, configFileName)
			later := time.Now().Add(time.Minute)
			if err := os.Chtimes(cfgPath, later, later); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Teams(); err != nil {
				t.Fatalf("team-only machine after touch config.toml: %v", err)
			}
			if _, err := s.TeamSecrets("ops"); err != nil {
				t.Fatal(err)
			}

			// A local key too, and a sweep long after the identity was written.
			e.create(s, "k", false)
			old := time.Now().Add(-2 * staleTemp)
			files, _ := filepath.Glob(filepath.Join(e.stateDir, "*", TeamSecretID("ops")+".*"))
			if len(files) != 1 {
				t.Fatalf("team identity files = %q, want one", files)
			}
			for _, p := range append(files, filepath.Join(e.stateDir, sweepStampName)) {
				_ = os.Chtimes(p, old, old)
			}
			s.sweep()
			if _, err := s.TeamSecrets("ops"); err != nil {
				t.Fatalf("after a sweep: %v", err)
			}
		})
	}
}
