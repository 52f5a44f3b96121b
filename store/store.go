// Package store is shipkey's memory: API keys (connection, user, label),
// their secrets, their volatile metadata, and the one token source that hands
// out a key's access token, refreshing it through auth and persisting the
// result, shared by the CLI and the TUI.
//
// Non-secret configuration lives in config.toml under the config directory;
// volatile metadata (last used, token expiries, the masked token, the
// logged-out flag) in state.json under the state directory; secrets (client
// secret, remembered password, tokens) in a secrets backend: the OS keyring
// (every call bounded by a timeout), an age-encrypted file (secrets.age,
// encrypted to a per-store X25519 identity that the passphrase unwraps once
// per process and that is cached in the Linux kernel keyring for ten
// minutes), plaintext only when chosen explicitly, or process memory for the
// demo. "auto" uses the keyring when it answers and says plainly when it
// falls back to the file. Files are 0600, directories 0700; writes are atomic
// (temporary file, fsync, rename) and every read-modify-write happens under
// the file lock store.lock, re-reading the files once it is held. A corrupted
// config or secret file is reported with its name and is never overwritten;
// state.db is only an index, set aside and rebuilt when damaged (dbcheck.go,
// rebuild.go).
//
// Token hands out a key's access token, refreshing it under a per-key file
// lock (<id>.refresh.lock) so that across processes exactly one refreshes
// and the others use its result; Keycloak's rotated refresh token replaces
// the old one. Nothing assumes which of the access and refresh tokens
// expires first.
//
// What it must never do: write a password, client secret or token in plaintext
// (unless the user chose the plaintext backend), put one into an error, touch
// the secrets backend to list keys, or let two processes refresh the same key
// at once.
package store

import (
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
	Grant            auth.GrantType  // how it obtains tokens; empty is the password grant
	CallbackPort     int             // the authorization code grant's fixed loopback port (0: ephemeral)
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
	// EndPending is when ending its session at the server failed (zero:
	// none pending); logout and keys rm try again.
	EndPending time.Time
	// HasRefreshToken: the stored token set carries a refresh token.
	HasRefreshToken bool
}

// RenewsItself reports whether the key's grant gets a new token with no
// person and no remembered password (client credentials): its expiry is
// nothing to act on.
func (k Key) RenewsItself() bool {
	g, err := auth.GrantFor(k.Grant)
	return err == nil && g.Unattended(auth.Kept{})
}

// Status is a key's token state at a moment.
type Status int

const (
	StatusNoToken      Status = iota // never logged in, or logged out
	StatusValid                      // access token valid
	StatusRefreshable                // access token expired, refresh token valid
	StatusLoginNeeded                // both expired (or session known ended)
	StatusRenewsItself               // access token expired; the grant runs again unasked (client credentials)
)

// StatusAt tells the key's state at now from its metadata alone (no I/O),
// by the lifecycle policy of auth.Expiry: a token is valid until it expires
// (renewal ahead of that is the token source's business, not a state). A key
// without a refresh token is never refreshable; one whose grant renews itself
// needs a person only when its grant was refused (then it is logged out).
func (k Key) StatusAt(now time.Time) Status {
	switch {
	case k.LoggedOut || k.Token.ObtainedAt.IsZero():
		return StatusNoToken
	case !k.Token.Access().Expired(now):
		return StatusValid
	case k.HasRefreshToken && !k.Token.Refresh().Expired(now):
		return StatusRefreshable
	case k.RenewsItself():
		return StatusRenewsItself
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
	// ErrSecretsMissing: the key exists but its secrets backend no longer
	// holds its secrets (an emptied keyring); remove the key and add it again.
	ErrSecretsMissing = errors.New("secrets missing")
)

// Environment variables the store reads.
const (
	EnvConfigDir = "SHIPKEY_CONFIG_DIR"
	EnvStateDir  = "SHIPKEY_STATE_DIR"
	EnvSecrets   = "SHIPKEY_SECRETS"
	EnvKey       = "SHIPKEY_KEY"
)

// Options configure Open. Zero fields take defaults from the environment.
type Options struct {
	ConfigDir string // default SHIPKEY_CONFIG_DIR, else XDG config dir + /shipkey
	StateDir  string // default SHIPKEY_STATE_DIR, else XDG state dir + /shipkey
	// Backend: "auto", "keyring", "file", "plaintext"; default SHIPKEY_SECRETS,
	// else the config file's secrets setting, else "auto". "memory" (secrets
	// kept in this process only) is accepted here and nowhere else: it is for
	// `shipkey demo`'s throwaway store.
	Backend string
	// Passphrase supplies the file backend's passphrase when SHIPKEY_PASSPHRASE
	// is unset (a hidden prompt on a terminal); nil means none can be asked.
	Passphrase func(prompt string) (string, error)
	Keyring    Keyring      // default: the OS keyring (zalando/go-keyring)
	Auth       *auth.Client // required for token operations
	Now        func() time.Time
	Warn       io.Writer // where fallbacks and plaintext warnings are said; nil = os.Stderr

	// Unlock says how an unlock of the file backend is kept for the session.
	Unlock UnlockOptions

	// ReadOnce is for a process that reads a key or two and exits (token,
	// header, status): config.toml and state.db are read once, state.db kept
	// open (read-only, its shared lock held) until this process writes, waits
	// on the network or a prompt, or closes the Store (readonce.go). A
	// long-lived process (the app) leaves it false.
	ReadOnce bool
}

// Keyring is the small slice of an OS keyring the store uses; injected so
// tests need no D-Bus. Get reports a missing entry with an error matching
// ErrNotFound (or go-keyring's keyring.ErrNotFound). Implementations may block;
// the store bounds every call with a timeout.
type Keyring interface {
	Get(service, user string) (string, error)
	Set(service, user, secret string) error
	Delete(service, user string) error
}

// NewKey is what "Get API Key" takes.
type NewKey struct {
	Label string
	Conn  auth.Connection
	// Grant is how the key obtains tokens (empty: the password grant). Each
	// grant reads only its own fields below.
	Grant            auth.GrantType
	CallbackPort     int    // authcode: fixed loopback port, 0 for an ephemeral one
	Username         string // password
	ClientSecret     string // every grant but a public client's
	Password         string // password
	RememberPassword bool   // password
	// Prompt is told what a person must do for an interactive grant (a
	// device code, an authorization URL); cancel ctx to give up waiting.
	Prompt auth.Prompter
	// Wait bounds the wait for the browser (authcode; 0:
	// auth.DefaultBrowserWait).
	Wait time.Duration
}

// LoginOptions say how Login obtains a new token set.
type LoginOptions struct {
	// Password is the password grant's password; empty uses the remembered
	// one.
	Password string
	// Prompt is told what a person must do for an interactive grant; cancel
	// ctx to give up waiting.
	Prompt auth.Prompter
	// Wait bounds the wait for the browser (authcode; 0:
	// auth.DefaultBrowserWait).
	Wait time.Duration
}

// Settings are user preferences from config.toml.
type Settings struct {
	Secrets        string        // backend choice
	ClipboardClear time.Duration // 0 = never; default 30 s
	AutoRefresh    bool          // TUI refresh-ahead default on
	Timeout        time.Duration // bounds each request to the server; 0: auth's default
}
