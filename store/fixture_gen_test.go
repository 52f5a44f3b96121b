package store

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
)

// TestGenerateV1Fixtures writes store/testdata/v1-file and v1-plaintext with
// the store code of the base commit (config.toml + state.json + secrets.age /
// secrets.key.age, or secrets.json): the layout that later versions must
// migrate. It runs only with SHIPKEY_GEN_FIXTURES=1. The one departure from
// what a user's store holds: secrets.key.age is wrapped at scrypt work factor
// 10 (the format is the same; age reads any factor) so that tests reading the
// fixture do not pay a full derivation.
func TestGenerateV1Fixtures(t *testing.T) {
	if os.Getenv("SHIPKEY_GEN_FIXTURES") != "1" {
		t.Skip("set SHIPKEY_GEN_FIXTURES=1 to regenerate store/testdata/v1-*")
	}
	const pass = "fixture passphrase"
	for _, backend := range []string{BackendFile, BackendPlaintext} {
		root, _ := filepath.Abs(filepath.Join("testdata", "v1-"+backend))
		_ = os.RemoveAll(root)
		e := newEnv(t, nil)
		e.cfgDir, e.stateDir = filepath.Join(root, "config"), filepath.Join(root, "state")
		if backend == BackendFile {
			t.Setenv(EnvPassphrase, pass)
			id, err := age.GenerateX25519Identity()
			if err != nil {
				t.Fatal(err)
			}
			rcpt, err := age.NewScryptRecipient(pass)
			if err != nil {
				t.Fatal(err)
			}
			rcpt.SetWorkFactor(10)
			var buf bytes.Buffer
			w, _ := age.Encrypt(&buf, rcpt)
			_, _ = io.WriteString(w, id.String()+"\n")
			_ = w.Close()
			if err := ensureDir(e.stateDir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.stateDir, secretsKeyFileName), buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s := e.open(Options{Backend: backend})
		e.create(s, "prod", true)
		e.create(s, "staging", false)
		e.create(s, "old one", false)
		if _, err := s.Logout(context.Background(), "old one"); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkUsed("staging"); err != nil {
			t.Fatal(err)
		}
		for _, label := range []string{"prod", "staging"} {
			ts, err := s.Current(label)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, label+".access_token"), []byte(ts.AccessToken), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_ = os.Remove(filepath.Join(e.stateDir, lockFileName))
		matches, _ := filepath.Glob(filepath.Join(e.stateDir, "*.refresh.lock"))
		for _, m := range matches {
			_ = os.Remove(m)
		}
	}
}
