package store

import (
	"time"

	"github.com/shipkey/shipkey/auth"
)

// Backend names.
const (
	BackendAuto      = "auto"
	BackendKeyring   = "keyring"
	BackendFile      = "file"
	BackendPlaintext = "plaintext"
	// BackendMemory keeps secrets in the process only. It exists for `shipkey
	// demo`'s throwaway store and is selectable through Options.Backend alone,
	// never through SHIPKEY_SECRETS or config.toml.
	BackendMemory = "memory"
)

const (
	keyringService = "shipkey"
	// keyringProbeUser is the sentinel entry the auto backend asks for to see
	// whether a keyring answers at all; it is never written.
	keyringProbeUser = "shipkey-probe"

	keyringTimeout      = 3 * time.Second
	keyringProbeTimeout = 2 * time.Second

	secretsFileName    = "secrets.age"
	secretsKeyFileName = "secrets.key.age"
	plaintextFileName  = "secrets.json"

	// EnvPassphrase supplies the file backend's passphrase.
	EnvPassphrase = "SHIPKEY_PASSPHRASE"
)

// userBackend reports whether name may be chosen by users (env or config).
func userBackend(name string) bool {
	switch name {
	case BackendAuto, BackendKeyring, BackendFile, BackendPlaintext:
		return true
	}
	return false
}

// keySecrets is everything secret about one key. Only ever serialized into a
// secrets backend.
type keySecrets struct {
	ClientSecret string `json:"client_secret"`
	Password     string `json:"password,omitempty"` // only when remembered
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
}

func (k *keySecrets) setTokens(ts *auth.TokenSet) {
	if ts == nil {
		k.AccessToken, k.RefreshToken, k.IDToken = "", "", ""
		return
	}
	k.AccessToken, k.RefreshToken, k.IDToken = ts.AccessToken, ts.RefreshToken, ts.IDToken
}

// secretsBackend stores keySecrets by key ID. Set and Delete of the file
// backends are read-modify-write: callers hold store.lock.
type secretsBackend interface {
	Name() string
	Get(id string) (keySecrets, bool, error)
	Set(id string, ks keySecrets) error
	Delete(id string) error
}

// BackendError is a secrets backend that cannot be used right now. It
// matches ErrBackendMissing or ErrBackendLocked with errors.Is, and its cause.
// Its message says what happened and what to do; it never holds a secret.
type BackendError struct {
	Backend string // "keyring", "file", "plaintext"
	Msg     string // one line, sanitized
	Kind    error  // ErrBackendMissing or ErrBackendLocked
	Err     error  // the cause, may be nil
}

func (e *BackendError) Error() string { return e.Msg }

// Unwrap returns the kind and the cause.
func (e *BackendError) Unwrap() []error {
	errs := []error{e.Kind}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
