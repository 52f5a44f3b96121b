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
