package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	auth                *auth.Client
	now                 func() time.Time
	warn                io.Writer

	keyring      *keyringBackend
	file         *fileBackend
	plain        *plaintextBackend
	mem          *memoryBackend
	probeTimeout time.Duration

	mu          sync.Mutex     // guards resolved and fallbackWhy
	resolved    secretsBackend // the auto choice, once probed
	fallbackWhy string         // why auto fell back to the file, when it did
	settings    Settings       // as read by Open, the fallback of Settings
}

// fallbackWarned remembers, per state directory, that the auto backend's
// fallback was announced: at most once per process.
var fallbackWarned sync.Map

// warnFallback says plainly, once per process, that auto keeps secrets in the
// encrypted file and why. It is said when a secret is written there because of
// the fallback (a new key, or one moving from the keyring), not on every read:
// scripts that call shipkey token in a loop get a clean stderr.
func (s *Store) warnFallback() {
	s.mu.Lock()
	why := s.fallbackWhy
	s.mu.Unlock()
	if why == "" {
		return
	}
	if _, done := fallbackWarned.LoadOrStore(s.stateDir, true); !done {
		fmt.Fprintf(s.warn, "shipkey: no OS keyring available (%s); keeping secrets in the encrypted file %s\n",
			why, displayPath(s.file.dataPath()))
	}
}

// Open opens the store at the configured directories. It reads config.toml
// (a corrupted file is an error naming it; nothing is written) but touches
// neither the secrets backend nor the network: a keyring probe or passphrase
// prompt happens only when a secret is first needed.
func Open(opts Options) (*Store, error) {
	configDir, err := resolveDir(opts.ConfigDir, EnvConfigDir, xdg.ConfigHome)
	if err != nil {
		return nil, err
	}
	stateDir, err := resolveDir(opts.StateDir, EnvStateDir, xdg.StateHome)
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(configPath(configDir))
	if err != nil {
		return nil, err
	}
	choice := opts.Backend
	switch {
	case choice != "":
		if !userBackend(choice) && choice != BackendMemory {
			return nil, fmt.Errorf("unknown secrets backend %q; use auto, keyring, file or plaintext", text.Safe(choice))
		}
	case os.Getenv(EnvSecrets) != "":
		choice = os.Getenv(EnvSecrets)
		if !userBackend(choice) {
			return nil, fmt.Errorf("%s=%q is not a secrets backend; use auto, keyring, file or plaintext", EnvSecrets, text.Safe(choice))
		}
	case cfg.Secrets != "":
		choice = cfg.Secrets
	default:
		choice = BackendAuto
	}
	s := &Store{
		configDir:    configDir,
		stateDir:     stateDir,
		choice:       choice,
		auth:         opts.Auth,
		now:          opts.Now,
		warn:         opts.Warn,
		probeTimeout: keyringProbeTimeout,
		settings:     cfg.settings(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.warn == nil {
		s.warn = os.Stderr
	}
	kr := opts.Keyring
	if kr == nil {
		kr = osKeyring{}
	}
	s.keyring = &keyringBackend{kr: kr, timeout: keyringTimeout}
	s.file = &fileBackend{dir: stateDir, passphrase: opts.Passphrase}
	s.file.session = newSession(s, opts.Unlock)
	s.plain = &plaintextBackend{dir: stateDir, warn: s.warn}
	s.mem = &memoryBackend{}
	return s, nil
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
		return "", fmt.Errorf("%s: %w", text.Safe(dir), err)
	}
	return abs, nil
}

// Close releases what Open took: the unwrapped file identity is forgotten.
func (s *Store) Close() error {
	s.file.mu.Lock()
	s.file.identity = nil
	s.file.mu.Unlock()
	return nil
}

// Backend names the secrets backend in use ("keyring", "file", "plaintext",
// "memory"). For "auto" it probes the keyring once, falling back to "file".
func (s *Store) Backend() string { return s.backend().Name() }

// backend resolves the configured choice to a backend; "auto" probes the
// keyring once per Store and falls back to the encrypted file (see
// warnFallback for when that is said).
func (s *Store) backend() secretsBackend {
	switch s.choice {
	case BackendKeyring:
		return s.keyring
	case BackendFile:
		return s.file
	case BackendPlaintext:
		return s.plain
	case BackendMemory:
		return s.mem
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resolved != nil {
		return s.resolved
	}
	if err := s.keyring.probe(s.probeTimeout); err != nil {
		s.fallbackWhy = fallbackReason(err)
		s.resolved = s.file
	} else {
		s.resolved = s.keyring
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

func (s *Store) backendByName(name string) secretsBackend {
	switch name {
	case BackendKeyring:
		return s.keyring
	case BackendFile:
		return s.file
	case BackendPlaintext:
		return s.plain
	case BackendMemory:
		return s.mem
	}
	return nil
}

// prepare resolves the backend and, for the file backend, unwraps its
// identity (the passphrase prompt and the slow derivation) before any lock is
// taken, so no lock is ever held across a prompt.
func (s *Store) prepare() (secretsBackend, error) {
	b := s.backend()
	if fb, ok := b.(*fileBackend); ok {
		if _, err := fb.unlock(); err != nil {
			return nil, err
		}
	}
	return b, nil
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
	b := s.backend()
	if ks.Secrets != "" && ks.Secrets != b.Name() {
		if old := s.backendByName(ks.Secrets); old != nil {
			b = old
		}
	}
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

// putSecrets writes a key's secrets to the backend in use (caller holds
// store.lock) and records the backend's name in ks; when they lived in
// another backend before, that copy is deleted.
func (s *Store) putSecrets(id string, ks *keyState, sec keySecrets) error {
	b := s.backend()
	if err := b.Set(id, sec); err != nil {
		return err
	}
	if ks.Secrets != b.Name() && b == secretsBackend(s.file) {
		s.warnFallback()
	}
	if ks.Secrets != "" && ks.Secrets != b.Name() {
		if old := s.backendByName(ks.Secrets); old != nil {
			_ = old.Delete(id) // best effort: the new copy is in place
		}
	}
	ks.Secrets = b.Name()
	return nil
}

func (s *Store) configPath() string { return configPath(s.configDir) }
func (s *Store) statePath() string  { return statePath(s.stateDir) }
func (s *Store) lockPath() string   { return filepath.Join(s.stateDir, lockFileName) }
func (s *Store) refreshLockPath(id string) string {
	return filepath.Join(s.stateDir, id+".refresh.lock")
}

// load reads config.toml and state.json as they are now (no lock: both are
// replaced atomically, so a reader sees a whole file).
func (s *Store) load() (*configFile, *stateFile, error) {
	cfg, err := loadConfig(s.configPath())
	if err != nil {
		return nil, nil, err
	}
	st, err := loadState(s.statePath())
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// dirty says which files an update changed.
type dirty int

const (
	dirtyState dirty = 1 << iota
	dirtyConfig
)

// update is the read-modify-write of config and state: it takes store.lock
// (bounded by ctx, or defaultLockWait), re-reads both files, lets fn change
// them (and the secrets), and writes what fn reports changed: state first,
// config last, so a key appears only once all of it is in place.
func (s *Store) update(ctx context.Context, fn func(cfg *configFile, st *stateFile) (dirty, error)) error {
	ctx, cancel := lockContext(ctx)
	defer cancel()
	lk, err := acquireLock(ctx, s.lockPath())
	if err != nil {
		return err
	}
	defer lk.release()
	cfg, st, err := s.load()
	if err != nil {
		return err
	}
	d, err := fn(cfg, st)
	if err != nil {
		return err
	}
	if d&dirtyState != 0 {
		if err := saveState(s.statePath(), st); err != nil {
			return err
		}
	}
	if d&dirtyConfig != 0 {
		if err := saveConfig(s.configPath(), cfg); err != nil {
			return err
		}
	}
	return nil
}

func makeKey(cfg *configFile, st *stateFile, e keyEntry) Key {
	ks := st.Keys[e.ID]
	return Key{
		ID:               e.ID,
		Label:            e.Label,
		Conn:             e.Connection,
		Username:         e.Username,
		RememberPassword: e.RememberPassword,
		CreatedAt:        e.CreatedAt,
		LastUsed:         ks.LastUsed,
		Default:          cfg.Default != "" && cfg.Default == e.Label,
		Token:            ks.Token.Redacted(),
		Masked:           ks.Masked,
		LoggedOut:        ks.LoggedOut,
	}
}

// Keys lists every key, sorted by label, with fresh metadata. It reads only
// config.toml and state.json, never the secrets backend.
func (s *Store) Keys() ([]Key, error) {
	cfg, st, err := s.load()
	if err != nil {
		return nil, err
	}
	keys := make([]Key, 0, len(cfg.Keys))
	for _, e := range cfg.Keys {
		keys = append(keys, makeKey(cfg, st, e))
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Label < keys[j].Label })
	return keys, nil
}

// Key returns the key labelled label (ErrNotFound).
func (s *Store) Key(label string) (Key, error) {
	return s.keyWhere(label, func(cfg *configFile) (int, bool) { return cfg.byLabel(label) })
}

// find returns the entry and state of the key labelled label.
func (s *Store) find(label string) (keyEntry, keyState, error) {
	cfg, st, err := s.load()
	if err != nil {
		return keyEntry{}, keyState{}, err
	}
	i, ok := cfg.byLabel(label)
	if !ok {
		return keyEntry{}, keyState{}, notFoundError(label)
	}
	return cfg.Keys[i], st.Keys[cfg.Keys[i].ID], nil
}

// findID is find by ID, for re-reads under a lock (a rename may have
// happened meanwhile; label is only for the message).
func (s *Store) findID(id, label string) (keyEntry, keyState, error) {
	cfg, st, err := s.load()
	if err != nil {
		return keyEntry{}, keyState{}, err
	}
	i, ok := cfg.byID(id)
	if !ok {
		return keyEntry{}, keyState{}, notFoundError(label)
	}
	return cfg.Keys[i], st.Keys[id], nil
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
	keys, err := s.Keys()
	if err != nil {
		return Key{}, err
	}
	if len(keys) == 0 {
		return Key{}, &keyError{msg: "no API keys yet; get one: shipkey keys new", kind: ErrNoKeys}
	}
	for _, k := range keys {
		if k.Default {
			return k, nil
		}
	}
	if len(keys) == 1 {
		return keys[0], nil
	}
	return Key{}, &keyError{
		msg:  "several keys and no default; name one (see: shipkey keys list) or choose a default: shipkey keys default <label>",
		kind: ErrAmbiguous,
	}
}

// Create is "Get API Key": it validates, runs the password grant, and stores
// the key with its secrets and tokens. Nothing is stored when the grant fails.
func (s *Store) Create(ctx context.Context, nk NewKey) (Key, error) {
	if s.auth == nil {
		return Key{}, errNoAuth
	}
	label, err := cleanLabel(nk.Label)
	if err != nil {
		return Key{}, err
	}
	if err := nk.Conn.Validate(); err != nil {
		return Key{}, err
	}
	if strings.TrimSpace(nk.Username) == "" {
		return Key{}, errors.New("the username is empty; pass the user registered for the client")
	}
	if nk.Password == "" {
		return Key{}, errors.New("the password is empty")
	}
	cfg, err := loadConfig(s.configPath())
	if err != nil {
		return Key{}, err
	}
	if _, taken := cfg.byLabel(label); taken {
		return Key{}, labelTakenError(label)
	}
	// Unlock the secrets backend before the grant: a locked backend must not
	// cost a server session.
	b, err := s.prepare()
	if err != nil {
		return Key{}, err
	}
	if kb, ok := b.(*keyringBackend); ok && s.choice == BackendKeyring {
		if err := kb.probe(kb.timeout); err != nil {
			return Key{}, err
		}
	}
	ts, err := s.auth.Login(ctx, nk.Conn, nk.ClientSecret, nk.Username, nk.Password)
	if err != nil {
		return Key{}, err
	}
	id, err := newID()
	if err != nil {
		return Key{}, err
	}
	sec := keySecrets{ClientSecret: nk.ClientSecret}
	if nk.RememberPassword {
		sec.Password = nk.Password
	}
	sec.setTokens(ts)
	wroteSecrets := false
	err = s.update(ctx, func(cfg *configFile, st *stateFile) (dirty, error) {
		if _, taken := cfg.byLabel(label); taken {
			return 0, labelTakenError(label)
		}
		ks := keyState{Token: ts.Redacted(), Masked: text.Mask(ts.AccessToken)}
		if err := s.putSecrets(id, &ks, sec); err != nil {
			return 0, err
		}
		wroteSecrets = true
		st.Keys[id] = ks
		cfg.Keys = append(cfg.Keys, keyEntry{
			ID:               id,
			Label:            label,
			Connection:       nk.Conn,
			Username:         nk.Username,
			RememberPassword: nk.RememberPassword,
			CreatedAt:        s.now().UTC().Truncate(time.Second),
		})
		if len(cfg.Keys) == 1 {
			cfg.Default = label
		}
		return dirtyState | dirtyConfig, nil
	})
	if err != nil {
		if wroteSecrets {
			_ = s.backend().Delete(id)
		}
		// End the session the grant opened; nothing refers to it.
		if ts.RefreshToken != "" {
			_ = s.auth.Logout(context.WithoutCancel(ctx), nk.Conn, nk.ClientSecret, ts.RefreshToken)
		}
		return Key{}, err
	}
	return s.Key(label)
}

// Login gets a new token set for an existing key by the password grant. An
// empty password uses the remembered one (ErrLoginNeeded when there is none).
func (s *Store) Login(ctx context.Context, label, password string) (Key, error) {
	if s.auth == nil {
		return Key{}, errNoAuth
	}
	if _, err := s.prepare(); err != nil {
		return Key{}, err
	}
	e, _, err := s.find(label)
	if err != nil {
		return Key{}, err
	}
	lk, err := acquireLock(ctx, s.refreshLockPath(e.ID))
	if err != nil {
		return Key{}, err
	}
	defer lk.release()
	e, ks, err := s.findID(e.ID, label)
	if err != nil {
		return Key{}, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return Key{}, err
	}
	pw := password
	if pw == "" {
		pw = sec.Password
	}
	if pw == "" {
		return Key{}, &LoginNeededError{Label: e.Label, Why: "no password is remembered for it"}
	}
	ts, err := s.auth.Login(ctx, e.Connection, sec.ClientSecret, e.Username, pw)
	if err != nil {
		return Key{}, err
	}
	if password != "" && e.RememberPassword {
		sec.Password = password
	}
	if err := s.persist(ctx, e, ts, sec, false); err != nil {
		return Key{}, err
	}
	return s.keyByID(e.ID, label)
}

func (s *Store) keyByID(id, label string) (Key, error) {
	return s.keyWhere(label, func(cfg *configFile) (int, bool) { return cfg.byID(id) })
}

// keyWhere loads the files and returns the key that find picks; label names
// it in the not-found error.
func (s *Store) keyWhere(label string, find func(*configFile) (int, bool)) (Key, error) {
	cfg, st, err := s.load()
	if err != nil {
		return Key{}, err
	}
	i, ok := find(cfg)
	if !ok {
		return Key{}, notFoundError(label)
	}
	return makeKey(cfg, st, cfg.Keys[i]), nil
}

// persist stores a new token set for key e (its secrets and metadata) under
// store.lock; the new refresh token replaces the old one.
func (s *Store) persist(ctx context.Context, e keyEntry, ts *auth.TokenSet, sec keySecrets, markUsed bool) error {
	sec.setTokens(ts)
	return s.update(context.WithoutCancel(ctx), func(cfg *configFile, st *stateFile) (dirty, error) {
		if _, ok := cfg.byID(e.ID); !ok {
			return 0, notFoundError(e.Label)
		}
		ks := st.Keys[e.ID]
		if err := s.putSecrets(e.ID, &ks, sec); err != nil {
			return 0, err
		}
		ks.Token = ts.Redacted()
		ks.Masked = text.Mask(ts.AccessToken)
		ks.LoggedOut = false
		if markUsed {
			ks.LastUsed = s.now()
		}
		st.Keys[e.ID] = ks
		return dirtyState, nil
	})
}

// MarkUsed sets the key's Last Used to now (the token was copied or printed).
func (s *Store) MarkUsed(label string) error {
	return s.update(context.Background(), func(cfg *configFile, st *stateFile) (dirty, error) {
		i, ok := cfg.byLabel(label)
		if !ok {
			return 0, notFoundError(label)
		}
		id := cfg.Keys[i].ID
		ks := st.Keys[id]
		ks.LastUsed = s.now()
		st.Keys[id] = ks
		return dirtyState, nil
	})
}

// Logout ends the key's session at the server (auth.Client.EndSession:
// logout, else revocation) and drops its tokens; the key stays. The local
// tokens are dropped whatever the server answered; its refusal, or a failure
// to reach it, is returned beside what it did.
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
	sec.setTokens(nil)
	err = s.update(context.WithoutCancel(ctx), func(cfg *configFile, st *stateFile) (dirty, error) {
		if _, ok := cfg.byID(e.ID); !ok {
			return 0, notFoundError(e.Label)
		}
		ks := st.Keys[e.ID]
		if err := s.putSecrets(e.ID, &ks, sec); err != nil {
			return 0, err
		}
		ks.Token = auth.TokenSet{}
		ks.Masked = ""
		ks.LoggedOut = true
		st.Keys[e.ID] = ks
		return dirtyState, nil
	})
	if err != nil {
		return res, err
	}
	return res, serverErr
}

// endSession ends the key's session at the server when it has tokens.
func (s *Store) endSession(ctx context.Context, e keyEntry, ks keyState, sec keySecrets) (auth.EndResult, error) {
	if s.auth == nil || ks.LoggedOut || (sec.RefreshToken == "" && sec.AccessToken == "") {
		return auth.EndResult{}, nil
	}
	return s.auth.EndSession(ctx, e.Connection, sec.ClientSecret, mergeToken(ks.Token, sec))
}

// Remove ends the key's session at the server (as Logout does), then deletes
// the key and its secrets. The key is removed whatever the server answered;
// its refusal is returned beside what it did. When the backend holding the
// secrets is gone (ErrBackendMissing) the key is removed anyway and a warning
// says so; a locked backend is an error and nothing is removed.
func (s *Store) Remove(ctx context.Context, label string) (auth.EndResult, error) {
	e, ks, err := s.find(label)
	if err != nil {
		return auth.EndResult{}, err
	}
	b := s.backend()
	if ks.Secrets != "" {
		if old := s.backendByName(ks.Secrets); old != nil {
			b = old
		}
	}
	if fb, ok := b.(*fileBackend); ok {
		if _, err := os.Stat(fb.dataPath()); err == nil {
			if _, err := fb.unlock(); err != nil {
				return auth.EndResult{}, err
			}
		}
	}
	var res auth.EndResult
	var serverErr error
	if sec, ok, err := b.Get(e.ID); err == nil && ok {
		res, serverErr = s.endSession(ctx, e, ks, sec)
	}
	err = s.update(context.WithoutCancel(ctx), func(cfg *configFile, st *stateFile) (dirty, error) {
		i, ok := cfg.byID(e.ID)
		if !ok {
			return 0, notFoundError(label)
		}
		if err := b.Delete(e.ID); err != nil {
			if !errors.Is(err, ErrBackendMissing) {
				return 0, err
			}
			fmt.Fprintf(s.warn, "shipkey: warning: the secrets of key %s could not be deleted from the %s backend: %v\n",
				quoteLabel(label), b.Name(), err)
		}
		if cfg.Default == cfg.Keys[i].Label {
			cfg.Default = ""
		}
		cfg.Keys = append(cfg.Keys[:i], cfg.Keys[i+1:]...)
		delete(st.Keys, e.ID)
		return dirtyState | dirtyConfig, nil
	})
	if err != nil {
		return res, err
	}
	_ = removeFile(s.refreshLockPath(e.ID))
	return res, serverErr
}

// Rename changes a key's label (ErrLabelTaken). The ID, and so the secrets,
// stay.
func (s *Store) Rename(label, newLabel string) error {
	nl, err := cleanLabel(newLabel)
	if err != nil {
		return err
	}
	return s.update(context.Background(), func(cfg *configFile, st *stateFile) (dirty, error) {
		i, ok := cfg.byLabel(label)
		if !ok {
			return 0, notFoundError(label)
		}
		if nl == label {
			return 0, nil
		}
		if _, taken := cfg.byLabel(nl); taken {
			return 0, labelTakenError(nl)
		}
		cfg.Keys[i].Label = nl
		if cfg.Default == label {
			cfg.Default = nl
		}
		return dirtyConfig, nil
	})
}

// SetDefault makes label the default key.
func (s *Store) SetDefault(label string) error {
	return s.update(context.Background(), func(cfg *configFile, st *stateFile) (dirty, error) {
		if _, ok := cfg.byLabel(label); !ok {
			return 0, notFoundError(label)
		}
		cfg.Default = label
		return dirtyConfig, nil
	})
}

// Connections lists the distinct connections of all keys: the issuers whose
// signatures shipkey may verify. It is empty when config.toml cannot be read.
func (s *Store) Connections() []auth.Connection {
	cfg, err := loadConfig(s.configPath())
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var conns []auth.Connection
	for _, e := range cfg.Keys {
		id, _ := json.Marshal(e.Connection)
		if seen[string(id)] {
			continue
		}
		seen[string(id)] = true
		conns = append(conns, e.Connection)
	}
	return conns
}

// ClientSecret returns a key's client secret (for liveness checks).
func (s *Store) ClientSecret(label string) (string, error) {
	if _, err := s.prepare(); err != nil {
		return "", err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return "", err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return "", err
	}
	return sec.ClientSecret, nil
}

// Settings returns the preferences, read afresh from config.toml (as read by
// Open when the file cannot be read now).
func (s *Store) Settings() Settings {
	cfg, err := loadConfig(s.configPath())
	if err != nil {
		return s.settings
	}
	return cfg.settings()
}

// Paths returns the config and state directories in use.
func (s *Store) Paths() (configDir, stateDir string) { return s.configDir, s.stateDir }

// --- labels, ids and errors ----------------------------------------------------

var errNoAuth = errors.New("store opened without an auth client: token operations are unavailable")

// cleanLabel trims a label and checks it: non-empty, at most MaxLabelLen
// runes, valid UTF-8, no control or bidi characters.
func cleanLabel(l string) (string, error) {
	l = strings.TrimSpace(l)
	switch {
	case l == "":
		return "", errors.New("the label is empty; choose a name for the key")
	case !utf8.ValidString(l) || text.Safe(l) != l:
		return "", fmt.Errorf("the label %s contains control characters; choose another", quoteLabel(l))
	case utf8.RuneCountInString(l) > MaxLabelLen:
		return "", fmt.Errorf("the label is longer than %d characters; choose a shorter one", MaxLabelLen)
	}
	return l, nil
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// keyError is a sentinel with a message that says what to do.
type keyError struct {
	msg  string
	kind error
}

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return e.kind }

func notFoundError(label string) error {
	return &keyError{msg: fmt.Sprintf("no key labelled %s; see: shipkey keys list", quoteLabel(label)), kind: ErrNotFound}
}

func labelTakenError(label string) error {
	return &keyError{msg: fmt.Sprintf("the label %s is already in use; choose another (see: shipkey keys list)", quoteLabel(label)), kind: ErrLabelTaken}
}

// quoteLabel quotes untrusted label text for a message: Go-quoted, so that
// control characters show as escapes, and sanitized.
func quoteLabel(l string) string { return text.Safe(strconv.Quote(l)) }

// LoginNeededError says that only a new login can give the key a token. It
// matches ErrLoginNeeded and the auth error that showed it (so
// auth.KindOf(err) is auth.KindLoginRequired when the refresh token expired or
// its session ended).
type LoginNeededError struct {
	Label string // the key's label, raw (Error sanitizes it)
	Why   string // short reason, e.g. "the refresh token expired"
	Err   error  // the auth error, or nil
}

func (e *LoginNeededError) Error() string {
	return fmt.Sprintf("key %s: login needed (%s); run: shipkey login %s",
		text.Safe(e.Label), text.Safe(e.Why), text.ShellQuote(e.Label))
}

// Unwrap returns ErrLoginNeeded and the cause.
func (e *LoginNeededError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLoginNeeded}
	}
	return []error{ErrLoginNeeded, e.Err}
}
