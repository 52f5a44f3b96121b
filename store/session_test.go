package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/shipkey/shipkey/store/unlock"
)

// Each Store opened below stands for another process of the same user: they
// share nothing but the files and the session (kernel keyring or agent).

func requireKernel(t *testing.T) {
	t.Helper()
	if !unlock.KernelAvailable() {
		t.Skip("keyctl does not answer here")
	}
}

// unlockedElsewhere opens a store with no passphrase anywhere and reports
// whether it gets the identity, and how many derivations that took.
func unlockedElsewhere(t *testing.T, e *env) (bool, int64) {
	t.Helper()
	t.Setenv(EnvPassphrase, "")
	s := e.open(Options{Backend: BackendFile})
	n0 := scryptUnwraps.Load()
	err := s.Unlock()
	if err != nil && !errors.Is(err, ErrBackendLocked) {
		t.Fatal(err)
	}
	return err == nil, scryptUnwraps.Load() - n0
}

func TestSessionKernelUnlockOnce(t *testing.T) {
	requireKernel(t)
	e := newEnv(t, nil)
	t.Setenv(EnvUnlockMech, MechKernel)
	t.Setenv(EnvPassphrase, "kernel passphrase")
	s := e.open(Options{Backend: BackendFile})
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, n := unlockedElsewhere(t, e); !ok || n != 0 {
		t.Fatalf("another process: unlocked %v with %d derivations, want true with 0", ok, n)
	}
	st, err := e.open(Options{Backend: BackendFile}).Session()
	if err != nil || !st.Unlocked || st.Mechanism != MechKernel || st.Timeout != DefaultUnlockTimeout {
		t.Fatalf("Session = %+v, %v", st, err)
	}

	// Another store of the same user stays unlocked when this one locks.
	other := newEnv(t, nil)
	t.Setenv(EnvPassphrase, "other passphrase")
	if err := other.open(Options{Backend: BackendFile}).Unlock(); err != nil {
		t.Fatal(err)
	}

	if held, err := s.Lock(); err != nil || !held {
		t.Fatalf("Lock = %v, %v", held, err)
	}
	if ok, _ := unlockedElsewhere(t, e); ok {
		t.Fatal("unlocked after Lock")
	}
	if held, _ := s.Lock(); held {
		t.Fatal("a second Lock found something to forget")
	}
	if ok, n := unlockedElsewhere(t, other); !ok || n != 0 {
		t.Fatal("locking one store locked another")
	}
}

// An entry older than the maximum age is not served (and is dropped), however
// recently it was used.
func TestKernelCacheMaxAge(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	desc := "shipkey:test:" + t.Name() + ":" + id.Recipient().String()[4:20]
	if err := unlock.KernelStore(desc, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unlock.KernelForget(desc) })
	if got, ok := unlock.KernelLoad(desc, time.Minute, time.Hour); !ok || got.String() != id.String() {
		t.Fatal("a fresh entry is not served")
	}
	if _, ok := unlock.KernelLoad(desc, time.Minute, time.Nanosecond); ok {
		t.Fatal("an entry past its maximum age is served")
	}
	if unlock.KernelForget(desc) {
		t.Fatal("the entry past its maximum age was not dropped")
	}
}

func TestSessionAgentUnlockOnce(t *testing.T) {
	if !unlock.AgentSupported {
		t.Skip("no agent on this platform")
	}
	e := newEnv(t, nil)
	run := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Setenv(EnvUnlockMech, MechAgent)
	t.Setenv(EnvPassphrase, "agent passphrase")
	s := e.open(Options{Backend: BackendFile})
	sock := s.AgentSocket()
	// Its own directory, not $XDG_RUNTIME_DIR/shipkey that the container
	// recipe of docs/handoff.md mounts for serve's socket.
	if filepath.Dir(sock) != filepath.Join(run, "shipkey-agent") {
		t.Fatalf("socket %s is not in $XDG_RUNTIME_DIR/shipkey-agent", sock)
	}

	// No agent and none can be started (no AgentExe): this process is
	// unlocked, the others are not.
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := unlockedElsewhere(t, e); ok {
		t.Fatal("unlocked elsewhere without an agent")
	}
	if st, _ := s.Session(); st.Unlocked || !strings.Contains(st.Why, "no agent answers") {
		t.Fatalf("Session without an agent = %+v", st)
	}

	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- unlock.ServeAgent(context.Background(), unlock.AgentConfig{Socket: sock, Secret: s.AgentSecret(), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not start")
	}
	fi, err := os.Stat(filepath.Dir(sock))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v, %v", fi.Mode(), err)
	}

	t.Setenv(EnvPassphrase, "agent passphrase")
	if err := e.open(Options{Backend: BackendFile}).Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, n := unlockedElsewhere(t, e); !ok || n != 0 {
		t.Fatalf("another process: unlocked %v with %d derivations, want true with 0", ok, n)
	}
	if held, err := s.Lock(); err != nil || !held {
		t.Fatalf("Lock = %v, %v", held, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not exit on Lock")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket is left behind: %v", err)
	}
	if ok, _ := unlockedElsewhere(t, e); ok {
		t.Fatal("unlocked after Lock")
	}
}

// Stores racing to unlock a fresh file store derive once: the first creates
// and publishes the identity under unlock.lock, the others find it.
func TestSessionDeriveOnce(t *testing.T) {
	requireKernel(t)
	e := newEnv(t, nil)
	t.Setenv(EnvUnlockMech, MechKernel)
	t.Setenv(EnvPassphrase, "race passphrase")
	stores := make([]*Store, 4)
	for i := range stores {
		stores[i] = e.open(Options{Backend: BackendFile})
	}
	n0 := scryptUnwraps.Load()
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Unlock() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := scryptUnwraps.Load() - n0; n != 1 {
		t.Fatalf("%d derivations, want 1", n)
	}
	for _, s := range stores[1:] {
		if s.fileBackend().identity.String() != stores[0].fileBackend().identity.String() {
			t.Fatal("the stores hold different identities")
		}
	}
}

// promptLog records warnings and prompts in the order they happen.
type promptLog struct {
	mu      sync.Mutex
	events  []string
	answers []string
	err     error
}

func (l *promptLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "say: "+string(p))
	return len(p), nil
}

func (l *promptLog) ask(prompt string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "ask: "+prompt)
	if l.err != nil {
		return "", l.err
	}
	if len(l.answers) == 0 {
		return "", errors.New("no more answers")
	}
	a := l.answers[0]
	l.answers = l.answers[1:]
	return a, nil
}

func TestNewPassphraseConfirmed(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv(EnvUnlockMech, MechNone)

	// The reason comes first, then the prompt; a mismatch is said and
	// asked again; the confirmed passphrase is the one that unlocks.
	log := &promptLog{answers: []string{"first", "typo", "", "right", "right"}}
	s := e.open(Options{Backend: BackendAuto, Keyring: failKeyring{}, Passphrase: log.ask, Warn: log})
	if err := s.Unlock(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"say: shipkey: no OS keyring available (",
		"say: shipkey: secrets go to ",
		"ask: New passphrase for ",
		"ask: Repeat the new passphrase: ",
		"say: shipkey: the passphrases do not match; try again",
		"ask: New passphrase for ",
		"say: shipkey: the passphrase is empty; try again",
		"ask: New passphrase for ",
		"ask: Repeat the new passphrase: ",
	}
	if len(log.events) != len(want) {
		t.Fatalf("events:\n%s", strings.Join(log.events, "\n"))
	}
	// The keyring notice is said once, in one wording (Store.warnFallback's).
	if all := strings.Join(log.events, "\n"); strings.Count(all, "keyring") != 1 || !strings.Contains(all, "Said once.") {
		t.Fatalf("the keyring notice is not said once in its one wording:\n%s", all)
	}
	for i, w := range want {
		if !strings.HasPrefix(log.events[i], w) {
			t.Fatalf("event %d = %q, want %q…", i, log.events[i], w)
		}
	}
	if !strings.Contains(log.events[0], "keeps secrets in the encrypted files in "+filepath.Join(e.stateDir, secretsDirName)) ||
		!strings.Contains(log.events[1], "secrets go to "+filepath.Join(e.stateDir, secretsDirName)+", encrypted with a passphrase") {
		t.Fatalf("reason = %q then %q", log.events[0], log.events[1])
	}
	t.Setenv(EnvPassphrase, "right")
	if err := e.open(Options{Backend: BackendFile}).Unlock(); err != nil {
		t.Fatalf("the confirmed passphrase does not unlock: %v", err)
	}

	// Three mismatches: nothing is made.
	e2 := newEnv(t, nil)
	t.Setenv(EnvUnlockMech, MechNone)
	log2 := &promptLog{answers: []string{"a", "b", "c", "d", "e", "f"}}
	err := e2.open(Options{Backend: BackendFile, Passphrase: log2.ask, Warn: log2}).Unlock()
	if !errors.Is(err, ErrBackendLocked) || !strings.Contains(err.Error(), "no secrets file was made: the passphrases do not match (3 tries)") {
		t.Fatalf("three mismatches = %v", err)
	}
	if _, err := os.Stat(filepath.Join(e2.stateDir, secretsKeyFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a key file was made")
	}
}

// An aborted prompt (ctrl+c, ctrl+d) makes nothing and keeps its cause for
// the caller (the exit code).
func TestPromptAbortMakesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	abort := errors.New("interrupted")
	log := &promptLog{err: abort}
	err := e.open(Options{Backend: BackendFile, Passphrase: log.ask, Warn: log}).Unlock()
	if !errors.Is(err, abort) || !errors.Is(err, ErrBackendLocked) || !strings.Contains(err.Error(), "no passphrase was given (interrupted)") {
		t.Fatalf("aborted prompt = %v", err)
	}
	entries, _ := os.ReadDir(e.stateDir)
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), "secrets") || strings.Contains(de.Name(), ".tmp-") {
			t.Fatalf("left behind: %s", de.Name())
		}
	}
}

// Without a terminal the error says what exists and what to set.
func TestNoTerminalMessages(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv(EnvUnlockMech, MechNone)
	err := e.open(Options{Backend: BackendFile}).Unlock()
	want := "no secrets file yet at " + filepath.Join(e.stateDir, secretsKeyFileName) +
		" and no terminal to ask a new passphrase on: set SHIPKEY_PASSPHRASE, or run `shipkey unlock` in a terminal"
	if err == nil || err.Error() != want {
		t.Fatalf("fresh store, no terminal:\n got %v\nwant %s", err, want)
	}
	t.Setenv(EnvPassphrase, "p")
	if err := e.open(Options{Backend: BackendFile}).Unlock(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPassphrase, "")
	err = e.open(Options{Backend: BackendFile}).Unlock()
	if err == nil || !strings.HasPrefix(err.Error(), "the secrets file "+filepath.Join(e.stateDir, secretsKeyFileName)+" is locked and there is no terminal") {
		t.Fatalf("existing store, no terminal: %v", err)
	}
}

func TestUnlockSettingsFromEnv(t *testing.T) {
	for _, c := range []struct {
		timeout, mech string
		idle          time.Duration
		wantMech      string
		bad           string
	}{
		{"", "", DefaultUnlockTimeout, MechAuto, ""},
		{"15m", "agent", 15 * time.Minute, MechAgent, ""},
		{"900", "kernel", 15 * time.Minute, MechKernel, ""},
		{"0", "agent", -1, MechNone, ""},
		{"soon", "", 0, "", EnvUnlockTimeout},
		{"-5m", "", 0, "", EnvUnlockTimeout},
		{"", "keychain", 0, "", EnvUnlockMech},
	} {
		t.Setenv(EnvUnlockTimeout, c.timeout)
		t.Setenv(EnvUnlockMech, c.mech)
		sess := &session{}
		sess.resolve()
		if c.bad != "" {
			if sess.err == nil || !strings.Contains(sess.err.Error(), c.bad) {
				t.Errorf("%q/%q: err = %v, want one naming %s", c.timeout, c.mech, sess.err, c.bad)
			}
			continue
		}
		if sess.err != nil || sess.idle != c.idle || sess.mech != c.wantMech {
			t.Errorf("%q/%q: idle %v mech %s err %v", c.timeout, c.mech, sess.idle, sess.mech, sess.err)
		}
	}
	if got := FormatTimeout(90 * time.Minute); got != "1h30m" {
		t.Errorf("FormatTimeout = %s", got)
	}
	if got := FormatTimeout(10 * time.Minute); got != "10m" {
		t.Errorf("FormatTimeout = %s", got)
	}
}
