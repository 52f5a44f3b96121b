package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store/unlock"
)

// BenchmarkKeys lists 50 keys: what `shipkey keys list` and the TUI's key
// table read. The keys are imported (no logins), and the keyring counts
// calls: listing must never touch the secrets backend.
func BenchmarkKeys(b *testing.B) {
	dir := b.TempDir()
	cfgDir, stateDir := filepath.Join(dir, "config"), filepath.Join(dir, "state")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var keys []ImportKey
	for i := range 50 {
		label := fmt.Sprintf("key-%02d", 49-i) // unsorted on input
		obtained := now.Add(-time.Duration(i) * time.Minute)
		keys = append(keys, ImportKey{Label: label, Definition: Definition{Connection: auth.Connection{AuthURL: "https://auth.example.com", Realm: "shipping", ClientID: "shipping-api", Scopes: []string{"email", "profile"}}, Username: "user" + label}, ClientSecret: "s", CreatedAt: now.Add(-time.Duration(i) * time.Hour), LastUsed: obtained, Token: &auth.TokenSet{
			AccessToken: fmt.Sprintf("eyJhbGciOi.%032x", i), TokenType: "Bearer", ExpiresIn: 1314000, RefreshExpiresIn: 1800,
			SessionState: "5f3c-session", Scope: "email profile",
			ObtainedAt: obtained, AccessExpiresAt: obtained.Add(1314000 * time.Second), RefreshExpiresAt: obtained.Add(30 * time.Minute),
		}})
	}
	kr := newFakeKeyring()
	s, err := Open(Options{ConfigDir: cfgDir, StateDir: stateDir, Backend: BackendKeyring, Keyring: kr, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Import(context.Background(), keys); err != nil {
		b.Fatal(err)
	}
	if err := s.SetDefault("key-07"); err != nil {
		b.Fatal(err)
	}
	kr.calls.Store(0)

	b.ReportAllocs()
	for b.Loop() {
		keys, err := s.Keys()
		if err != nil || len(keys) != 50 {
			b.Fatalf("Keys: %d, %v", len(keys), err)
		}
	}
	if n := kr.calls.Load(); n != 0 {
		b.Fatalf("Keys touched the secrets backend %d times", n)
	}
}

// benchStore opens a store on a fresh directory with one key "prod" holding a
// valid 15-day access token from a demo realm on 127.0.0.1.
func benchStore(b *testing.B, backend string) (dir string, opts Options) {
	b.Helper()
	srv := authtest.NewServer(authtest.DemoConfig())
	b.Cleanup(srv.Close)
	client, err := auth.NewClient(auth.Options{Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	dir = b.TempDir()
	opts = Options{
		ConfigDir: filepath.Join(dir, "config"), StateDir: filepath.Join(dir, "state"),
		Backend: backend, Auth: client, Warn: new(syncBuffer),
	}
	if backend == BackendFile {
		b.Setenv(EnvPassphrase, "bench-passphrase")
		b.Cleanup(func() {
			keyPath := filepath.Join(opts.StateDir, secretsKeyFileName)
			if data, err := os.ReadFile(keyPath); err == nil {
				unlock.KernelForget(identityCacheDesc(keyPath, data))
			}
		})
	}
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Create(context.Background(), NewKey{Label: "prod", Definition: Definition{Connection: auth.Connection{AuthURL: srv.URL(), ClientID: authtest.DemoClientID}, Username: authtest.DemoUsername}, ClientSecret: authtest.DemoClientSecret, Password: authtest.DemoPassword})
	if err != nil {
		b.Fatalf("Create: %v", err)
	}
	return dir, opts
}

// BenchmarkToken is Token's cached path (no network): on an open store, with
// and without the Last Used write, for the encrypted file and plaintext
// backends; and "cold", which opens a new Store per call like one `shipkey
// token` process does (for the file backend the identity comes from the
// kernel keyring cache, not scrypt).
func BenchmarkToken(b *testing.B) {
	for _, backend := range []string{BackendFile, BackendPlaintext} {
		b.Run(backend, func(b *testing.B) {
			_, opts := benchStore(b, backend)
			s, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for _, markUsed := range []bool{false, true} {
				b.Run(fmt.Sprintf("markUsed=%v", markUsed), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := s.Token(ctx, "prod", TokenOptions{MarkUsed: markUsed}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			b.Run("cold_open+markUsed", func(b *testing.B) {
				before := scryptUnwraps.Load()
				b.ReportAllocs()
				for b.Loop() {
					s, err := Open(opts)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Token(ctx, "prod", TokenOptions{MarkUsed: true}); err != nil {
						b.Fatal(err)
					}
					_ = s.Close()
				}
				b.ReportMetric(float64(scryptUnwraps.Load()-before), "scrypt-total")
			})
		})
	}
}
