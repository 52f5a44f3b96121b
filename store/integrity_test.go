package store

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store/unlock"
)

// integrityStore makes a store of three keys with tokens on backend and
// returns it with each key's access token.
func integrityStore(t *testing.T, backend string) (*env, *Store, map[string]string) {
	t.Helper()
	e := newEnv(t, nil)
	if backend == BackendFile {
		t.Setenv(EnvUnlockMech, MechNone)
		t.Setenv(EnvPassphrase, "integrity passphrase")
	}
	s := e.open(Options{Backend: backend})
	tokens := map[string]string{}
	for _, label := range []string{"alpha", "beta", "gamma"} {
		e.create(s, label, false)
		tokens[label] = e.token(s, label).AccessToken
	}
	return e, s, tokens
}

// checkRecovered opens the store as a new process would and checks that
// every key is there with its state (status valid) and that token hands out
// the same access token without asking the server: status and token agree.
func checkRecovered(t *testing.T, e *env, backend string, tokens map[string]string, what string) {
	t.Helper()
	s := e.open(Options{Backend: backend})
	grants := e.srv.Count("token")
	if backend == BackendFile {
		if err := s.Unlock(); err != nil {
			t.Fatalf("%s: Unlock: %v", what, err)
		}
	}
	keys, err := s.Keys()
	if err != nil {
		t.Fatalf("%s: Keys: %v", what, err)
	}
	if len(keys) != len(tokens) {
		t.Fatalf("%s: %d keys, want %d", what, len(keys), len(tokens))
	}
	for _, k := range keys {
		if st := k.StatusAt(e.clk.Now()); st != StatusValid || k.Masked == "" {
			t.Fatalf("%s: %s: status %v, masked %q: the state was not rebuilt", what, k.Label, st, k.Masked)
		}
		// The timing comes back from the copy kept with the secrets, not
		// guessed (a token without a stated expiry, obtained now).
		if k.Token.AccessExpiresAt.IsZero() || k.Token.RefreshExpiresAt.IsZero() {
			t.Fatalf("%s: %s: token timing %+v: the state's copy was not used", what, k.Label, k.Token)
		}
		ts, err := s.Token(context.Background(), k.Label, TokenOptions{})
		if err != nil || ts.AccessToken != tokens[k.Label] {
			t.Fatalf("%s: Token(%s) = %v (same token: %v)", what, k.Label, err, ts != nil && ts.AccessToken == tokens[k.Label])
		}
	}
	if e.srv.Count("token") != grants {
		t.Fatalf("%s: the server was asked for tokens", what)
	}
}

// TestTruncatedStateDBRecovers cuts state.db at every page boundary and at
// random offsets: no crash (bbolt maps the file; a missing page would be a
// SIGBUS), the damaged file is set aside and said in one line, and every key
// comes back with its state from config.toml and the secret files.
func TestTruncatedStateDBRecovers(t *testing.T) {
	e, _, tokens := integrityStore(t, BackendPlaintext)
	dbPath := filepath.Join(e.stateDir, dbFileName)
	whole, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	offsets := []int{0, 1, 100, 4095}
	for off := 4096; off < len(whole); off += 4096 {
		offsets = append(offsets, off)
	}
	rng := rand.New(rand.NewPCG(16, uint64(len(whole))))
	for range 12 {
		offsets = append(offsets, rng.IntN(len(whole)))
	}
	for _, off := range offsets {
		if err := os.WriteFile(dbPath, whole[:off], filePerm); err != nil {
			t.Fatal(err)
		}
		before := e.warn.String()
		checkRecovered(t, e, BackendPlaintext, tokens, "cut at "+strconv.Itoa(off))
		said := strings.TrimPrefix(e.warn.String(), before)
		if off > 0 && checkDBFile(dbPath) == nil && strings.Count(said, " was damaged") > 1 {
			t.Fatalf("cut at %d: said more than once: %q", off, said)
		}
		if strings.Contains(said, "goroutine") || strings.Contains(said, "panic") {
			t.Fatalf("cut at %d: %q", off, said)
		}
		if aside, _ := filepath.Glob(dbPath + ".damaged-*"); off >= 8192 && len(aside) == 0 && !strings.Contains(said, "was damaged") {
			// A cut past the pages in use leaves a database that still works:
			// nothing to set aside. Below it, something must have been said.
			if checkDBFileLen(whole, off) {
				t.Fatalf("cut at %d: damaged, but nothing set aside or said", off)
			}
		}
		_ = os.WriteFile(dbPath, whole, filePerm)
	}
}

// checkDBFileLen reports whether whole cut at off is damaged by the check
// before mapping.
func checkDBFileLen(whole []byte, off int) bool {
	p := filepath.Join(os.TempDir(), "shipkey-dbcheck-"+strconv.Itoa(rand.IntN(1<<30)))
	defer os.Remove(p)
	if os.WriteFile(p, whole[:off], 0o600) != nil {
		return false
	}
	return checkDBFile(p) != nil
}

// TestMissingOrEmptyStateDB: a state.db that is missing or 0 bytes beside
// existing keys is rebuilt, state included, so status does not say "login
// needed" while token works.
func TestMissingOrEmptyStateDB(t *testing.T) {
	for _, backend := range []string{BackendPlaintext, BackendFile, BackendKeyring} {
		for _, how := range []string{"missing", "empty"} {
			t.Run(backend+"/"+how, func(t *testing.T) {
				e, _, tokens := integrityStore(t, backend)
				dbPath := filepath.Join(e.stateDir, dbFileName)
				var err error
				if how == "missing" {
					err = os.Remove(dbPath)
				} else {
					err = os.Truncate(dbPath, 0)
				}
				if err != nil {
					t.Fatal(err)
				}
				checkRecovered(t, e, backend, tokens, how+" state.db")
			})
		}
	}
}

// TestSwappedSecretFiles: a key's secret file replaced by another key's is
// refused with one line naming both files; the other key's token is never
// handed out.
func TestSwappedSecretFiles(t *testing.T) {
	for _, backend := range []string{BackendPlaintext, BackendFile} {
		t.Run(backend, func(t *testing.T) {
			e, s, tokens := integrityStore(t, backend)
			a, b := mustKey(t, s, "alpha"), mustKey(t, s, "beta")
			var f keyFiles
			if backend == BackendFile {
				f = s.fileBackend().files()
			} else {
				f = s.backends[BackendPlaintext].(*plaintextBackend).files()
			}
			data, err := os.ReadFile(f.path(b.ID))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.path(a.ID), data, filePerm); err != nil {
				t.Fatal(err)
			}
			s2 := e.open(Options{Backend: backend})
			ts, err := s2.Token(context.Background(), "alpha", TokenOptions{})
			if err == nil {
				t.Fatalf("Token(alpha) handed out a token (beta's: %v)", ts.AccessToken == tokens["beta"])
			}
			msg := err.Error()
			if !strings.Contains(msg, f.path(a.ID)) || !strings.Contains(msg, f.path(b.ID)) || strings.Contains(msg, "\n") {
				t.Fatalf("not one line naming both files: %v", msg)
			}
			e.noSecretIn(err)
			if got := e.token(s2, "beta").AccessToken; got != tokens["beta"] {
				t.Fatal("beta's own token changed")
			}
		})
	}
}

// TestPlantedWrongUnlockKey: an identity in the kernel keyring that does not
// open the files (any process of the user can plant one) is dropped and the
// passphrase is used; nothing advises moving the intact files away.
func TestPlantedWrongUnlockKey(t *testing.T) {
	requireKernel(t)
	e := newEnv(t, nil)
	t.Setenv(EnvUnlockMech, MechKernel)
	t.Setenv(EnvPassphrase, "right passphrase")
	s := e.open(Options{Backend: BackendFile})
	e.create(s, "k", false)
	want := e.token(s, "k").AccessToken

	plant := func() {
		keyPath := s.fileBackend().keyPath()
		wrapped, err := os.ReadFile(keyPath)
		if err != nil {
			t.Fatal(err)
		}
		desc := identityCacheDesc(keyPath, wrapped)
		wrong, err := age.GenerateX25519Identity()
		if err != nil {
			t.Fatal(err)
		}
		unlock.KernelForget(desc)
		if err := unlock.KernelStore(desc, wrong, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for _, via := range []string{"variable", "prompt"} {
		plant()
		opts := Options{Backend: BackendFile}
		if via == "prompt" {
			t.Setenv(EnvPassphrase, "")
			opts.Passphrase = func(string) (string, error) { return "right passphrase", nil }
		}
		before := e.warn.String()
		s2 := e.open(opts)
		ts, err := s2.Token(context.Background(), "k", TokenOptions{})
		if err != nil || ts.AccessToken != want {
			t.Fatalf("%s: Token with a planted key = %v", via, err)
		}
		said := strings.TrimPrefix(e.warn.String(), before)
		if !strings.Contains(said, "does not open its secret files; dropped it") || strings.Contains(said, "move") {
			t.Fatalf("%s: said %q", via, said)
		}
	}
}

// TestLogoutRetriedUntilTheServerEndsIt: logout against a server that
// cannot be reached keeps the end pending (the session stays live at the
// server, and no token is handed out); the next logout ends it there. keys
// rm of such a key says so and removes only with Force.
func TestLogoutRetriedUntilTheServerEndsIt(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "k", false)
	e.create(s, "r", false)
	if e.srv.Sessions() != 2 {
		t.Fatalf("sessions = %d", e.srv.Sessions())
	}
	e.srv.Inject(authtest.Fault{Endpoint: "logout", Drop: true})
	if _, err := s.Logout(context.Background(), "k"); err == nil {
		t.Fatal("a logout that never reached the server succeeded")
	}
	if k := mustKey(t, s, "k"); k.EndPending.IsZero() || !k.LoggedOut {
		t.Fatalf("no pending end: %+v", k)
	}
	if e.srv.Sessions() != 2 {
		t.Fatal("the session ended although the server was not reached")
	}
	// A login must not replace the tokens of a session still to be ended:
	// it ends it first, or says the end is pending.
	e.srv.Inject(authtest.Fault{Endpoint: "logout", Drop: true})
	var pending *EndPendingError
	if _, _, err := s.Login(context.Background(), "k", LoginOptions{Password: authtest.DemoPassword}); !errors.As(err, &pending) {
		t.Fatalf("Login with an end pending and the server down = %v", err)
	}
	// Another process sees the pending end too, and its logout ends it.
	s2 := e.open(Options{})
	if res, err := s2.Logout(context.Background(), "k"); err != nil || !res.Ended() {
		t.Fatalf("retried logout: %+v, %v", res, err)
	}
	if e.srv.Sessions() != 1 {
		t.Fatalf("the retry did not end the session at the server: %d live", e.srv.Sessions())
	}
	if k := mustKey(t, s2, "k"); !k.EndPending.IsZero() {
		t.Fatal("pending end kept after the server ended the session")
	}

	e.srv.Inject(authtest.Fault{Endpoint: "logout", Drop: true, Times: 2})
	_, err := s.Remove(context.Background(), "r")
	pe := pending
	if !errors.As(err, &pe) {
		t.Fatalf("Remove with the server down = %v", err)
	}
	if _, err := s.Key("r"); err != nil {
		t.Fatal("the key was removed with its session still live")
	}
	if _, err := s.Remove(context.Background(), "r"); !errors.As(err, &pe) {
		t.Fatalf("Remove of a key with a pending end = %v", err)
	}
	if _, err := s.RemoveWith(context.Background(), "r", RemoveOptions{Force: true}); err != nil {
		t.Fatalf("forced Remove = %v", err)
	}
	if _, err := s.Key("r"); !errors.Is(err, ErrNotFound) {
		t.Fatal("forced Remove kept the key")
	}
	if e.srv.Sessions() != 0 {
		t.Fatalf("forced Remove with the server up did not end the session: %d live", e.srv.Sessions())
	}
}

// TestSweepTakesOrphansNotToken: Sweep (serve, every SweepEvery) and the
// commands that take store.lock remove stale temporary files and secret
// files of keys config.toml does not hold; fresh ones stay (a writer may be
// at work). `shipkey token` sweeps nothing: its cost must not grow with the
// number of keys.
func TestSweepTakesOrphansNotToken(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	e.create(s, "k", false)
	dir := filepath.Join(e.stateDir, plaintextDirName)
	old := time.Now().Add(-2 * staleTemp)
	orphan := filepath.Join(dir, "0123456789abcdef.json")
	temp := filepath.Join(dir, ".0123456789abcdef.json.tmp-1234")
	fresh := filepath.Join(dir, "fedcba9876543210.json")
	for _, p := range []string{orphan, temp, fresh} {
		if err := os.WriteFile(p, []byte(`{"client_secret":"x"}`), filePerm); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{orphan, temp, filepath.Join(e.stateDir, sweepStampName)} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Token(context.Background(), "k", TokenOptions{MarkUsed: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{orphan, temp} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("token swept %s: %v", filepath.Base(p), err)
		}
	}
	s.Sweep()
	for _, p := range []string{orphan, temp} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not swept", filepath.Base(p))
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh secret file was swept")
	}
	if _, err := s.Token(context.Background(), "k", TokenOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestForeignStoreRefused: a store that belongs to another user is refused
// before anything is read or written, with one line naming the owner and the
// file; running as root never leaves root-owned files in it.
func TestForeignStoreRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root (CI runs as root)")
		}
		t.Skip("needs root to give the store to another user")
	}
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	e.create(s, "k", false)
	root := filepath.Dir(filepath.Dir(e.cfgDir))
	if out, err := exec.Command("chown", "-R", "65534:65534", root).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	_, err := e.tryOpen(Options{Backend: BackendPlaintext})
	if err == nil || !strings.Contains(err.Error(), "belongs to") || !strings.Contains(err.Error(), "uid 65534") ||
		!strings.Contains(err.Error(), e.cfgDir) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open of another user's store = %v", err)
	}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if uid, _ := ownerUID(fi); uid != 65534 {
			t.Errorf("%s is owned by uid %d after a refused open", p, uid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A new store inside another user's directory: refused, nothing made.
	home := t.TempDir()
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{ConfigDir: filepath.Join(home, ".config", "shipkey"), StateDir: filepath.Join(home, ".local", "state", "shipkey"),
		Backend: BackendPlaintext, Warn: e.warn})
	if err == nil || !strings.Contains(err.Error(), home+" belongs to") {
		t.Fatalf("Open of a new store in another user's home = %v", err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("root made %d entries in another user's home", len(entries))
	}
}

// A secret record read and written again keeps its copy of the state
// byte for byte, without decoding it; get decodes it when asked.
func TestStoredMetaRoundTrip(t *testing.T) {
	t.Parallel()
	exp := time.Date(2026, 3, 16, 12, 0, 0, 0, time.UTC)
	in := keySecrets{ClientSecret: "cs", AccessToken: "at"}
	in.bind("k1", keyState{Masked: "at…", Token: auth.TokenSet{TokenType: "Bearer", AccessExpiresAt: exp}})
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out keySecrets
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Meta == nil || out.Meta.m != nil {
		t.Fatalf("the copy was decoded on read: %+v", out.Meta)
	}
	again, err := json.Marshal(out)
	if err != nil || string(again) != string(data) {
		t.Fatalf("written again: %s (%v), want %s", again, err, data)
	}
	m := out.Meta.get()
	if m == nil || m.Masked != "at…" || !m.Token.AccessExpiresAt.Equal(exp) {
		t.Fatalf("get = %+v", m)
	}
	var none keySecrets
	if err := json.Unmarshal([]byte(`{"client_secret":"cs","meta":{"masked":5}}`), &none); err != nil {
		t.Fatal(err)
	}
	if none.Meta.get() != nil {
		t.Fatal("a copy that does not decode is not nil")
	}
}

// TestRemoveKilledBetweenCommits: a `keys rm` that dies between its two
// commits (the definition, then the secrets and state) leaves no key listed
// without its secrets: the key is gone, the other keys work, and the sweep
// takes the secret file no key names. Not parallel: it sets the package's
// hook between the commits.
func TestRemoveKilledBetweenCommits(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	gone := e.create(s, "gone", true)
	e.create(s, "kept", true)
	removeKilledBetweenCommits(t, s, "gone")

	s2 := e.open(Options{Backend: BackendPlaintext})
	keys, err := s2.Keys()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Label == "gone" {
			t.Fatal("the key is still listed after its definition was removed")
		}
		if _, err := s2.Token(context.Background(), k.Label, TokenOptions{}); err != nil {
			t.Errorf("key %s after the kill: %v", k.Label, err)
		}
	}
	orphan := filepath.Join(e.stateDir, plaintextDirName, gone.ID+".json")
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("the secret file of the removed key should be left for the sweep: %v", err)
	}
	old := time.Now().Add(-2 * staleTemp)
	for _, p := range []string{orphan, filepath.Join(e.stateDir, sweepStampName)} {
		_ = os.Chtimes(p, old, old)
	}
	s2.Sweep()
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sweep left the removed key's secrets (%v)", err)
	}
}

// removeKilledBetweenCommits runs a forced Remove of label that stops, as a
// kill -9 would, right after its first commit (the definition removed).
func removeKilledBetweenCommits(t *testing.T, s *Store, label string) {
	t.Helper()
	type killed struct{}
	removeCommitted = func() { panic(killed{}) }
	defer func() {
		removeCommitted = nil
		if r := recover(); r != (killed{}) {
			panic(r)
		}
	}()
	_, _ = s.RemoveWith(context.Background(), label, RemoveOptions{Force: true})
	t.Fatal("the remove went past the hook")
}

// TestRemoveLastKeyKilledBetweenCommits: when the killed `keys rm` removed
// the store's last key, config.toml holds no keys, and the sweep still takes
// the key's secret file: shipkey wrote that keyless config.toml itself
// (state.db's index records it). A keyless config.toml shipkey did not write
// (emptied by hand), or none at all, sweeps nothing: the secrets may be the
// only copy. Not parallel: it sets the package's hook.
func TestRemoveLastKeyKilledBetweenCommits(t *testing.T) {
	age := func(paths ...string) {
		t.Helper()
		old := time.Now().Add(-2 * staleTemp)
		for _, p := range paths {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}

	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendPlaintext})
	gone := e.create(s, "gone", true)
	removeKilledBetweenCommits(t, s, "gone")
	s2 := e.open(Options{Backend: BackendPlaintext})
	if keys, err := s2.Keys(); err != nil || len(keys) != 0 {
		t.Fatalf("Keys after the kill = %v, %v; want none", keys, err)
	}
	orphan := filepath.Join(e.stateDir, plaintextDirName, gone.ID+".json")
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("the secret file of the removed key should be left for the sweep: %v", err)
	}
	age(orphan, filepath.Join(e.stateDir, sweepStampName))
	s2.Sweep()
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sweep left the removed last key's secrets (%v)", err)
	}

	// Not shipkey's: a keyless config.toml written by hand beside a key's
	// secrets, then no config.toml at all.
	e = newEnv(t, nil)
	s = e.open(Options{Backend: BackendPlaintext})
	kept := e.create(s, "kept", true)
	secret := filepath.Join(e.stateDir, plaintextDirName, kept.ID+".json")
	cfgPath := filepath.Join(e.cfgDir, configFileName)
	for _, damage := range []func() error{
		func() error { return os.WriteFile(cfgPath, []byte("# emptied\n"), filePerm) },
		func() error { return os.Remove(cfgPath) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		age(secret, filepath.Join(e.stateDir, sweepStampName))
		s.Sweep()
		if _, err := os.Stat(secret); err != nil {
			t.Fatalf("the sweep took the secrets beside a config.toml shipkey did not write: %v", err)
		}
	}
}

// TestRemoveKilledBetweenCommitsKeyring: the keyring cannot be listed, so a
// killed `keys rm` records the id it removed (state.db) and the sweep deletes
// exactly that id's secrets: its file in keyring.d and an entry of the old
// layout (one per key) in the keyring; the other key's stay. Not parallel:
// it sets the package's hook.
func TestRemoveKilledBetweenCommitsKeyring(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendKeyring})
	gone := e.create(s, "gone", true)
	kept := e.create(s, "kept", true)
	removeKilledBetweenCommits(t, s, "gone")
	kf := s.keyringBackendForTest().files()
	if !fileExists(kf.path(gone.ID)) {
		t.Fatal("the removed key's secrets should be left for the sweep")
	}
	// The old layout's entry of a key removed before it was ever read.
	if err := e.kr.Set(keyringService, gone.ID, `{"client_secret":"x"}`); err != nil {
		t.Fatal(err)
	}
	s2 := e.open(Options{Backend: BackendKeyring})
	stamp := filepath.Join(e.stateDir, sweepStampName)
	old := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(stamp, old, old); err != nil {
		t.Fatal(err)
	}
	s2.Sweep()
	if _, err := e.kr.Get(keyringService, gone.ID); !errors.Is(err, ErrNotFound) || fileExists(kf.path(gone.ID)) {
		t.Errorf("the sweep left the removed key's secrets (%v)", err)
	}
	if !fileExists(kf.path(kept.ID)) {
		t.Error("the sweep took the kept key's secrets")
	}
	if _, err := s2.Token(context.Background(), "kept", TokenOptions{}); err != nil {
		t.Errorf("kept key after the sweep: %v", err)
	}
	if err := s2.view(func(tx *tx) error {
		if b := tx.bucket(bucketRemoved); b != nil && b.Stats().KeyN != 0 {
			t.Errorf("the sweep kept %d removed records", b.Stats().KeyN)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
