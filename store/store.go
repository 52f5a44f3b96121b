// Package store is shipkey's memory: API keys (connection, user, label),
// their secrets, their volatile metadata, and the one token source that hands
// out a key's access token, refreshing it through auth and persisting the
// result, shared by the CLI and the TUI.
//
// Non-secret configuration lives in config.toml under the config directory;
// volatile metadata (last used, token expiries) in state.json under the state
// directory; secrets in a Secrets backend (OS keyring, age-encrypted file, or
// plaintext only when chosen explicitly). Files are 0600, directories 0700;
// writes are atomic and guarded by a file lock.
//
// What it must never do: write a password, client secret or token in plaintext
// (unless the user chose the plaintext backend), put one into an error, or
// let two processes refresh the same key at once.
package store

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// Key is an API key: a labelled credential shipkey keeps. It holds no secret.
type Key struct {
	ID               string          // stable random id; secrets are filed under it, so rename never touches them
	Label            string          // unique, human-chosen
	Conn             auth.Connection // where the realm is and which client
	Username         string
	RememberPassword bool // the password is kept in the secrets backend and used to log in again
	CreatedAt        time.Time
	LastUsed         time.Time // zero: never handed out
	Default          bool      // the configured default key
	// Token is the last token set with its secrets removed (expiries, scope,
	// session_state, not-before-policy). Zero ObtainedAt: no token yet.
	Token auth.TokenSet
	// Masked is the access token masked (auth.Mask): the "API Key" column.
	Masked string
	// LoggedOut is true after logout or when the refresh token is known dead.
	LoggedOut bool
}

// Status is a key's token state at a moment.
type Status int

const (
	StatusNoToken     Status = iota // never logged in, or logged out
	StatusValid                     // access token valid
	StatusRefreshable               // access token expired, refresh token valid
	StatusLoginNeeded               // both expired (or session known ended)
)

// StatusAt tells the key's state at now from its metadata alone (no I/O).
func (k Key) StatusAt(now time.Time) Status {
	switch {
	case k.LoggedOut || k.Token.ObtainedAt.IsZero():
		return StatusNoToken
	case k.Token.AccessExpiry().IsZero() || now.Add(auth.ExpiryMargin).Before(k.Token.AccessExpiry()):
		return StatusValid
	case k.Token.RefreshExpiresAt.IsZero() || now.Add(auth.ExpiryMargin).Before(k.Token.RefreshExpiresAt):
		return StatusRefreshable
	default:
		return StatusLoginNeeded
	}
}

// Errors callers branch on with errors.Is.
var (
	ErrNotFound       = errors.New("no such key")
	ErrLabelTaken     = errors.New("label already in use")
	ErrNoKeys         = errors.New("no API keys yet")
	ErrAmbiguous      = errors.New("several keys and no default")
	ErrLoginNeeded    = errors.New("login needed")
	ErrBackendMissing = errors.New("secret backend unavailable")
	ErrBackendLocked  = errors.New("secret backend locked")
)

// Options configure Open. Zero fields take defaults from the environment.
type Options struct {
	ConfigDir string // default SHIPKEY_CONFIG_DIR, else XDG config dir + /shipkey
	StateDir  string // default SHIPKEY_STATE_DIR, else XDG state dir + /shipkey
	// Backend: "auto", "keyring", "file", "plaintext"; default SHIPKEY_SECRETS,
	// else the config file's secrets setting, else "auto".
	Backend string
	// Passphrase supplies the file backend's passphrase when SHIPKEY_PASSPHRASE
	// is unset (a hidden prompt on a terminal); nil means none can be asked.
	Passphrase func(prompt string) (string, error)
	Keyring    Keyring      // default: the OS keyring (zalando/go-keyring)
	Auth       *auth.Client // required for token operations
	Now        func() time.Time
	Warn       io.Writer // where fallbacks and plaintext warnings are said; nil = os.Stderr
}

// Keyring is the small slice of an OS keyring the store uses; injected so
// tests need no D-Bus.
type Keyring interface {
	Get(service, user string) (string, error)
	Set(service, user, secret string) error
	Delete(service, user string) error
}

// Store is an opened shipkey store. Safe for concurrent use by goroutines;
// other processes are kept in step by file locks.
type Store struct{}

// NewKey is what "Get API Key" takes.
type NewKey struct {
	Label            string
	Conn             auth.Connection
	Username         string
	ClientSecret     string
	Password         string
	RememberPassword bool
}

func Open(opts Options) (*Store, error) { panic("unimplemented") }

// Close releases what Open took.
func (s *Store) Close() error { panic("unimplemented") }

// Backend names the secrets backend in use ("keyring", "file", "plaintext").
func (s *Store) Backend() string { panic("unimplemented") }

// Keys lists every key, sorted by label, with fresh metadata.
func (s *Store) Keys() ([]Key, error) { panic("unimplemented") }

// Key returns the key labelled label (ErrNotFound).
func (s *Store) Key(label string) (Key, error) { panic("unimplemented") }

// Resolve picks a key: label if given, else SHIPKEY_KEY, else the default key,
// else the only key (ErrNoKeys, ErrAmbiguous).
func (s *Store) Resolve(label string) (Key, error) { panic("unimplemented") }

// Create is "Get API Key": it validates, runs the password grant, and stores
// the key with its secrets and tokens. Nothing is stored when the grant fails.
func (s *Store) Create(ctx context.Context, nk NewKey) (Key, error) { panic("unimplemented") }

// Login gets a new token set for an existing key by the password grant. An
// empty password uses the remembered one (ErrLoginNeeded when there is none).
func (s *Store) Login(ctx context.Context, label, password string) (Key, error) {
	panic("unimplemented")
}

// Token hands out the key's access token: the cached one while valid (with
// auth.ExpiryMargin), else a refreshed one (persisted), else a new login with
// the remembered password, else an error wrapping ErrLoginNeeded. At most one
// process refreshes a key at a time; the others wait and use its result. When
// markUsed, Last Used is set to now.
func (s *Store) Token(ctx context.Context, label string, markUsed bool) (*auth.TokenSet, error) {
	panic("unimplemented")
}

// Refresh forces a refresh now (the TUI's "refresh now"), persisting the result.
func (s *Store) Refresh(ctx context.Context, label string) (Key, error) { panic("unimplemented") }

// Current returns the key's stored token set (with secrets) without refreshing
// or marking use: for display and inspection.
func (s *Store) Current(label string) (*auth.TokenSet, error) { panic("unimplemented") }

// MarkUsed sets the key's Last Used to now (the token was copied or printed).
func (s *Store) MarkUsed(label string) error { panic("unimplemented") }

// Logout ends the key's session at the server and drops its tokens; the key
// stays. Local tokens are dropped even when the server refuses; that refusal
// is returned.
func (s *Store) Logout(ctx context.Context, label string) error { panic("unimplemented") }

// Remove deletes the key and its secrets.
func (s *Store) Remove(label string) error { panic("unimplemented") }

// Rename changes a key's label (ErrLabelTaken).
func (s *Store) Rename(label, newLabel string) error { panic("unimplemented") }

// SetDefault makes label the default key.
func (s *Store) SetDefault(label string) error { panic("unimplemented") }

// Connections lists the distinct connections of all keys: the issuers whose
// signatures shipkey may verify.
func (s *Store) Connections() []auth.Connection { panic("unimplemented") }

// ClientSecret returns a key's client secret (for liveness checks).
func (s *Store) ClientSecret(label string) (string, error) { panic("unimplemented") }

// Liveness asks the server whether it still accepts the key's access token.
func (s *Store) Liveness(ctx context.Context, label string) (auth.Liveness, error) {
	panic("unimplemented")
}

// Settings are user preferences from config.toml.
type Settings struct {
	Secrets        string        // backend choice
	ClipboardClear time.Duration // 0 = never; default 30 s
	AutoRefresh    bool          // TUI refresh-ahead default on
}

// Settings returns the preferences.
func (s *Store) Settings() Settings { panic("unimplemented") }

// Paths returns the config and state directories in use.
func (s *Store) Paths() (configDir, stateDir string) { panic("unimplemented") }
