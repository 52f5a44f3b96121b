// Package store is shipkey's memory: API keys (a connection, a grant, a
// label), their secrets, their volatile metadata, and the one token source
// that hands out a key's access token, renewing it through auth and persisting
// the result, shared by the CLI and the TUI.
//
// Where things are (each seam a group of files; the unlock cache and teams
// are packages of their own):
//
//   - The key's definition: config.go (config.toml, the source of truth, the
//     [[keys]] table; keyEntry is the one definition, checked field by field
//     by definition_test.go), labels.go, import.go.
//   - The index: index.go (state.db, bbolt: the definitions indexed, per-key
//     state, transactions), record.go (its binary records), state.go (a
//     key's volatile state), each.go (streaming keys from a cursor),
//     migrate.go (the v1 layout), dbcheck.go and rebuild.go (a damaged or
//     missing state.db is set aside and rebuilt from config.toml and the
//     secret files).
//   - Secrets: secrets.go (the backend table), backend_*.go (OS keyring with
//     a bounded D-Bus check in sessionbus_*.go, age-encrypted files, plaintext
//     only when chosen, memory for the demo), sweep.go (orphans and temp
//     files).
//   - The unlock session: session.go and unlock.go (the file backend's
//     passphrase asked once per session), unlock_check.go; where the unlocked
//     identity is kept between processes is package store/unlock (kernel
//     keyring, shipkey agent).
//   - The lifecycle: keystore.go (Open, Create, Login, Logout, Remove, with
//     pending session ends), token.go (Token: renew under a per-key lock so
//     that across processes exactly one renews, asking the key's grant how to
//     log in again), stamp.go (what the app polls to see other processes'
//     changes).
//   - Files and owners: fsutil*.go (0600/0700, atomic writes, locks),
//     owner*.go (a store of another user is refused), syncfs_*.go.
//   - Teams: teams.go keeps a team's connection and secrets; the etcd engine
//     is package store/team.
//
// What it must never do: write a password, client secret or token in plaintext
// (unless the user chose the plaintext backend), put one into an error, touch
// the secrets backend to list keys, let two processes renew the same key at
// once, or crash on a damaged file.
package store

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// Key is an API key: a labelled credential shipkey keeps. It holds no secret.
type Key struct {
	ID    string // stable random id; secrets are filed under it, so rename never touches them
	Label string // unique, human-chosen
	// Definition is where the realm is, which client, and how the key
	// obtains tokens.
	Definition
	CreatedAt time.Time
	LastUsed  time.Time // zero: never handed out
	Default   bool      // the configured default key
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
	// Secrets names the backend that holds the key's secrets (BackendKeyring,
	// BackendFile, BackendPlaintext, "memory"); "" when no secret was ever
	// written for it or for a team key (the team's etcd holds those).
	Secrets string
	// HasRefreshToken: the stored token set carries a refresh token.
	HasRefreshToken bool
	// Team is the team whose key this is (Label is then "TEAM/LABEL"); empty
	// for a key of this machine's store. Set by the team engine's callers.
	Team string
	// TeamRemoved: this machine was removed from Team (as last seen there).
	TeamRemoved bool
}

// Shown is the key's label as a terminal shows it: clean text (the label is
// read from config.toml, the index or a team's etcd, none of them trusted).
// Print it rather than Label; Label is for finding the key.
func (k Key) Shown() text.Clean { return text.Sanitize(k.Label) }

// KeyWords are the words of a key that a screen or a message shows, each
// cleaned once (they come from config.toml, the index or a team's etcd).
type KeyWords struct {
	Label, Team, Username, ClientID, Masked text.Clean
	RealmURL, RealmName                     text.Clean
}

// Words is k's words as a terminal shows them.
func (k Key) Words() KeyWords {
	return KeyWords{
		Label: k.Shown(), Team: text.Sanitize(k.Team), Username: text.Sanitize(k.Username),
		ClientID: text.Sanitize(k.Connection.ClientID), Masked: text.Sanitize(k.Masked),
		RealmURL: text.Sanitize(k.Connection.RealmURL()), RealmName: text.Sanitize(k.Connection.RealmName()),
	}
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
	// Logger, when set (--debug), is told what the store does that costs:
	// a passphrase derivation (scrypt, about a second and 256 MiB).
	Logger *slog.Logger

	// Unlock says how an unlock of the file backend is kept for the session.
	Unlock UnlockOptions

	// ReadOnce is for a process that reads a key or two and exits (token,
	// header, status): config.toml and state.db are read once, state.db kept
	// open (read-only, its shared lock held) until this process writes, waits
	// on the network or a prompt, or closes the Store (readonce.go). A
	// long-lived process (the app) leaves it false.
	ReadOnce bool

	hooks hooks // this package's tests' only
}

// hooks let this package's tests see and steer what a Store does.
type hooks struct {
	indexPut func(bucket, key []byte) // sees each record a rebuild puts (putSorted), in order
	sweepNow func() time.Time         // the sweep's clock (sweepDue); nil: time.Now
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
	// Definition is the new key's definition; each grant reads only its
	// own fields (Username: the password grant's user, or the person who
	// must sign in with device-code or authcode; RememberPassword: the
	// password grant; CallbackPort: authcode).
	Definition
	ClientSecret string // every grant but a public client's
	Password     string // password
	// ClientKey is the client's private key (PEM or JWK) for
	// private_key_jwt and the TLS methods, ClientCert the certificate
	// (PEM) of the TLS methods; both are kept in the secrets backend.
	// GenerateClientKey makes an EC P-256 key instead of ClientKey.
	ClientKey, ClientCert []byte
	GenerateClientKey     bool
	// OnClientKey, when set, is given the public key set (JWKS) of a
	// generated client key before the grant runs, for the person to
	// register it with the realm; an error stops here, nothing stored.
	OnClientKey func(jwks []byte) error
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
