package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store/unlock"
)

// copyTree copies testdata directory src to dst with the store's modes.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, dirPerm)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, filePerm)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// v1Env is an env whose directories hold a copy of a store written by the
// one-file layout's code (testdata/v1-<backend>, see the commit that added it).
func v1Env(t *testing.T, backend string) (*env, string) {
	t.Helper()
	e := newEnv(t, nil)
	root := t.TempDir()
	copyTree(t, filepath.Join("testdata", "v1-"+backend), root)
	e.cfgDir, e.stateDir = filepath.Join(root, "config"), filepath.Join(root, "state")
	if backend == BackendFile {
		t.Setenv(EnvPassphrase, "fixture passphrase")
		keyPath := filepath.Join(e.stateDir, secretsKeyFileName)
		data, err := os.ReadFile(keyPath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unlock.KernelForget(identityCacheDesc(keyPath, data)) })
	}
	return e, root
}

func TestMigrateV1Store(t *testing.T) { // not parallel: v1Env sets SHIPKEY_PASSPHRASE
	for _, backend := range []string{BackendFile, BackendPlaintext} {
		t.Run(backend, func(t *testing.T) {
			e, root := v1Env(t, backend)
			s := e.open(Options{Backend: backend})

			// Listing migrates the state (no passphrase needed) and says so once.
			keys, err := s.Keys()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 3 || keys[0].Label != "old one" || keys[1].Label != "prod" || keys[2].Label != "staging" {
				t.Fatalf("Keys = %+v", keys)
			}
			if !keys[1].Default || !keys[0].LoggedOut || keys[2].LastUsed.IsZero() || keys[1].Masked == "" || !keys[1].RememberPassword {
				t.Fatalf("metadata lost: %+v", keys)
			}
			if _, err := os.Stat(filepath.Join(e.stateDir, "state.json")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("state.json left after migration: %v", err)
			}
			if w := e.warn.String(); strings.Count(w, "upgraded the store in "+e.stateDir) != 1 || !strings.Contains(w, "state.json moved into") {
				t.Fatalf("migration said: %q", w)
			}

			// The first secret read moves the secrets file into per-key files.
			for _, label := range []string{"prod", "staging"} {
				want, err := os.ReadFile(filepath.Join(root, label+".access_token"))
				if err != nil {
					t.Fatal(err)
				}
				ts, err := s.Token(context.Background(), label, TokenOptions{MarkUsed: true})
				if err != nil {
					t.Fatalf("Token(%s): %v", label, err)
				}
				if ts.AccessToken != string(want) {
					t.Fatalf("Token(%s) is not the migrated token", label)
				}
				e.remember(ts)
			}
			if e.srv.Count("refresh_token")+e.srv.Count("password") != 0 {
				t.Fatal("the migrated tokens were not used as they are")
			}
			legacy, dir := "secrets.json", "plaintext.d"
			if backend == BackendFile {
				legacy, dir = "secrets.age", "secrets.d"
			}
			if _, err := os.Stat(filepath.Join(e.stateDir, legacy)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s left after migration: %v", legacy, err)
			}
			if n := countSecretFiles(filepath.Join(e.stateDir, dir)); n != 3 {
				t.Fatalf("%s holds %d files, want 3", dir, n)
			}
			if w := e.warn.String(); !strings.Contains(w, legacy+" moved into") {
				t.Fatalf("secrets migration not said: %q", w)
			}
			if cs, err := s.ClientSecret("old one"); err != nil || cs != testClientSecret {
				t.Fatalf("ClientSecret(old one) = %v", err)
			}

			// A second process finds a migrated store and says nothing.
			before := e.warn.String()
			s2 := e.open(Options{Backend: backend})
			if _, err := s2.Token(context.Background(), "prod", TokenOptions{}); err != nil {
				t.Fatal(err)
			}
			if e.warn.String() != before {
				t.Fatalf("said again: %q", strings.TrimPrefix(e.warn.String(), before))
			}
			// The fixture's server is gone: a forced Remove says so, and removes.
			_, _ = s2.RemoveWith(context.Background(), "staging", RemoveOptions{Force: true})
			if _, err := s2.Key("staging"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Key(staging) after Remove = %v", err)
			}
			if backend == BackendFile {
				e.check(s2)
			}
		})
	}
}

// A migration that fails midway (here: the per-key directory cannot be
// made) leaves a store that works as before, and is finished by the next
// call once the cause is gone.
func TestMigrationInterruptedResumes(t *testing.T) {
	t.Parallel()
	e, root := v1Env(t, BackendPlaintext)
	blocker := filepath.Join(e.stateDir, "plaintext.d")
	if err := os.WriteFile(blocker, []byte("in the way"), filePerm); err != nil {
		t.Fatal(err)
	}
	s := e.open(Options{Backend: BackendPlaintext})
	if _, err := s.Token(context.Background(), "prod", TokenOptions{}); err == nil {
		t.Fatal("the migration did not fail")
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "secrets.json")); err != nil {
		t.Fatalf("secrets.json gone after a failed migration: %v", err)
	}
	if keys, err := s.Keys(); err != nil || len(keys) != 3 {
		t.Fatalf("Keys after a failed migration = %d, %v", len(keys), err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(root, "prod.access_token"))
	ts, err := s.Token(context.Background(), "prod", TokenOptions{})
	if err != nil || ts.AccessToken != string(want) {
		t.Fatalf("Token after the cause is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "secrets.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("secrets.json left: %v", err)
	}
}

// state.json holding null (old layout) is reported, never read as "no
// state" and never overwritten.
func TestLegacyStateNull(t *testing.T) {
	t.Parallel()
	e, _ := v1Env(t, BackendPlaintext)
	p := filepath.Join(e.stateDir, "state.json")
	if err := os.WriteFile(p, []byte("null\n"), filePerm); err != nil {
		t.Fatal(err)
	}
	_, err := e.tryOpen(Options{Backend: BackendPlaintext})
	if err == nil || !strings.Contains(err.Error(), p+": line 1: it holds null") || !strings.HasSuffix(err.Error(), "fix or move it away") {
		t.Fatalf("Open beside state.json = null: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "null\n" {
		t.Fatal("state.json was rewritten")
	}
	// An emptied config beside a v1 state names state.json.
	if err := os.WriteFile(p, []byte(`{"version":1,"keys":{"0123456789abcdef":{"masked":"x"}}}`), filePerm); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(e.cfgDir, "config.toml")
	if err := os.WriteFile(cfg, nil, filePerm); err != nil {
		t.Fatal(err)
	}
	_, err = e.tryOpen(Options{Backend: BackendPlaintext})
	if err == nil || !strings.Contains(err.Error(), cfg+" holds no keys, but "+p+" holds the data of 1 key") {
		t.Fatalf("emptied config beside state.json: %v", err)
	}
}

// Temporary files a killed process left (kill -9 in the middle of a write)
// are swept by the next process that takes store.lock, when no sweep ran
// in the last minute, once they are older than a minute; a fresh one (a
// write in progress) and other files stay.
func TestSweepStaleTemporaryFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	e.create(s, "k", true)
	id := mustKey(t, s, "k").ID
	secDir := filepath.Join(e.stateDir, "plaintext.d")
	old := time.Now().Add(-2 * time.Minute)
	stale := []string{
		filepath.Join(e.cfgDir, ".config.toml.tmp-123456"),
		filepath.Join(e.stateDir, ".secrets.json.tmp-42"),
		filepath.Join(secDir, "."+id+".json.tmp-987654321"),
	}
	fresh := filepath.Join(secDir, "."+id+".json.tmp-555")
	other := filepath.Join(e.stateDir, ".notes.tmp-old")
	for _, p := range append(stale, fresh, other) {
		if err := os.WriteFile(p, []byte(testClientSecret), filePerm); err != nil {
			t.Fatal(err)
		}
		if p != fresh {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	stamp := filepath.Join(e.stateDir, sweepStampName)
	if err := os.Chtimes(stamp, old, old); err != nil { // the last sweep, 2 minutes ago
		t.Fatal(err)
	}
	if err := s.SetDefault("k"); err != nil { // takes store.lock
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale %s not swept: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{fresh, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s swept: %v", filepath.Base(p), err)
		}
	}
}

// After `keys rm` no file under either store directory holds any of the
// key's secrets, even with the plaintext backend and a temporary file that
// a killed process left holding them.
func TestRemoveLeavesNoSecretBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	e.create(s, "k", true)
	e.clk.Advance(6 * time.Minute)
	ts := e.token(s, "k") // a refresh: new tokens written over the old
	cur, err := s.Current("k")
	if err != nil {
		t.Fatal(err)
	}
	id := mustKey(t, s, "k").ID
	leftover := filepath.Join(e.stateDir, "plaintext.d", "."+id+".json.tmp-31337")
	data, _ := os.ReadFile(filepath.Join(e.stateDir, "plaintext.d", id+".json"))
	if err := os.WriteFile(leftover, data, filePerm); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(leftover, old, old)
	if _, err := s.Remove(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	needles := []string{testClientSecret, "demo-password", ts.AccessToken, ts.RefreshToken, cur.IDToken}
	needles = append(needles, secretsSeen(e)...)
	for _, root := range []string{e.cfgDir, e.stateDir} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, n := range needles {
				if n != "" && bytes.Contains(data, []byte(n)) {
					t.Errorf("%s still holds a secret of the removed key", path)
				}
			}
			return nil
		})
	}
}

func secretsSeen(e *env) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for s := range e.secrets {
		out = append(out, s)
	}
	return out
}

// Reading one key's secrets reads that key's record only: another key's
// damaged record does not matter to it.
func TestSecretsArePerKey(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv(EnvPassphrase, "per key")
	s := e.open(Options{Backend: BackendFile})
	e.create(s, "a", false)
	e.create(s, "b", false)
	bID := mustKey(t, s, "b").ID
	bPath := filepath.Join(e.stateDir, "secrets.d", bID+".age")
	if err := os.WriteFile(bPath, []byte("damaged"), filePerm); err != nil {
		t.Fatal(err)
	}
	e.token(s, "a")
	_, err := s.Token(context.Background(), "b", TokenOptions{})
	if err == nil || !strings.Contains(err.Error(), bPath) {
		t.Fatalf("Token(b) with a damaged record = %v", err)
	}
}

// Stamp changes on every write of any kind, by this or another process,
// and on a hand edit of config.toml; it stays when nothing changed.
func TestStampChangesOnEveryWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	other := e.open(Options{})
	e.create(s, "k", true)
	stamp := func() Stamp {
		t.Helper()
		st, err := s.Stamp()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	prev := stamp()
	if stamp() != prev {
		t.Fatal("the stamp changed with nothing written")
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"MarkUsed", func() error { return other.MarkUsed("k") }},
		{"Token+MarkUsed", func() error {
			e.clk.Advance(lastUsedStep) // a use within a minute of the last is not written
			_, err := other.Token(context.Background(), "k", TokenOptions{MarkUsed: true})
			return err
		}},
		{"Refresh", func() error { _, _, err := other.Refresh(context.Background(), "k"); return err }},
		{"Rename", func() error { return other.Rename("k", "j") }},
		{"Logout", func() error { _, err := other.Logout(context.Background(), "j"); return err }},
		{"Login", func() error { _, _, err := other.Login(context.Background(), "j", LoginOptions{}); return err }},
		{"Create", func() error { _, _, err := other.Create(context.Background(), e.newKey("n", false)); return err }},
		{"SetDefault", func() error { return other.SetDefault("n") }},
		{"Remove", func() error { _, err := other.Remove(context.Background(), "n"); return err }},
		{"hand edit", func() error {
			p := filepath.Join(e.cfgDir, "config.toml")
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, bytes.Replace(data, []byte("label = 'j'"), []byte("label = 'h'"), 1), filePerm)
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if now := stamp(); now == prev {
			t.Fatalf("the stamp did not change after %s", st.name)
		} else {
			prev = now
		}
	}
	// The hand edit is seen: the index follows config.toml.
	if k, err := s.Key("h"); err != nil || k.LoggedOut {
		t.Fatalf("Key(h) after a hand edit = %+v, %v", k, err)
	}
	if _, err := s.Key("j"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Key(j) after a hand edit = %v", err)
	}
	e.token(s, "h")
}

func TestImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	now := e.clk.Now()
	tok := func(access string) *auth.TokenSet {
		return &auth.TokenSet{AccessToken: access, RefreshToken: "r-" + access, TokenType: "Bearer", ExpiresIn: 3600,
			ObtainedAt: now, AccessExpiresAt: now.Add(time.Hour), RefreshExpiresAt: now.Add(2 * time.Hour)}
	}
	in := []ImportKey{
		{Label: "zulu", Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "cs-z", Token: tok("access-z")},
		{Label: "alpha", Definition: Definition{Connection: e.conn(), Username: "u", RememberPassword: true}, ClientSecret: "cs-a", Password: "pw", Token: tok("access-a")},
		{Label: "none", Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "cs-n"},
	}
	if err := s.Import(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	keys, err := s.Keys()
	if err != nil || len(keys) != 3 || keys[0].Label != "alpha" || !keys[2].Default || keys[1].StatusAt(now) != StatusNoToken {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	ts, err := s.Token(context.Background(), "zulu", TokenOptions{MarkUsed: true})
	if err != nil || ts.AccessToken != "access-z" || e.srv.Count("refresh_token") != 0 {
		t.Fatalf("Token(zulu) = %v", err)
	}
	if cs, err := s.ClientSecret("alpha"); err != nil || cs != "cs-a" {
		t.Fatalf("ClientSecret(alpha) = %v", err)
	}
	// A taken label, or one given twice: nothing is imported.
	for _, bad := range [][]ImportKey{
		{{Label: "new", Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "x"}, {Label: "alpha", Definition: Definition{Connection: e.conn(), Username: "u"}, ClientSecret: "x"}},
		{{Label: "twice", Definition: Definition{Connection: e.conn(), Username: "u"}}, {Label: "twice", Definition: Definition{Connection: e.conn(), Username: "u"}}},
	} {
		if err := s.Import(context.Background(), bad); err == nil {
			t.Fatal("Import of a taken or repeated label succeeded")
		}
		if keys, _ := s.Keys(); len(keys) != 3 {
			t.Fatalf("a failed Import left %d keys", len(keys))
		}
		if n := countSecretFiles(filepath.Join(e.stateDir, "plaintext.d")); n != 3 {
			t.Fatalf("a failed Import left %d secrets files", n)
		}
	}
}
