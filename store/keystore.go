package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adrg/xdg"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// MaxLabelLen is the longest label, in runes.
const MaxLabelLen = 64

// Store is an opened shipkey store. Safe for concurrent use by goroutines;
// other processes are kept in step by file locks.
type Store struct {
	configDir, stateDir string
	choice              string // configured backend name, "auto" included
	// choiceFromEnv: SHIPKEY_SECRETS chose the backend, and config.toml
	// names none (or auto): the first key created records it there, so
	// the next call without the variable finds the secrets.
	choiceFromEnv bool
	auth          *auth.Client
	now           func() time.Time
	warn          io.Writer

	backends     map[string]secretsBackend // by name, made from backendTable
	probeTimeout time.Duration

	mu          sync.Mutex     // guards resolved, fallbackWhy and the settings cache
	resolved    secretsBackend // the auto choice, once probed
	fallbackWhy string         // why auto fell back to the file, when it did
	settingsFP  string         // fingerprint of the config.toml settings came from
	settings    Settings       // as last read; the fallback of Settings

	// restoreChecked: this Store looked once, with its backend unlocked,
	// for state records a rebuild could not restore (finishRestore).
	restoreChecked atomic.Bool

	readOnce  atomic.Bool // Options.ReadOnce, until EndReadOnce
	walkChunk int         // keys a walk reads at once; 0: walkChunk (tests set fewer)
	// walkTemp makes a walk's temporary file; nil: walkTempFile.
	walkTemp func() (*os.File, error)
	// walkReads, when set (tests), counts how a walk reads state.db.
	walkReads *walkReads
	hold      readHold // state.db kept open between reads (readonce.go)

	stampCache stampCache // Stamp's last answer (stamp.go)

	hooks hooks // Options.hooks

	handedOut handedOut // tokens handed out, while following the session (handedout.go)
}

// fallbackWarned remembers, per state directory, that the auto backend's
// fallback was announced in this process.
var fallbackWarned sync.Map

// autoNoteFile, in the state directory, holds the backend the auto choice
// last announced: the choice is said once per store, not on every call.
const autoNoteFile = "auto-backend"

// warnFallback says plainly, once per store (remembered in autoNoteFile),
// that auto keeps secrets in the encrypted files, why, and how to pin that
// choice. Scripts that call shipkey token in a loop get a clean stderr from
// the second call on.
func (s *Store) warnFallback() {
	s.mu.Lock()
	why := s.fallbackWhy
	s.mu.Unlock()
	if why == "" {
		return
	}
	if _, done := fallbackWarned.LoadOrStore(s.stateDir, true); done {
		return
	}
	note := filepath.Join(s.stateDir, autoNoteFile)
	if data, err := os.ReadFile(note); err == nil && strings.TrimSpace(string(data)) == BackendFile {
		return
	}
	fmt.Fprintf(s.warn, "shipkey: no OS keyring available (%s); the auto backend keeps secrets in the encrypted files in %s; "+
		"to choose it without this check, set %s=%s (or secrets = %q in config.toml). Said once.\n",
		why, displayPath(s.fileBackend().dataPath()), EnvSecrets, BackendFile, BackendFile)
	if ensureDir(s.stateDir) == nil {
		_ = writeFileAtomic(note, []byte(BackendFile+"\n"))
	}
}

// Open opens the store at the configured directories. It reads the
// settings (through state.db's index of config.toml: a corrupted config is
// an error naming it; nothing is written but the index) and touches neither
// the secrets backend nor the network: a keyring probe or passphrase prompt
// happens only when a secret is first needed. A store of the one-file
// layout (state.json) is migrated here, once.
func Open(opts Options) (*Store, error) {
	s, err := newStore(opts)
	if err != nil {
		return nil, err
	}
	if err := s.checkOwner(); err != nil {
		return nil, err
	}
	// The choice made outside config.toml is known before the settings are
	// read (a rebuild of state.db then may read the secrets).
	s.choice = s.outsideChoice(opts.Backend)
	set, err := s.readSettings()
	if err != nil {
		return nil, err
	}
	if err := s.choose(opts.Backend, set); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore is the store of opts' directories with its backends, nothing
// read yet.
func newStore(opts Options) (*Store, error) {
	configDir, err := resolveDir(opts.ConfigDir, EnvConfigDir, xdg.ConfigHome)
	if err != nil {
		return nil, err
	}
	stateDir, err := resolveDir(opts.StateDir, EnvStateDir, xdg.StateHome)
	if err != nil {
		return nil, err
	}
	s := &Store{
		configDir:    configDir,
		stateDir:     stateDir,
		auth:         opts.Auth,
		now:          opts.Now,
		warn:         opts.Warn,
		probeTimeout: keyringProbeTimeout,
		hooks:        opts.hooks,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.warn == nil {
		s.warn = os.Stderr
	}
	env := backendEnv{stateDir: stateDir, opts: opts, warn: s.warn}
	s.backends = make(map[string]secretsBackend, len(backendTable))
	for _, row := range backendTable {
		s.backends[row.name] = row.open(env)
	}
	s.fileBackend().session = newSession(s, opts.Unlock)
	s.readOnce.Store(opts.ReadOnce)
	if s.readOnce.Load() {
		s.fileBackend().beforeWait = s.hold.drop
	}
	return s, nil
}

// outsideChoice is the backend chosen outside config.toml (backend, else
// the environment's), "" when none or one not known (checked by choose).
func (s *Store) outsideChoice(backend string) string {
	choice := backend
	if choice == "" {
		choice = os.Getenv(EnvSecrets)
	}
	if s.backends[choice] == nil && choice != BackendAuto {
		return ""
	}
	return choice
}

// choose sets the secrets backend: backend (an option), else the
// environment's, else config.toml's setting (set); an unknown name is an
// error.
func (s *Store) choose(backend string, set Settings) error {
	choice := backend
	switch {
	case choice != "":
		if !userBackend(choice) && s.backends[choice] == nil {
			return text.Errorf("unknown secrets backend %q; use %s", text.Sanitize(choice), userBackendNames())
		}
	case os.Getenv(EnvSecrets) != "":
		choice = os.Getenv(EnvSecrets)
		if !userBackend(choice) {
			return text.Errorf("%s=%q is not a secrets backend; use %s", EnvSecrets, text.Sanitize(choice), userBackendNames())
		}
		s.choiceFromEnv = choice != BackendAuto && (set.Secrets == "" || set.Secrets == BackendAuto)
	default:
		choice = set.Secrets // "auto" unless config.toml says otherwise
	}
	s.choice = choice
	return nil
}

func resolveDir(opt, env, base string) (string, error) {
	dir := opt
	if dir == "" {
		dir = os.Getenv(env)
	}
	if dir == "" {
		if base == "" {
			return "", fmt.Errorf("cannot tell where to keep shipkey's files; set %s", env)
		}
		dir = filepath.Join(base, "shipkey")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", text.Errorf("%s: %w", dir, err)
	}
	return abs, nil
}

// fileBackend is the age file backend of this store.
func (s *Store) fileBackend() *fileBackend {
	fb, _ := s.backends[BackendFile].(*fileBackend)
	return fb
}

// Close releases what Open took: the store identities (file and keyring)
// are forgotten.
func (s *Store) Close() error {
	s.hold.drop()
	if fb := s.fileBackend(); fb != nil {
		fb.mu.Lock()
		fb.identity = nil
		fb.mu.Unlock()
	}
	if kb, ok := s.backends[BackendKeyring].(*keyringBackend); ok {
		kb.mu.Lock()
		kb.identity = nil
		kb.mu.Unlock()
	}
	return nil
}

// Backend names the secrets backend in use ("keyring", "file", "plaintext",
// "memory"). For "auto" it probes the keyring once, falling back to "file".
func (s *Store) Backend() string { return s.backend().Name() }

// backend resolves the configured choice to a backend; "auto" tries
// autoOrder once per Store (see warnFallback for when a fallback is said).
func (s *Store) backend() secretsBackend {
	if b, ok := s.backends[s.choice]; ok {
		return b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resolved != nil {
		return s.resolved
	}
	for i, name := range autoOrder {
		b := s.backends[name]
		p, ok := b.(prober)
		if i == len(autoOrder)-1 || !ok {
			s.resolved = b
			break
		}
		if err := p.probe(s.probeTimeout); err != nil {
			s.fallbackWhy = fallbackReason(err)
			continue
		}
		s.resolved = b
		break
	}
	return s.resolved
}

func fallbackReason(err error) string {
	var be *BackendError
	if errors.As(err, &be) && be.Err != nil && !errors.Is(be.Err, errKeyringTimeout) {
		return text.Safe(be.Err.Error())
	}
	return text.Safe(err.Error())
}

// holder is the backend that holds a key's secrets: the one named in its
// state, else the one in use.
func (s *Store) holder(ks keyState) secretsBackend {
	if b, ok := s.backends[ks.Secrets]; ok {
		return b
	}
	return s.backend()
}

// prepare resolves the backend and, for the file backend, unwraps its
// identity (the passphrase prompt and the slow derivation) before any lock is
// taken, so no lock is ever held across a prompt; then a store of the
// one-file layout has its secrets moved into per-key files.
func (s *Store) prepare() (secretsBackend, error) {
	b := s.backend()
	if fb, ok := b.(*fileBackend); ok {
		if _, err := fb.unlock(); err != nil {
			return nil, err
		}
	}
	if !s.restoreChecked.Swap(true) {
		if err := s.finishRestore(context.Background()); err != nil {
			s.restoreChecked.Store(false)
			return nil, err
		}
	}
	if err := s.migrateSecrets(context.Background(), b); err != nil {
		return nil, err
	}
	if b.Name() == BackendFile {
		s.warnFallback()
	}
	return b, nil
}

// freshFileBackend says whether secrets go to a file backend that has no
// key file and no secrets yet: unlocking it would create it.
func (s *Store) freshFileBackend() bool {
	fb, ok := s.backend().(*fileBackend)
	if !ok {
		return false
	}
	fb.mu.Lock()
	unlocked := fb.identity != nil
	fb.mu.Unlock()
	if unlocked {
		return false
	}
	for _, p := range []string{fb.keyPath(), fb.dataPath(), fb.legacyPath()} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

// Unlock resolves the secrets backend and unlocks it now: the file backend's
// passphrase is asked for (and derived) here, and a fallback from the keyring
// is said here. The interactive app calls it before it takes the terminal, so
// no prompt or warning ever lands on its screen.
func (s *Store) Unlock() error {
	if _, err := s.prepare(); err != nil {
		return err
	}
	s.warnFallback()
	return nil
}

// getSecrets reads a key's secrets from the backend that holds them.
func (s *Store) getSecrets(label, id string, ks keyState) (keySecrets, error) {
	b := s.holder(ks)
	sec, ok, err := b.Get(id)
	if err != nil {
		return keySecrets{}, err
	}
	if !ok {
		return keySecrets{}, &keyError{
			msg:  fmt.Sprintf("key %s: its secrets are missing from the %s backend; remove it (shipkey keys rm %s) and add it again", quoteLabel(label), b.Name(), text.ShellQuote(label)),
			kind: ErrSecretsMissing,
		}
	}
	return sec, nil
}

// putSecrets writes a key's secrets to the backend in use and records the
// backend's name in ks; when they lived in another backend before, that
// copy is deleted.
func (s *Store) putSecrets(id string, ks *keyState, sec keySecrets) error {
	b := s.backend()
	sec.bind(id, *ks)
	if err := b.Set(id, sec); err != nil {
		return err
	}
	if ks.Secrets != b.Name() && b.Name() == BackendFile {
		s.warnFallback()
	}
	if ks.Secrets != "" && ks.Secrets != b.Name() {
		if old, ok := s.backends[ks.Secrets]; ok {
			_ = old.Delete(id) // best effort: the new copy is in place
		}
	}
	ks.Secrets = b.Name()
	return nil
}

func (s *Store) configPath() string { return configPath(s.configDir) }
func (s *Store) lockPath() string   { return filepath.Join(s.stateDir, lockFileName) }
func (s *Store) refreshLockPath(id string) string {
	return filepath.Join(s.stateDir, id+".refresh.lock")
}

// secretDirs are the directories of per-key secret files.
func (s *Store) secretDirs() []string {
	var dirs []string
	for _, row := range backendTable {
		if d, ok := s.backends[row.name].(interface{ dataPath() string }); ok {
			dirs = append(dirs, d.dataPath())
		}
	}
	return dirs
}

func makeKey(e keyEntry, ks keyState, def string) Key {
	k := Key{
		ID:         e.ID,
		Label:      e.Label,
		Definition: e.Definition,
		CreatedAt:  e.CreatedAt,
		Default:    def != "" && def == e.Label,
	}
	k.setState(ks)
	return k
}

// setState fills in what the key's state record says.
func (k *Key) setState(ks keyState) {
	k.LastUsed = ks.LastUsed
	k.Token = ks.Token.Redacted()
	k.Masked = ks.Masked
	k.LoggedOut = ks.LoggedOut
	k.EndPending = ks.EndPending
	k.Secrets = ks.Secrets
	k.HasRefreshToken = !ks.NoRefresh && !ks.Token.ObtainedAt.IsZero()
}

// Keys lists every key, sorted by label, with fresh metadata. It reads
// state.db's index (in label order) and never the secrets backend.
func (s *Store) Keys() ([]Key, error) {
	var keys []Key
	err := s.view(func(t *tx) (err error) {
		keys, err = t.keys()
		return err
	})
	return keys, err
}

// Key returns the key labelled label (ErrNotFound).
func (s *Store) Key(label string) (Key, error) {
	return s.keyWhere(label, func(t *tx) (keyEntry, bool, error) { return t.byLabel(label) })
}

func (s *Store) keyByID(id, label string) (Key, error) {
	return s.keyWhere(label, func(t *tx) (keyEntry, bool, error) { return t.byID(id) })
}

// keyWhere returns the key that find picks in one read transaction; label
// names it in the not-found error.
func (s *Store) keyWhere(label string, find func(*tx) (keyEntry, bool, error)) (Key, error) {
	var k Key
	err := s.view(func(t *tx) error {
		e, ok, err := find(t)
		if err != nil {
			return err
		}
		if !ok {
			return notFoundError(label)
		}
		k, err = t.key(e, t.defaultLabel())
		return err
	})
	return k, err
}

// find returns the entry and state of the key labelled label.
func (s *Store) find(label string) (e keyEntry, ks keyState, err error) {
	err = s.view(func(t *tx) error {
		var ok bool
		if e, ok, err = t.byLabel(label); err != nil {
			return err
		} else if !ok {
			return notFoundError(label)
		}
		ks, err = t.state(e.ID)
		return err
	})
	return e, ks, err
}

// findID is find by ID, for re-reads under a lock (a rename may have
// happened meanwhile; label is only for the message).
func (s *Store) findID(id, label string) (e keyEntry, ks keyState, err error) {
	err = s.view(func(t *tx) error {
		var ok bool
		if e, ok, err = t.byID(id); err != nil {
			return err
		} else if !ok {
			return notFoundError(label)
		}
		ks, err = t.state(e.ID)
		return err
	})
	return e, ks, err
}

// Resolve picks a key: label if given, else SHIPKEY_KEY, else the default key,
// else the only key (ErrNoKeys, ErrAmbiguous).
func (s *Store) Resolve(label string) (Key, error) {
	if label != "" {
		return s.Key(label)
	}
	if env := os.Getenv(EnvKey); env != "" {
		k, err := s.Key(env)
		if errors.Is(err, ErrNotFound) {
			return Key{}, &keyError{
				msg:  fmt.Sprintf("%s names no key labelled %s; see: shipkey keys list", EnvKey, quoteLabel(env)),
				kind: ErrNotFound,
			}
		}
		return k, err
	}
	var k Key
	err := s.view(func(t *tx) error {
		def := t.defaultLabel()
		if def != "" {
			e, ok, err := t.byLabel(def)
			if err != nil {
				return err
			}
			if ok {
				k, err = t.key(e, def)
				return err
			}
		}
		switch t.count(2) {
		case 0:
			return &keyError{msg: "no API keys yet; get one: shipkey keys new", kind: ErrNoKeys}
		case 1:
			keys, err := t.keys()
			if err == nil {
				k = keys[0]
			}
			return err
		}
		return &keyError{
			msg:  "several keys and no default; name one (see: shipkey keys list) or choose a default: shipkey keys default <label>",
			kind: ErrAmbiguous,
		}
	})
	return k, err
}

// check validates nk and puts it in the form it is stored in: the
// connection normalized, the password grant stored as no grant, no client
// secret for a method without one, and only the user and password its
// grant takes.
func (nk *NewKey) check() error {
	// A pasted realm URL (…/auth/realms/NAME/…) is split into auth URL and
	// realm before anything is checked or sent.
	conn, err := nk.Connection.Normalize()
	if err != nil {
		return err
	}
	nk.Connection = conn
	if err := nk.Connection.Validate(); err != nil {
		return err
	}
	if _, err := auth.GrantFor(nk.Grant); err != nil {
		return err
	}
	if nk.Grant == auth.GrantPassword {
		nk.Grant = "" // stored as before grants existed: config.toml unchanged
	}
	if nk.CallbackPort < 0 || nk.CallbackPort > 65535 {
		return fmt.Errorf("the callback port %d is not a TCP port (1-65535, or 0 for any)", nk.CallbackPort)
	}
	if nk.APIURL, err = CheckAPIURL(nk.APIURL); err != nil {
		return err
	}
	if !nk.Connection.AuthMethod().UsesSecret() {
		nk.ClientSecret = ""
	}
	if err := CheckAssertionSources(&nk.Definition); err != nil {
		return err
	}
	return nk.checkUser()
}

// checkUser asks the password grant for a username and a password; the
// others keep no password, and a username only as the person who must sign
// in.
func (nk *NewKey) checkUser() error {
	if nk.Grant.Or() == auth.GrantPassword {
		if strings.TrimSpace(nk.Username) == "" {
			return errors.New("the username is empty; pass the user registered for the client")
		}
		if nk.Password == "" {
			return errors.New("the password is empty")
		}
		return nil
	}
	// The interactive grants keep a username as the person who must
	// sign in (a sign-in by anyone else is refused, now and at every
	// login); client credentials has no person.
	if nk.Grant == auth.GrantClientCredentials || nk.Grant == auth.GrantJWTBearer {
		nk.Username = ""
	}
	nk.Username = strings.TrimSpace(nk.Username)
	nk.Password, nk.RememberPassword = "", false
	return nil
}

// saveNew stores the new key id under label with its secrets and tokens,
// unless another process took the label since; when that fails, the
// secrets written are deleted and the session the grant opened is ended.
func (s *Store) saveNew(ctx context.Context, id, label string, nk *NewKey, sec *keySecrets, ts *auth.TokenSet) error {
	wroteSecrets := false
	err := s.update(ctx, func(t *tx) error {
		if _, taken, err := t.byLabel(label); err != nil {
			return err
		} else if taken {
			return labelTakenError(label)
		}
		var ks keyState
		ks.setToken(ts)
		if err := s.putSecrets(id, &ks, *sec); err != nil {
			return err
		}
		wroteSecrets = true
		if err := t.putState(id, ks); err != nil {
			return err
		}
		if err := t.addKeys(keyEntry{ID: id, Label: label, Definition: nk.Definition, CreatedAt: s.now().UTC().Truncate(time.Second)}); err != nil {
			return err
		}
		return t.recordEnvBackend()
	})
	if err != nil {
		if wroteSecrets {
			_ = s.backend().Delete(id)
		}
		// End the session the grant opened; nothing refers to it.
		_, _ = s.auth.EndSession(context.WithoutCancel(ctx), nk.Connection, sec.authOf(nk.Definition), ts)
	}
	return err
}

// backendBeforeGrant unlocks the secrets backend before the grant: a
// locked backend must not cost a server session. A file backend that does
// not exist yet is made after the grant instead (fresh): a typo'd URL must
// neither cost a new passphrase (asked twice, derived) nor leave a key file
// behind.
func (s *Store) backendBeforeGrant() (fresh bool, err error) {
	if s.freshFileBackend() {
		return true, nil
	}
	b, err := s.prepare()
	if err != nil {
		return false, err
	}
	if kb, ok := b.(*keyringBackend); ok && s.choice == BackendKeyring {
		if err := kb.probe(kb.timeout); err != nil {
			return false, err
		}
	}
	return false, nil
}

// Create is "Get API Key": it validates, runs the key's grant (nk.Grant;
// an interactive one tells nk.Prompt what the person must do and waits until
// ctx is cancelled), and stores the key with its secrets and tokens. It
// returns the key and the token set it now holds. Nothing is stored when the
// grant fails or is cancelled.
func (s *Store) Create(ctx context.Context, nk NewKey) (Key, *auth.TokenSet, error) {
	if s.auth == nil {
		return Key{}, nil, errNoAuth
	}
	label, err := cleanLabel(nk.Label)
	if err != nil {
		return Key{}, nil, err
	}
	if err := nk.check(); err != nil {
		return Key{}, nil, err
	}
	if _, err := s.Key(label); err == nil {
		return Key{}, nil, labelTakenError(label)
	} else if !errors.Is(err, ErrNotFound) {
		return Key{}, nil, err
	}
	fresh, err := s.backendBeforeGrant()
	if err != nil {
		return Key{}, nil, err
	}
	sec := keySecrets{ClientSecret: nk.ClientSecret}
	if err := sec.addHardening(&nk); err != nil {
		return Key{}, nil, err
	}
	ts, err := s.auth.Obtain(ctx, nk.Grant, auth.Request{
		Conn: nk.Connection, ClientAuth: sec.authOf(nk.Definition), Username: nk.Username, Password: nk.Password,
		CallbackPort: nk.CallbackPort, Prompt: nk.Prompt, Wait: nk.Wait, Assertion: nk.GrantAssertion(),
	})
	if err != nil {
		return Key{}, nil, err
	}
	if fresh {
		if _, err := s.prepare(); err != nil {
			// No passphrase, no key: end the session the grant opened.
			_, _ = s.auth.EndSession(context.WithoutCancel(ctx), nk.Connection, sec.authOf(nk.Definition), ts)
			return Key{}, nil, err
		}
	}
	id, err := newID()
	if err != nil {
		return Key{}, nil, err
	}
	nk.Connection = s.learned(nk.Connection)
	if nk.RememberPassword {
		sec.Password = nk.Password
	}
	sec.setTokens(ts)
	if err := s.saveNew(ctx, id, label, &nk, &sec, ts); err != nil {
		return Key{}, nil, err
	}
	k, err := s.keyByID(id, label)
	if err != nil {
		return Key{}, nil, err
	}
	return k, ts, nil
}

// Login gets a new token set for an existing key by running its grant: the
// password grant with opts.Password (empty: the remembered one,
// ErrLoginNeeded when there is none); an interactive grant tells
// opts.Prompt what the person must do and waits until ctx is cancelled. It
// returns the key and the token set it now holds.
func (s *Store) Login(ctx context.Context, label string, opts LoginOptions) (Key, *auth.TokenSet, error) {
	if s.auth == nil {
		return Key{}, nil, errNoAuth
	}
	if _, err := s.prepare(); err != nil {
		return Key{}, nil, err
	}
	e, _, err := s.find(label)
	if err != nil {
		return Key{}, nil, err
	}
	lk, err := acquireLock(ctx, s.refreshLockPath(e.ID))
	if err != nil {
		return Key{}, nil, err
	}
	defer lk.release()
	e, ks, err := s.findID(e.ID, label)
	if err != nil {
		return Key{}, nil, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return Key{}, nil, err
	}
	if err := s.endPending(ctx, e, ks, sec); err != nil {
		return Key{}, nil, err
	}
	req, err := e.loginRequest(sec, opts)
	if err != nil {
		return Key{}, nil, err
	}
	ts, err := s.auth.Obtain(ctx, e.Grant, req)
	if err != nil {
		return Key{}, nil, err
	}
	if opts.Password != "" && e.RememberPassword {
		sec.Password = opts.Password
	}
	sec.Derived = nil // a new session: tokens derived from the old one go
	if err := s.persist(ctx, e, ts, sec, false); err != nil {
		return Key{}, nil, err
	}
	k, err := s.keyByID(e.ID, label)
	if err != nil {
		return Key{}, nil, err
	}
	return k, ts, nil
}

// endPending ends the session a logout left pending (ks.EndPending) before
// its tokens are replaced, unless the server refused for good (a key left
// pending before that was told apart): asking again would block the key for
// ever.
func (s *Store) endPending(ctx context.Context, e keyEntry, ks keyState, sec keySecrets) error {
	if ks.EndPending.IsZero() {
		return nil
	}
	if _, err := s.endSession(ctx, e, ks, sec); err != nil && !auth.IsFinalRefusal(err) {
		return &EndPendingError{Label: e.Label, Err: err}
	}
	return nil
}

// loginRequest is the request of a login to the key: its grant's request
// with opts' prompt, wait and password (or the one remembered, which the
// password grant needs).
func (e keyEntry) loginRequest(sec keySecrets, opts LoginOptions) (auth.Request, error) {
	req := e.request(sec)
	req.Prompt, req.Wait = opts.Prompt, opts.Wait
	if e.Grant.Or() != auth.GrantPassword {
		return req, nil
	}
	if opts.Password != "" {
		req.Password = opts.Password
	}
	if req.Password == "" {
		return auth.Request{}, &LoginNeededError{Label: e.Label, Why: "no password is remembered for it"}
	}
	return req, nil
}

// request is what the key's grant may use, from its definition and secrets.
func (e keyEntry) request(sec keySecrets) auth.Request {
	return auth.Request{
		Conn: e.Connection, ClientAuth: sec.authOf(e.Definition),
		Username: e.Username, Password: sec.Password, CallbackPort: e.CallbackPort,
		Assertion: e.GrantAssertion(),
	}
}

// learned is conn with the client authentication the auth client found to
// work when conn chose none (HTTP Basic after the form body was refused).
func (s *Store) learned(conn auth.Connection) auth.Connection {
	if conn.AuthMethod() == "" {
		conn.ClientAuth = s.auth.LearnedClientAuth(conn)
	}
	return conn
}

// rememberClientAuth stores with key e the client authentication learned
// for it, so the next process goes straight to it. It is best effort: a key
// that keeps no method still works, one refusal slower.
func (s *Store) rememberClientAuth(ctx context.Context, e keyEntry) {
	conn := s.learned(e.Connection)
	if conn.ClientAuth == e.ClientAuth {
		return
	}
	_ = s.update(context.WithoutCancel(ctx), func(t *tx) error {
		cfg, err := t.config()
		if err != nil {
			return err
		}
		i, ok := cfg.byID(e.ID)
		if !ok || cfg.Keys[i].AuthMethod() != "" {
			return nil
		}
		cfg.Keys[i].ClientAuth = conn.ClientAuth
		t.cfgDirty = true
		return t.putEntry(cfg.Keys[i])
	})
}

// persist stores a new token set for key e (its secrets and metadata) in one
// state.db transaction; the new refresh token replaces the old one.
func (s *Store) persist(ctx context.Context, e keyEntry, ts *auth.TokenSet, sec keySecrets, markUsed bool) error {
	sec.setTokens(ts)
	defer s.rememberClientAuth(ctx, e)
	return s.write(context.WithoutCancel(ctx), func(t *tx) error {
		if _, ok, err := t.byID(e.ID); err != nil {
			return err
		} else if !ok {
			return notFoundError(e.Label)
		}
		ks, err := t.state(e.ID)
		if err != nil {
			return err
		}
		ks.setToken(ts)
		ks.LoggedOut = false
		ks.EndPending = time.Time{}
		if markUsed {
			ks.LastUsed = s.now()
		}
		if err := s.putSecrets(e.ID, &ks, sec); err != nil {
			return err
		}
		return t.putState(e.ID, ks)
	})
}

// changeState changes the state record of the key with id (label for the
// message) in one state.db transaction; a key gone meanwhile is ErrNotFound.
func (s *Store) changeState(ctx context.Context, id, label string, fn func(ks *keyState) error) error {
	return s.write(context.WithoutCancel(ctx), func(t *tx) error {
		if _, ok, err := t.byID(id); err != nil {
			return err
		} else if !ok {
			return notFoundError(label)
		}
		ks, err := t.state(id)
		if err != nil {
			return err
		}
		if err := fn(&ks); err != nil {
			return err
		}
		return t.putState(id, ks)
	})
}

// SetClientSecret replaces key label's client secret (rotated at the realm);
// its tokens and other secrets stay. The secrets are read and written under
// the store's write lock, so a renewal meanwhile is not undone.
func (s *Store) SetClientSecret(ctx context.Context, label, secret string) error {
	if _, err := s.prepare(); err != nil {
		return err
	}
	e, _, err := s.find(label)
	if err != nil {
		return err
	}
	return s.changeState(ctx, e.ID, e.Label, func(ks *keyState) error {
		sec, err := s.getSecrets(e.Label, e.ID, *ks)
		if err != nil {
			return err
		}
		sec.ClientSecret = secret
		return s.putSecrets(e.ID, ks, sec)
	})
}

// MarkUsed sets the key's Last Used to now (the token was copied or printed).
// It writes that key's state record and nothing else.
func (s *Store) MarkUsed(label string) error {
	e, _, err := s.find(label)
	if err != nil {
		return err
	}
	return s.markUsedID(context.Background(), e)
}

// Logout ends the key's session at the server (auth.Client.EndSession:
// logout, else revocation) and drops its tokens; the key stays. The key is
// logged out whatever the server answered; its refusal, or a failure to
// reach it, is returned beside what it did: a refusal that retrying cannot
// change (auth.IsFinalRefusal) as an *EndRefusedError, the tokens dropped;
// any other with the tokens kept and the end pending (recordEnd).
func (s *Store) Logout(ctx context.Context, label string) (auth.EndResult, error) {
	if _, err := s.prepare(); err != nil {
		return auth.EndResult{}, err
	}
	e, _, err := s.find(label)
	if err != nil {
		return auth.EndResult{}, err
	}
	lk, err := acquireLock(ctx, s.refreshLockPath(e.ID))
	if err != nil {
		return auth.EndResult{}, err
	}
	defer lk.release()
	e, ks, err := s.findID(e.ID, label)
	if err != nil {
		return auth.EndResult{}, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return auth.EndResult{}, err
	}
	res, serverErr := s.endSession(ctx, e, ks, sec)
	if err := s.recordEnd(ctx, e, sec, serverErr); err != nil {
		return res, err
	}
	if auth.IsFinalRefusal(serverErr) {
		return res, &EndRefusedError{Label: e.Label, Err: serverErr}
	}
	return res, serverErr
}

// recordEnd records the outcome of ending key e's session: when the server
// ended it (or said it no longer exists, or refused for good) the tokens
// are dropped; when it refused otherwise or could not be reached they are
// kept, the key is logged out with its end pending, and the next logout
// (or keys rm) tries again.
func (s *Store) recordEnd(ctx context.Context, e keyEntry, sec keySecrets, serverErr error) error {
	retry := serverErr != nil && !auth.IsFinalRefusal(serverErr)
	return s.changeState(ctx, e.ID, e.Label, func(ks *keyState) error {
		ks.LoggedOut = true
		if retry && (sec.RefreshToken != "" || sec.AccessToken != "") {
			if ks.EndPending.IsZero() {
				ks.EndPending = s.now()
			}
		} else {
			sec.setTokens(nil)
			ks.setToken(nil)
			ks.EndPending = time.Time{}
		}
		return s.putSecrets(e.ID, ks, sec)
	})
}

// EndPendingError: the key's session could not be ended at the server and
// its end is pending (its tokens are kept for the retry).
type EndPendingError struct {
	Label string
	Err   error // the server's refusal or the network failure
}

func (e *EndPendingError) Error() string {
	return fmt.Sprintf("ending the session of key %s at the server is pending (%v): run shipkey logout %s to try again",
		quoteLabel(e.Label), e.Err, text.ShellQuote(e.Label))
}

func (e *EndPendingError) Unwrap() error { return e.Err }

// EndRefusedError: the server refused to end the key's session in a way
// that asking again cannot change (auth.IsFinalRefusal). The key is logged
// out here, its tokens dropped and nothing left pending; the session at the
// server may stay live until its tokens expire.
type EndRefusedError struct {
	Label string
	Err   error // the server's refusal, in its words
}

func (e *EndRefusedError) Error() string {
	return fmt.Sprintf("API key %s is logged out here (its tokens are dropped and nothing is pending), but its session was not ended at the server: %v",
		quoteLabel(e.Label), e.Err)
}

func (e *EndRefusedError) Unwrap() error { return e.Err }

// endSession ends the key's session at the server when it has tokens.
func (s *Store) endSession(ctx context.Context, e keyEntry, ks keyState, sec keySecrets) (auth.EndResult, error) {
	if s.auth == nil || (ks.LoggedOut && ks.EndPending.IsZero()) || (sec.RefreshToken == "" && sec.AccessToken == "") {
		return auth.EndResult{}, nil
	}
	return s.auth.EndSession(ctx, e.Connection, sec.authOf(e.Definition), mergeToken(ks.Token, sec))
}

// Remove ends the key's session at the server (as Logout does), then deletes
// the key and its secrets. The key is removed whatever the server answered;
// its refusal is returned beside what it did. When the backend holding the
// secrets is gone (ErrBackendMissing) the key is removed anyway and a warning
// says so; a locked backend is an error and nothing is removed.
//
// Its secrets and state go first, in one transaction; then its [[keys]]
// table: a crash in between leaves the key listed without secrets (remove
// it again), never a config.toml that lacks keys whose state is kept.
func (s *Store) Remove(ctx context.Context, label string) (auth.EndResult, error) {
	return s.RemoveWith(ctx, label, RemoveOptions{})
}

// removeCommitted, when set (by tests), runs between Remove's two commits:
// where a kill -9 is the worst.
var removeCommitted func()

// RemoveOptions change what Remove does.
type RemoveOptions struct {
	// Force removes the key even when its session could not be ended at the
	// server (its tokens then stay valid there until they expire). Without
	// it such a key is kept, logged out with its end pending, and the error
	// is an *EndPendingError beside the server's; a refusal that retrying
	// cannot change (auth.IsFinalRefusal) removes the key as Force does.
	Force bool
}

// RemoveWith is Remove with options.
func (s *Store) RemoveWith(ctx context.Context, label string, opts RemoveOptions) (auth.EndResult, error) {
	e, ks, err := s.find(label)
	if err != nil {
		return auth.EndResult{}, err
	}
	b := s.holder(ks)
	if err := s.openHolder(ctx, b); err != nil {
		return auth.EndResult{}, err
	}
	var res auth.EndResult
	var serverErr error
	if sec, ok, err := b.Get(e.ID); err == nil && ok {
		res, serverErr = s.endSession(ctx, e, ks, sec)
		if serverErr != nil && !opts.Force && !auth.IsFinalRefusal(serverErr) {
			if err := s.recordEnd(ctx, e, sec, serverErr); err != nil {
				return res, err
			}
			return res, &EndPendingError{Label: e.Label, Err: serverErr}
		}
	}
	// The definition goes first, committed: a kill after it leaves secrets
	// no key names, which the sweep takes (sweepOrphans), never a key listed
	// without its secrets.
	ctx = context.WithoutCancel(ctx)
	if err := s.removeDefinition(ctx, e.ID, label, b); err != nil {
		return res, err
	}
	if removeCommitted != nil {
		removeCommitted()
	}
	if err := s.removeSecrets(ctx, e.ID, label, b); err != nil {
		return res, err
	}
	_ = removeFile(s.refreshLockPath(e.ID))
	return res, serverErr
}

// openHolder readies b, the backend that holds a key's secrets, to read and
// delete them: the file backend unlocked when it has a file, secrets of an
// older layout moved.
func (s *Store) openHolder(ctx context.Context, b secretsBackend) error {
	if fb, ok := b.(*fileBackend); ok && (fileExists(fb.dataPath()) || fileExists(fb.legacyPath())) {
		if _, err := fb.unlock(); err != nil {
			return err
		}
	}
	return s.migrateSecrets(ctx, b)
}

// removeDefinition removes key id (label) from the index and config.toml,
// noting that its secrets in b are to go.
func (s *Store) removeDefinition(ctx context.Context, id, label string, b secretsBackend) error {
	return s.update(ctx, func(t *tx) error {
		if _, ok, err := t.byID(id); err != nil {
			return err
		} else if !ok {
			return notFoundError(label)
		}
		if err := t.removeKey(id); err != nil {
			return err
		}
		return t.markRemoved(id, b.Name())
	})
}

// removeSecrets deletes key id's secrets from b (a backend gone is said,
// not an error) and then its state.
func (s *Store) removeSecrets(ctx context.Context, id, label string, b secretsBackend) error {
	return s.update(ctx, func(t *tx) error {
		if err := b.Delete(id); err != nil {
			if !errors.Is(err, ErrBackendMissing) {
				return err
			}
			fmt.Fprintf(s.warn, "shipkey: warning: the secrets of key %s could not be deleted from the %s backend: %v\n",
				quoteLabel(label), b.Name(), err)
		}
		if err := t.clearRemoved(id); err != nil {
			return err
		}
		return t.deleteState(id)
	})
}

// Rename changes a key's label (ErrLabelTaken). The ID, and so the secrets,
// stay.
func (s *Store) Rename(label, newLabel string) error {
	nl, err := cleanLabel(newLabel)
	if err != nil {
		return err
	}
	err = s.update(context.Background(), func(t *tx) error {
		e, ok, err := t.byLabel(label)
		if err != nil {
			return err
		}
		if !ok {
			return notFoundError(label)
		}
		if nl == label {
			return nil
		}
		if _, taken, err := t.byLabel(nl); err != nil {
			return err
		} else if taken {
			return labelTakenError(nl)
		}
		return t.renameKey(e.ID, nl)
	})
	if err == nil && nl != label {
		s.Requests().rename(label, nl) // the Request screen's history follows the label
	}
	return err
}

// SetDefault makes label the default key.
func (s *Store) SetDefault(label string) error {
	return s.update(context.Background(), func(t *tx) error {
		if _, ok, err := t.byLabel(label); err != nil {
			return err
		} else if !ok {
			return notFoundError(label)
		}
		return t.setDefault(label)
	})
}

// Connections lists the distinct connections of all keys: the issuers whose
// signatures shipkey may verify. It is empty when the store cannot be read.
func (s *Store) Connections() []auth.Connection {
	var conns []auth.Connection
	_ = s.view(func(t *tx) error {
		b := t.bucket(bucketEntries)
		if b == nil {
			return nil
		}
		seen := map[string]bool{}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			e, err := t.ed.decode(v)
			if err != nil {
				continue
			}
			id, _ := json.Marshal(e.Connection)
			if seen[string(id)] {
				continue
			}
			seen[string(id)] = true
			conns = append(conns, e.Connection)
		}
		return nil
	})
	return conns
}

// ClientSecret returns a key's client secret (for liveness checks).
func (s *Store) ClientSecret(label string) (string, error) {
	_, sec, err := s.entrySecrets(label)
	if err != nil {
		return "", err
	}
	return sec.ClientSecret, nil
}

// Settings returns the preferences of config.toml as it is now. They are
// cached by the file's fingerprint: a call costs a stat unless the file
// changed. When it cannot be read now, the last settings read are returned.
func (s *Store) Settings() Settings {
	set, err := s.readSettings()
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.settings
	}
	return set
}

func (s *Store) readSettings() (Settings, error) {
	var fp string
	var err error
	if s.readOnce.Load() {
		// The fingerprint of the read held (readonce.go); none yet: the
		// view below reads config.toml's once and holds it.
		fp = s.hold.fingerprint()
	} else if fp, err = configFingerprint(s.configPath()); err != nil {
		return Settings{}, err
	}
	s.mu.Lock()
	if fp != "" && s.settingsFP == fp {
		set := s.settings
		s.mu.Unlock()
		return set, nil
	}
	s.mu.Unlock()
	var set Settings
	err = s.view(func(t *tx) error {
		if t.btx == nil {
			set = newConfigFile().settings()
		} else {
			set = t.settings()
		}
		return nil
	})
	if err != nil {
		return Settings{}, err
	}
	if s.readOnce.Load() {
		fp = s.hold.fingerprint()
	}
	s.mu.Lock()
	s.settingsFP, s.settings = fp, set
	s.mu.Unlock()
	return set, nil
}

// Paths returns the config and state directories in use.
func (s *Store) Paths() (configDir, stateDir string) { return s.configDir, s.stateDir }
