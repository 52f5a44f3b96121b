package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/optest"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/unlock"
)

// clock is a settable clock shared by the server, the auth client and the
// store, so expiry is exact without sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeKeyring is an in-memory Keyring that counts its calls.
type fakeKeyring struct {
	mu    sync.Mutex
	m     map[string]string
	calls atomic.Int64
}

var _ Keyring = (*fakeKeyring)(nil)

func newFakeKeyring() *fakeKeyring { return &fakeKeyring{m: map[string]string{}} }

func (f *fakeKeyring) Get(service, user string) (string, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[service+"/"+user]
	if !ok {
		return "", ErrNotFound
	}
	return v, nil
}

func (f *fakeKeyring) Set(service, user, secret string) error {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[service+"/"+user] = secret
	return nil
}

func (f *fakeKeyring) Delete(service, user string) error {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[service+"/"+user]; !ok {
		return ErrNotFound
	}
	delete(f.m, service+"/"+user)
	return nil
}

func (f *fakeKeyring) values() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var vs []string
	for _, v := range f.m {
		vs = append(vs, v)
	}
	return vs
}

// hangKeyring never answers until the test ends.
type hangKeyring struct{ release chan struct{} }

func newHangKeyring(t *testing.T) *hangKeyring {
	h := &hangKeyring{release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	return h
}

func (h *hangKeyring) Get(string, string) (string, error) {
	<-h.release
	return "", errors.New("released")
}
func (h *hangKeyring) Set(string, string, string) error { <-h.release; return errors.New("released") }
func (h *hangKeyring) Delete(string, string) error      { <-h.release; return errors.New("released") }

// failKeyring fails like go-keyring without a session bus.
type failKeyring struct{}

var errNoDBus = errors.New(`exec: "dbus-launch": executable file not found in $PATH`)

func (failKeyring) Get(string, string) (string, error) { return "", errNoDBus }
func (failKeyring) Set(string, string, string) error   { return errNoDBus }
func (failKeyring) Delete(string, string) error        { return errNoDBus }

// syncBuffer is a bytes.Buffer safe for a writer goroutine and the test's
// reads at once.
type syncBuffer = optest.LockedBuffer

const testClientSecret = authtest.DemoClientSecret

// env is one test's world: a realm, a clock, store directories, a keyring.
type env struct {
	t        *testing.T
	srv      *authtest.Server
	clk      *clock
	client   *auth.Client
	cfgDir   string
	stateDir string
	kr       *fakeKeyring
	warn     *syncBuffer

	mu      sync.Mutex
	secrets map[string]bool // every secret seen: must never be on disk in plaintext
}

func newEnv(t *testing.T, mod func(*authtest.Config)) *env {
	t.Helper()
	// TestMain cleared shipkey's variables, so a parallel test finds none set;
	// a test that set one (and so runs alone) has it cleared here.
	for _, v := range shipkeyEnv {
		if os.Getenv(v) != "" {
			t.Setenv(v, "")
		}
	}
	clk := newClock()
	cfg := authtest.DemoConfig()
	cfg.AccessTTL = 5 * time.Minute
	cfg.RefreshTTL = 30 * time.Minute
	cfg.Now = clk.Now
	if mod != nil {
		mod(&cfg)
	}
	srv := authtest.NewServer(cfg)
	t.Cleanup(srv.Close)
	client, err := auth.NewClient(auth.Options{Now: clk.Now, Timeout: 10 * time.Second, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Cleanup(func() {
		// Leave no cached identity in the user's kernel keyring.
		keyPath := filepath.Join(dir, "state", "shipkey", secretsKeyFileName)
		if data, err := os.ReadFile(keyPath); err == nil {
			unlock.KernelForget(identityCacheDesc(keyPath, data))
		}
	})
	e := &env{
		t: t, srv: srv, clk: clk, client: client,
		cfgDir:   filepath.Join(dir, "config", "shipkey"),
		stateDir: filepath.Join(dir, "state", "shipkey"),
		kr:       newFakeKeyring(),
		warn:     &syncBuffer{},
		secrets:  map[string]bool{authtest.DemoPassword: true, testClientSecret: true},
	}
	return e
}

// open opens a store on the env's directories; zero fields of opts take the
// env's clock, auth client, warn buffer and fake keyring, and backend
// "keyring".
func (e *env) open(opts Options) *Store {
	e.t.Helper()
	s, err := e.tryOpen(opts)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return s
}

func (e *env) tryOpen(opts Options) (*Store, error) {
	if opts.ConfigDir == "" {
		opts.ConfigDir = e.cfgDir
	}
	if opts.StateDir == "" {
		opts.StateDir = e.stateDir
	}
	if opts.Backend == "" {
		opts.Backend = BackendKeyring
	}
	if opts.Keyring == nil {
		opts.Keyring = e.kr
	}
	if opts.Auth == nil {
		opts.Auth = e.client
	}
	if opts.Now == nil {
		opts.Now = e.clk.Now
	}
	if opts.Warn == nil {
		opts.Warn = e.warn
	}
	s, err := Open(opts)
	if err == nil {
		e.t.Cleanup(func() { _ = s.Close() })
		fastScrypt(s)
	}
	return s, err
}

func (e *env) conn() auth.Connection {
	return auth.Connection{AuthURL: e.srv.URL(), ClientID: authtest.DemoClientID}
}

func (e *env) newKey(label string, remember bool) NewKey {
	return NewKey{Label: label, Definition: Definition{Connection: e.conn(), Username: authtest.DemoUsername, RememberPassword: remember}, ClientSecret: testClientSecret, Password: authtest.DemoPassword}
}

// create makes a key and checks the disk afterwards.
func (e *env) create(s *Store, label string, remember bool) Key {
	e.t.Helper()
	k, _, err := s.Create(context.Background(), e.newKey(label, remember))
	if err != nil {
		e.t.Fatalf("Create(%q): %v", label, err)
	}
	e.check(s)
	return k
}

// token calls Token and records the secrets it saw.
func (e *env) token(s *Store, label string) *auth.TokenSet {
	e.t.Helper()
	ts, err := s.Token(context.Background(), label, TokenOptions{MarkUsed: true})
	if err != nil {
		e.t.Fatalf("Token(%q): %v", label, err)
	}
	e.remember(ts)
	e.check(s)
	return ts
}

func (e *env) remember(ts *auth.TokenSet) {
	if ts == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range []string{ts.AccessToken, ts.RefreshToken, ts.IDToken} {
		if v != "" {
			e.secrets[v] = true
		}
	}
}

// harvest collects every secret the store and the fake keyring hold now.
func (e *env) harvest(s *Store) {
	e.t.Helper()
	keys, err := s.Keys()
	if err != nil {
		return // a corrupted-file test: nothing to harvest through the store
	}
	for _, k := range keys {
		ent, ks, err := s.find(k.Label)
		if err != nil {
			continue
		}
		if sec, err := s.getSecrets(k.Label, ent.ID, ks); err == nil {
			e.mu.Lock()
			for _, v := range []string{sec.ClientSecret, sec.Password, sec.AccessToken, sec.RefreshToken, sec.IDToken} {
				if v != "" {
					e.secrets[v] = true
				}
			}
			e.mu.Unlock()
			for _, raw := range sec.Derived {
				var d derivedToken
				if json.Unmarshal(raw, &d) == nil {
					e.remember(&d.Token)
				}
			}
		}
	}
	for _, raw := range e.keyringHeld(s) {
		var ks keySecrets
		if json.Unmarshal([]byte(raw), &ks) == nil {
			e.remember(&auth.TokenSet{AccessToken: ks.AccessToken, RefreshToken: ks.RefreshToken, IDToken: ks.IDToken})
		}
	}
}

// check walks the config and state directories and fails when any file holds
// a password, client secret or token in plaintext, or has loose permissions.
func (e *env) check(s *Store) {
	e.t.Helper()
	if s != nil && s.choice != BackendPlaintext {
		e.harvest(s)
	}
	e.mu.Lock()
	secrets := make([]string, 0, len(e.secrets))
	for v := range e.secrets {
		secrets = append(secrets, v)
	}
	e.mu.Unlock()
	for _, root := range []string{e.cfgDir, e.stateDir} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if d.IsDir() {
				if info.Mode().Perm() != dirPerm {
					e.t.Errorf("%s: mode %v, want 0700", path, info.Mode().Perm())
				}
				return nil
			}
			if info.Mode().Perm() != filePerm {
				e.t.Errorf("%s: mode %v, want 0600", path, info.Mode().Perm())
			}
			if filepath.Base(filepath.Dir(path)) == plaintextDirName && !isTempName(filepath.Base(path)) {
				return nil // the plaintext backend, chosen explicitly
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, sec := range secrets {
				if bytes.Contains(data, []byte(sec)) {
					e.t.Errorf("%s holds a secret in plaintext (%s)", path, text.Mask(sec))
				}
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// noSecretIn fails when err's message holds any secret seen so far.
func (e *env) noSecretIn(err error) {
	e.t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	e.mu.Lock()
	defer e.mu.Unlock()
	for sec := range e.secrets {
		if strings.Contains(msg, sec) {
			e.t.Errorf("error message holds a secret (%s): %s", text.Mask(sec), text.Mask(msg))
		}
	}
	if strings.ContainsAny(msg, "\n\x1b") {
		t := e.t
		t.Errorf("error message is not one safe line: %q", msg)
	}
}

func mustKey(t *testing.T, s *Store, label string) Key {
	t.Helper()
	k, err := s.Key(label)
	if err != nil {
		t.Fatalf("Key(%q): %v", label, err)
	}
	return k
}

// fastScrypt makes a new secrets.key.age cheap to wrap (work factor 10, not
// 18): tests would otherwise spend seconds in scrypt. Reading one wrapped at
// any factor works as for users.
func fastScrypt(s *Store) {
	if fb := s.fileBackend(); fb != nil {
		fb.scryptWorkFactor = 10
	}
}

func (s *Store) keyringBackendForTest() *keyringBackend {
	return s.backends[BackendKeyring].(*keyringBackend)
}

// keyringHeld is what the keyring backend of s holds beside its store key:
// each key's record in keyring.d (decrypted JSON) and every other entry of
// the env's fake keyring.
func (e *env) keyringHeld(s *Store) []string {
	e.t.Helper()
	kb := s.keyringBackendForTest()
	name, err := kb.entryName()
	if err != nil {
		e.t.Fatal(err)
	}
	var held []string
	e.kr.mu.Lock()
	for k, v := range e.kr.m {
		if k != keyringService+"/"+name {
			held = append(held, v)
		}
	}
	e.kr.mu.Unlock()
	names, _ := filepath.Glob(filepath.Join(kb.dataPath(), "*.age"))
	if len(names) == 0 {
		return held
	}
	ident, err := kb.unlock(false)
	if err != nil || ident == nil {
		e.t.Fatalf("the keyring store key: %v", err)
	}
	for _, p := range names {
		data, err := os.ReadFile(p)
		if err != nil {
			e.t.Fatal(err)
		}
		plain, err := ageDecrypt(p, data, ident, BackendKeyring, kb.keyHome())
		if err != nil {
			e.t.Fatal(err)
		}
		held = append(held, string(plain))
	}
	return held
}
