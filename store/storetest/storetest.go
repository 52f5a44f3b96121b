// Package storetest generates shipkey stores of any size for tests and
// benchmarks, through the store's own API (store.Import): no server, no
// password grant, tokens that stay valid for a year.
package storetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// Passphrase is the file backend's passphrase of every generated store.
const Passphrase = "storetest passphrase"

// layoutVersion names the generated stores' layout in the cache: bump it
// when the store's on-disk layout changes.
const layoutVersion = "v4" // v4: index records are CBOR; v3: state records keep not-before-policy and the refresh expiry source

// Store is a generated store.
type Store struct {
	ConfigDir, StateDir string
	Backend             string // "file" or "plaintext"
	N                   int
}

// Label is the label of the i-th key (0 ≤ i < N), in label order.
func Label(i int) string { return fmt.Sprintf("key-%07d", i) }

// Env is the environment that points a shipkey process at the store.
func (s Store) Env() []string {
	return []string{
		store.EnvConfigDir + "=" + s.ConfigDir,
		store.EnvStateDir + "=" + s.StateDir,
		store.EnvSecrets + "=" + s.Backend,
		store.EnvPassphrase + "=" + Passphrase,
		store.EnvKey + "=",
	}
}

// Options returns store.Options that open the store.
func (s Store) Options() store.Options {
	return store.Options{ConfigDir: s.ConfigDir, StateDir: s.StateDir, Backend: s.Backend, Warn: io.Discard,
		Passphrase: func(string) (string, error) { return Passphrase, nil }}
}

// Populate returns a store of n keys with the given secrets backend
// ("file" or "plaintext"), cached under os.TempDir() by backend and n: the
// first call generates it (100,000 keys take a while), later calls and
// later runs reuse it. Callers may use its keys (Last Used changes) but
// should not add or remove any.
func Populate(tb testing.TB, n int, backend string) Store {
	tb.Helper()
	root := filepath.Join(os.TempDir(), "shipkey-storetest", fmt.Sprintf("%s-%s-%d", layoutVersion, backend, n))
	s := Store{ConfigDir: filepath.Join(root, "config"), StateDir: filepath.Join(root, "state"), Backend: backend, N: n}
	if _, err := os.Stat(filepath.Join(root, "complete")); err == nil {
		return s
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o700); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(root), ".gen-*")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	gen := Store{ConfigDir: filepath.Join(tmp, "config"), StateDir: filepath.Join(tmp, "state"), Backend: backend, N: n}
	Generate(tb, gen)
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	// Another test process (a second run of the suite at once) may have
	// put its copy in place meanwhile: that one is used, as it may already
	// be open, and this one dropped. Only a root without "complete" is
	// replaced.
	if err := os.Rename(tmp, root); err != nil {
		if _, serr := os.Stat(filepath.Join(root, "complete")); serr == nil {
			return s
		}
		_ = os.RemoveAll(root)
		if err := os.Rename(tmp, root); err != nil {
			if _, serr := os.Stat(filepath.Join(root, "complete")); serr == nil {
				return s
			}
			tb.Fatal(err)
		}
	}
	return s
}

// Generate writes s.N keys into s's (empty) directories through
// store.Import, in batches. Key i is Label(i); the first is the default.
func Generate(tb testing.TB, s Store) {
	tb.Helper()
	st, err := store.Open(s.Options())
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Second)
	conn := auth.Connection{AuthURL: "https://auth.example.com", Realm: "shipping", ClientID: "shipping-api", Scopes: []string{"email", "profile"}}
	const batch = 20000
	for start := 0; start < s.N; start += batch {
		keys := make([]store.ImportKey, 0, min(batch, s.N-start))
		for i := start; i < s.N && i < start+batch; i++ {
			keys = append(keys, store.ImportKey{Label: Label(i), Definition: store.Definition{Connection: conn, Username: fmt.Sprintf("user%d", i)}, ClientSecret: fmt.Sprintf("client-secret-%d", i), CreatedAt: now.Add(-time.Duration(i) * time.Second), Token: &auth.TokenSet{
				AccessToken:  fmt.Sprintf("eyJhbGciOiJub25lIn0.eyJzdWIiOiJrZXktJWQifQ.%d", i),
				RefreshToken: fmt.Sprintf("refresh-%d", i), TokenType: "Bearer", Scope: "email profile",
				ExpiresIn: 365 * 24 * 3600, RefreshExpiresIn: 1800, SessionState: fmt.Sprintf("session-%d", i),
				ObtainedAt: now, AccessExpiresAt: now.Add(365 * 24 * time.Hour), RefreshExpiresAt: now.Add(30 * time.Minute),
			}})
		}
		if err := st.Import(context.Background(), keys); err != nil {
			tb.Fatalf("Import keys %d…: %v", start, err)
		}
	}
}
