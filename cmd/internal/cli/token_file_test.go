package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
)

// A key whose refresh token expires before its access token: the renewal
// finds only a login helps (the store marks the key logged out, keeping
// the access token), and the token file keeps that access token until it
// expires, then goes, each said once; a logout proper removes it at once.
func TestTokenFileRefreshTokenDiesFirst(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	cfg := authtest.DemoConfig()
	cfg.AccessTTL, cfg.RefreshTTL, cfg.Now = 10*time.Minute, time.Minute, now
	st, _, _ := sinkTestStore(t, cfg, now, "k", "out")
	ctx := context.Background()
	svc := newKeys(st, nil, nil, nil, now, nil)
	dir := t.TempDir()
	var said []string
	say := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	sinks := newSinks(st, svc, []sinkSpec{{Path: filepath.Join(dir, "k"), Label: "k"}, {Path: filepath.Join(dir, "out"), Label: "out"}}, say)
	for _, s := range sinks {
		s.now = now
		if wait := s.step(ctx); wait <= 0 || s.written == nil {
			t.Fatalf("first step: wait %v, written %v; said %q", wait, s.written != nil, said)
		}
	}
	k, out := sinks[0], sinks[1]
	exists := func(s *tokenSink) bool { _, err := os.Lstat(s.Path); return !errors.Is(err, fs.ErrNotExist) }

	// 8 minutes on: k's access token is due (2 of 10 minutes left), its
	// refresh token dead for 7.
	offset.Store(int64(8 * time.Minute))
	first := k.written.AccessToken
	for range 2 { // the renewal, then the store's change it caused
		if wait := k.step(ctx); wait <= 0 || wait > 2*time.Minute {
			t.Fatalf("after the failed renewal: wait %v, want the time to the expiry; said %q", wait, said)
		}
	}
	if data, err := os.ReadFile(k.Path); err != nil || string(data) != first {
		t.Fatalf("the token on file went while valid: %v; said %q", err, said)
	}
	if key, err := st.Key("k"); err != nil || !key.LoggedOut {
		t.Fatalf("the store did not find a login needed: %+v, %v", key, err)
	}

	// A logout proper of the other key: gone at once.
	if _, err := st.Logout(ctx, "out"); err != nil {
		t.Fatal(err)
	}
	if out.step(ctx); exists(out) {
		t.Fatalf("the logged out key's file is still there; said %q", said)
	}

	// Past the expiry: k's file goes too.
	offset.Store(int64(10*time.Minute + time.Second))
	k.step(ctx)
	if exists(k) {
		t.Fatalf("the expired token's file is still there; said %q", said)
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{
		"renewing key k's token failed: ", "the token on file stays until it expires at",
		"removed: key out was logged out",
		"removed: key k's token expired and could not be renewed",
	} {
		if strings.Count(all, want) != 1 {
			t.Errorf("said %d times, want once: %q; said:\n%s", strings.Count(all, want), want, all)
		}
	}
}

// The token files hear of every change of the store's files (another
// process's logout), each receiver once per change pending.
func TestWatchStoreFilesTellsEachReceiver(t *testing.T) {
	t.Parallel()
	st, _ := testStore(t, time.Now)
	svc := newKeys(st, nil, nil, nil, time.Now, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := watchStoreFiles(ctx, svc, 2)
	if err := st.SetAPIURL("demo", "https://api.example.com"); err != nil {
		t.Fatal(err)
	}
	for i, c := range changed {
		select {
		case <-c:
		case <-time.After(patience(10 * time.Second)):
			t.Fatalf("receiver %d was not told of the change", i)
		}
	}
}

// A token file's entry in the audit trail names the process that keeps
// the file (serve, exec), not the one that started it: serve's parent (a
// shell, systemd) never sees the token.
func TestTokenFileEntryNamesTheKeeper(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	cfg := authtest.DemoConfig()
	cfg.Now = now
	st, _, _ := sinkTestStore(t, cfg, now, "k")
	ctx := context.Background()
	svc := newKeys(st, nil, nil, nil, now, nil)
	if svc.Audit() == nil {
		t.Skip("the audit trail is off (" + EnvAudit + "=off)")
	}
	path := filepath.Join(t.TempDir(), "token")
	var said []string
	s := newSinks(st, svc, []sinkSpec{{Path: path, Label: "k"}}, func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) })[0]
	s.now = now
	if s.step(ctx); s.written == nil {
		t.Fatal("no token written")
	}
	// The file's directory goes while the key renews: each try to write
	// the new token fails, and the trail takes it once, not at every try.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	offset.Store(int64(time.Minute))
	if _, err := svc.KeyToken(ctx, mustKey(t, st, "k"), keys.TokenOptions{Force: true, Quiet: true}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.step(ctx)
	}
	var got []audit.Entry
	if err := svc.Audit().Read(func(e audit.Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Via != "token file "+path || got[0].To.PID != os.Getpid() || got[1].Fingerprint == got[0].Fingerprint {
		t.Fatalf("entries %+v; want two (the first token, the renewed one once), via the token file, to pid %d (this process)", got, os.Getpid())
	}
	// Said once that the file went, then once as a failure to write (the
	// renewal worked), and not that a token stays on file.
	if len(said) != 2 || !strings.Contains(said[0], "removed or replaced by another program") ||
		!strings.Contains(said[1], "writing key k's token failed") || strings.Contains(said[1], "stays") {
		t.Fatalf("said %q; want a line on the file gone, then one on the failed write", said)
	}
}

func mustKey(t *testing.T, st *store.Store, label string) store.Key {
	t.Helper()
	k, err := st.Key(label)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A serve killed between writing a token file's temporary file and
// renaming it leaves the temporary file, a token in it: the next serve of
// that file removes it, and leaves alone a fresh one (another serve's,
// about to be renamed).
func TestTokenFileStaleTemporaryRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "token")
	stale, fresh := filepath.Join(dir, ".token.tmp-1"), filepath.Join(dir, ".token.tmp-2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("a-token"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := checkSinkPath(path); err != nil {
		t.Skipf("the test's directory does not do for a token file: %v", err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("the fresh temporary file went: %v", err)
	}
}

// A token file in shipkey's own directories would replace the store's
// files (its state, its secrets, its configuration) with a token: refused
// in one line, through a link to them too.
func TestSinkRefusesTheStoreDirectories(t *testing.T) {
	t.Parallel()
	st, configDir, stateDir := sinkTestStore(t, authtest.DemoConfig(), time.Now, "k")
	svc := newKeys(st, nil, nil, nil, time.Now, nil)
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(stateDir, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(stateDir, "state.db"), filepath.Join(configDir, "config.toml"), filepath.Join(link, "secrets.key.age")} {
		_, err := checkSinks([]string{path + ":k"}, svc)
		if err == nil || !strings.Contains(err.Error(), "shipkey's own directory") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--sink %s:k: %v, want one line refusing it", path, err)
		}
	}
	if _, err := checkSinks([]string{filepath.Join(t.TempDir(), "token") + ":k"}, svc); err != nil {
		t.Errorf("a token file elsewhere: %v", err)
	}
}

// A token file at the socket's path would replace the socket: refused.
func TestSinkNotAtTheSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "token.sock")
	if err := sinkNotSocket([]sinkSpec{{Path: sock, Label: "k"}}, sock); err == nil || exitCode(err) != exitUsage {
		t.Errorf("a token file at the socket: %v, want a usage error", err)
	}
	if err := sinkNotSocket([]sinkSpec{{Path: filepath.Join(dir, "token"), Label: "k"}}, sock); err != nil {
		t.Errorf("a token file beside the socket: %v", err)
	}
}

// sinkTestStore is a store (secrets in memory) on a realm of cfg, with a
// key of the demo user for each label; it returns the store and its
// configuration and state directories.
func sinkTestStore(t *testing.T, cfg authtest.Config, now func() time.Time, labels ...string) (st *store.Store, configDir, stateDir string) {
	t.Helper()
	srv := authtest.NewServer(cfg)
	t.Cleanup(srv.Close)
	client, err := auth.NewClient(auth.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	configDir, stateDir = t.TempDir(), t.TempDir()
	st, err = store.Open(store.Options{ConfigDir: configDir, StateDir: stateDir, Backend: "memory", Auth: client, Now: now, Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, label := range labels {
		def := store.Definition{Connection: auth.Connection{AuthURL: srv.URL(), ClientID: authtest.DemoClientID}, Username: authtest.DemoUsername}
		if _, _, err := st.Create(context.Background(), store.NewKey{Label: label, Definition: def, ClientSecret: authtest.DemoClientSecret, Password: authtest.DemoPassword}); err != nil {
			t.Fatal(err)
		}
	}
	return st, configDir, stateDir
}
