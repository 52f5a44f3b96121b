package store

import (
	"encoding/json"
	"io"
	"strings"
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

// backendEnv is what a backend is made from.
type backendEnv struct {
	stateDir string
	opts     Options
	warn     io.Writer
}

// backendTable is the one list of secrets backends, each in its own file
// (backend_*.go). A new backend, say a team secret store such as a Vault
// KV, is one new file with a type that implements secretsBackend, and one
// row here.
var backendTable = []struct {
	name string
	user bool // may be chosen through SHIPKEY_SECRETS or config.toml
	open func(backendEnv) secretsBackend
}{
	{BackendKeyring, true, newKeyringBackend},
	{BackendFile, true, newFileBackend},
	{BackendPlaintext, true, newPlaintextBackend},
	{BackendMemory, false, newMemoryBackend},
}

// autoOrder is what "auto" tries: the first backend whose probe answers
// (one that cannot be probed always answers); the last is the fallback.
var autoOrder = []string{BackendKeyring, BackendFile}

// prober is a backend that can tell, quickly, whether it answers at all.
type prober interface {
	probe(timeout time.Duration) error
}

// batchSetter is a backend that writes many keys' secrets at once (Import).
type batchSetter interface {
	setMany(items map[string]keySecrets) error
}

const (
	keyringService = "shipkey"
	// keyringProbeUser is the sentinel entry the auto backend asks for to see
	// whether a keyring answers at all; it is never written.
	keyringProbeUser = "shipkey-probe"

	keyringTimeout      = 3 * time.Second
	keyringProbeTimeout = 2 * time.Second

	// EnvPassphrase supplies the file backend's passphrase.
	EnvPassphrase = "SHIPKEY_PASSPHRASE"
)

// userBackend reports whether name may be chosen by users (env or config).
func userBackend(name string) bool {
	if name == BackendAuto {
		return true
	}
	for _, row := range backendTable {
		if row.name == name {
			return row.user
		}
	}
	return false
}

// userBackendNames is "auto, keyring, file or plaintext", for messages.
func userBackendNames() string {
	names := []string{BackendAuto}
	for _, row := range backendTable {
		if row.user {
			names = append(names, row.name)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// keySecrets is everything secret about one key. Only ever serialized into a
// secrets backend.
type keySecrets struct {
	ClientSecret string `json:"client_secret"`
	Password     string `json:"password,omitempty"` // only when remembered
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
	// ClientKey is the client's private key (PKCS#8 PEM) for
	// private_key_jwt and mutual TLS, ClientCert its certificate chain
	// (PEM), DPoPKey the key's DPoP key (PKCS#8 PEM): imported or made once,
	// never read from a file again, removed with the key.
	ClientKey  string `json:"client_key,omitempty"`
	ClientCert string `json:"client_cert,omitempty"`
	DPoPKey    string `json:"dpop_key,omitempty"`
	// Derived are the tokens the key's access token was exchanged for
	// (derived.go), by auth.Exchange.CacheKey; each entry is read on its
	// own, so a damaged one costs only itself.
	Derived map[string]json.RawMessage `json:"derived,omitempty"`
	// ID is the key the record belongs to, Meta a copy of its state (see
	// rebuild.go); neither is secret.
	ID   string      `json:"id,omitempty"`
	Meta *storedMeta `json:"meta,omitempty"`
}

// clientAuth is the client authentication of a key with connection conn
// and these secrets.
//
// The client key, certificate and DPoP key are parsed from their stored
// forms; one that does not parse is left out, and the request that needs
// it fails with a line saying to create the key again.
func (k keySecrets) clientAuth(conn auth.Connection) auth.ClientAuth {
	ca := auth.AuthFor(conn, k.ClientSecret)
	if k.ClientKey != "" {
		if key, _, err := auth.ParseClientKey([]byte(k.ClientKey)); err == nil {
			ca.Key, ca.KeyID = key, conn.ClientKeyID
			if k.ClientCert != "" {
				ca.Cert, _ = auth.ParseClientCertificate([]byte(k.ClientCert), key)
			}
		}
	}
	if k.DPoPKey != "" {
		ca.DPoP, _ = auth.ParseDPoPKey([]byte(k.DPoPKey))
	}
	return ca
}

// binding is what the key's tokens are bound to: its DPoP key's thumbprint
// and its client certificate's ("" for none).
func (k keySecrets) binding(conn auth.Connection) (jkt, x5t string) {
	ca := k.clientAuth(conn)
	if ca.DPoP != nil {
		jkt = ca.DPoP.JKT()
	}
	if ca.Cert != nil {
		x5t = auth.CertificateThumbprint(ca.Cert.Certificate[0])
	}
	return jkt, x5t
}

func (k *keySecrets) setTokens(ts *auth.TokenSet) {
	if ts == nil {
		// The session is over: so are the tokens derived from it.
		k.AccessToken, k.RefreshToken, k.IDToken, k.Derived = "", "", "", nil
		return
	}
	k.AccessToken, k.RefreshToken, k.IDToken = ts.AccessToken, ts.RefreshToken, ts.IDToken
}

// secretsBackend stores keySecrets by key ID, one record per key: reading
// or writing one key never touches another's.
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
