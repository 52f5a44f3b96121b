package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

	"filippo.io/age"
	gokeyring "github.com/zalando/go-keyring"

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

// --- keyring ---------------------------------------------------------------

// osKeyring is the OS keyring through zalando/go-keyring.
type osKeyring struct{}

func (osKeyring) Get(service, user string) (string, error) {
	v, err := gokeyring.Get(service, user)
	if errors.Is(err, gokeyring.ErrNotFound) {
		return "", ErrNotFound
	}
	return v, err
}
func (osKeyring) Set(service, user, secret string) error { return gokeyring.Set(service, user, secret) }
func (osKeyring) Delete(service, user string) error {
	err := gokeyring.Delete(service, user)
	if errors.Is(err, gokeyring.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// keyringBackend keeps one JSON entry per key (service "shipkey", user = key
// ID) and bounds every call by a timeout: a keyring that does not answer
// (no D-Bus, a prompt nobody sees) must not hang shipkey.
type keyringBackend struct {
	kr      Keyring
	timeout time.Duration
}

func (b *keyringBackend) Name() string { return BackendKeyring }

func isKeyringNotFound(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, gokeyring.ErrNotFound)
}

// call runs f in a goroutine and gives up after the timeout. A call that
// never returns leaks its goroutine; there is no way to cancel a D-Bus call
// that go-keyring started.
func (b *keyringBackend) call(op string, timeout time.Duration, f func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil && !isKeyringNotFound(r.err) {
			return "", keyringError(op, r.err)
		}
		return r.v, r.err
	case <-t.C:
		return "", &BackendError{
			Backend: BackendKeyring,
			Msg:     fmt.Sprintf("the OS keyring did not answer within %s (%s)", timeout, op),
			Kind:    ErrBackendMissing,
			Err:     errKeyringTimeout,
		}
	}
}

var errKeyringTimeout = errors.New("keyring timeout")

// keyringError classifies a keyring failure as missing or locked.
func keyringError(op string, err error) error {
	reason := auth.Sanitize(err.Error())
	low := strings.ToLower(reason)
	kind := ErrBackendMissing
	switch {
	case strings.Contains(low, "locked"), strings.Contains(low, "dismissed"),
		strings.Contains(low, "denied"), strings.Contains(low, "not authorized"):
		kind = ErrBackendLocked
	}
	var be *BackendError
	if errors.As(err, &be) {
		return be
	}
	what := "the OS keyring is not available"
	if kind == ErrBackendLocked {
		what = "the OS keyring is locked"
	}
	return &BackendError{Backend: BackendKeyring, Msg: fmt.Sprintf("%s (%s: %s)", what, op, reason), Kind: kind, Err: err}
}

func (b *keyringBackend) probe(timeout time.Duration) error {
	_, err := b.call("probe", timeout, func() (string, error) { return b.kr.Get(keyringService, keyringProbeUser) })
	if err != nil && !isKeyringNotFound(err) {
		return err
	}
	return nil
}

func (b *keyringBackend) Get(id string) (keySecrets, bool, error) {
	v, err := b.call("read", b.timeout, func() (string, error) { return b.kr.Get(keyringService, id) })
	if isKeyringNotFound(err) {
		return keySecrets{}, false, nil
	}
	if err != nil {
		return keySecrets{}, false, err
	}
	var ks keySecrets
	if err := json.Unmarshal([]byte(v), &ks); err != nil {
		return keySecrets{}, false, fmt.Errorf("the keyring entry %s/%s is not shipkey's: delete it or remove the key", keyringService, id)
	}
	return ks, true, nil
}

func (b *keyringBackend) Set(id string, ks keySecrets) error {
	data, err := json.Marshal(ks)
	if err != nil {
		return err
	}
	_, err = b.call("write", b.timeout, func() (string, error) { return "", b.kr.Set(keyringService, id, string(data)) })
	return err
}

func (b *keyringBackend) Delete(id string) error {
	_, err := b.call("delete", b.timeout, func() (string, error) { return "", b.kr.Delete(keyringService, id) })
	if isKeyringNotFound(err) {
		return nil
	}
	return err
}

// --- age-encrypted file ------------------------------------------------------

// fileBackend keeps all keys' secrets in secrets.age, encrypted to a
// per-store X25519 identity. The identity is kept in secrets.key.age,
// wrapped with the passphrase (scrypt at age's default work factor), and is
// unwrapped once per process: one slow derivation, then fast reads and writes.
type fileBackend struct {
	dir        string
	passphrase func(prompt string) (string, error)
	// kernelCache keeps the unwrapped identity in the Linux kernel keyring
	// for identityCacheTTL (see kcache_linux.go).
	kernelCache bool

	mu       sync.Mutex // guards identity and serializes unlocking
	identity *age.X25519Identity
}

func (b *fileBackend) Name() string { return BackendFile }

func (b *fileBackend) dataPath() string { return filepath.Join(b.dir, secretsFileName) }
func (b *fileBackend) keyPath() string  { return filepath.Join(b.dir, secretsKeyFileName) }

func (b *fileBackend) lockedError(msg string, cause error) error {
	return &BackendError{Backend: BackendFile, Msg: msg, Kind: ErrBackendLocked, Err: cause}
}

// getPassphrase asks SHIPKEY_PASSPHRASE, then the prompt.
func (b *fileBackend) getPassphrase(prompt string) (string, error) {
	if p, ok := os.LookupEnv(EnvPassphrase); ok && p != "" {
		return p, nil
	}
	if b.passphrase == nil {
		return "", b.lockedError("the secrets file is locked: set "+EnvPassphrase+" or run in a terminal", nil)
	}
	p, err := b.passphrase(prompt)
	if err != nil {
		return "", b.lockedError("the secrets file is locked: no passphrase was given", err)
	}
	if p == "" {
		return "", b.lockedError("the secrets file is locked: the passphrase is empty", nil)
	}
	return p, nil
}

// unlock returns the store's identity, unwrapping it (or creating it on first
// use) once per process.
func (b *fileBackend) unlock() (*age.X25519Identity, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.identity != nil {
		return b.identity, nil
	}
	keyPath := b.keyPath()
	wrapped, err := os.ReadFile(keyPath)
	switch {
	case err == nil:
		pass, err := b.getPassphrase(fmt.Sprintf("Passphrase for %s: ", displayPath(keyPath)))
		if err != nil {
			return nil, err
		}
		desc := identityCacheDesc(keyPath, wrapped)
		if b.kernelCache {
			if id, ok := kernelCacheLoad(desc, pass); ok {
				b.identity = id
				return id, nil
			}
		}
		id, err := unwrapIdentity(keyPath, wrapped, pass)
		if err != nil {
			return nil, err
		}
		if b.kernelCache {
			kernelCacheStore(desc, pass, id)
		}
		b.identity = id
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fileError("read", keyPath, err)
	}
	if _, err := os.Stat(b.dataPath()); err == nil {
		return nil, corruptError(b.dataPath(), 0, "its key file "+secretsKeyFileName+" is missing, so it cannot be decrypted")
	}
	pass, err := b.getPassphrase(fmt.Sprintf("New passphrase for %s: ", displayPath(keyPath)))
	if err != nil {
		return nil, err
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	rcpt, err := age.NewScryptRecipient(pass)
	if err != nil {
		return nil, b.lockedError("the secrets file is locked: unusable passphrase", err)
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, rcpt)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(w, id.String()+"\n"); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	created, err := createFileExclusive(keyPath, buf.Bytes())
	if err != nil {
		return nil, err
	}
	wrapped = buf.Bytes()
	if !created {
		// Another process created the key first: use theirs.
		if wrapped, err = os.ReadFile(keyPath); err != nil {
			return nil, fileError("read", keyPath, err)
		}
		if id, err = unwrapIdentity(keyPath, wrapped, pass); err != nil {
			return nil, err
		}
	}
	if b.kernelCache {
		kernelCacheStore(identityCacheDesc(keyPath, wrapped), pass, id)
	}
	b.identity = id
	return id, nil
}

// identityCacheDesc names the kernel keyring entry of a key file: its path
// and a hash of its content, so a replaced key file never hits a stale entry.
func identityCacheDesc(keyPath string, wrapped []byte) string {
	h := sha256.New()
	h.Write([]byte(keyPath))
	h.Write([]byte{0})
	h.Write(wrapped)
	return "shipkey:file-identity:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// scryptUnwraps counts passphrase derivations (tests check the cache).
var scryptUnwraps atomic.Int64

func unwrapIdentity(keyPath string, wrapped []byte, pass string) (*age.X25519Identity, error) {
	scryptUnwraps.Add(1)
	sid, err := age.NewScryptIdentity(pass)
	if err != nil {
		return nil, &BackendError{Backend: BackendFile, Msg: "the secrets file is locked: unusable passphrase", Kind: ErrBackendLocked, Err: err}
	}
	r, err := age.Decrypt(bytes.NewReader(wrapped), sid)
	if err != nil {
		if errors.Is(err, age.ErrIncorrectIdentity) {
			return nil, &BackendError{Backend: BackendFile, Msg: "wrong passphrase for " + displayPath(keyPath), Kind: ErrBackendLocked}
		}
		return nil, corruptError(keyPath, 0, "not a shipkey key file ("+err.Error()+")")
	}
	text, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return nil, corruptError(keyPath, 0, "damaged ("+err.Error()+")")
	}
	id, err := age.ParseX25519Identity(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, corruptError(keyPath, 0, "does not hold an age identity")
	}
	return id, nil
}

// createFileExclusive writes data to path only if path does not exist yet,
// atomically (hard link of a synced temporary file). It reports whether it
// created the file.
func createFileExclusive(path string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	if err := ensureDir(dir); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fileError("write", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, fileError("write", path, werr)
	}
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		// No hard links on this file system: fall back to a checked rename.
		if _, serr := os.Stat(path); serr == nil {
			return false, nil
		}
		if err := os.Rename(name, path); err != nil {
			return false, fileError("write", path, err)
		}
	}
	syncDir(dir)
	return true, nil
}

func (b *fileBackend) readAll(id *age.X25519Identity) (map[string]keySecrets, error) {
	path := b.dataPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]keySecrets{}, nil
	}
	if err != nil {
		return nil, fileError("read", path, err)
	}
	r, err := age.Decrypt(bytes.NewReader(data), id)
	if err != nil {
		if errors.Is(err, age.ErrIncorrectIdentity) {
			return nil, corruptError(path, 0, "it was not encrypted with "+secretsKeyFileName+" next to it")
		}
		return nil, corruptError(path, 0, "not an age file ("+err.Error()+")")
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		return nil, corruptError(path, 0, "damaged ("+err.Error()+")")
	}
	m := map[string]keySecrets{}
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, corruptError(path, 0, "its content is not shipkey's")
	}
	return m, nil
}

func (b *fileBackend) writeAll(id *age.X25519Identity, m map[string]keySecrets) error {
	plain, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, id.Recipient())
	if err != nil {
		return err
	}
	if _, err := w.Write(plain); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return writeFileAtomic(b.dataPath(), buf.Bytes())
}

func (b *fileBackend) Get(id string) (keySecrets, bool, error) {
	ident, err := b.unlock()
	if err != nil {
		return keySecrets{}, false, err
	}
	m, err := b.readAll(ident)
	if err != nil {
		return keySecrets{}, false, err
	}
	ks, ok := m[id]
	return ks, ok, nil
}

func (b *fileBackend) Set(id string, ks keySecrets) error {
	ident, err := b.unlock()
	if err != nil {
		return err
	}
	m, err := b.readAll(ident)
	if err != nil {
		return err
	}
	m[id] = ks
	return b.writeAll(ident, m)
}

func (b *fileBackend) Delete(id string) error {
	if _, err := os.Stat(b.dataPath()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ident, err := b.unlock()
	if err != nil {
		return err
	}
	m, err := b.readAll(ident)
	if err != nil {
		return err
	}
	if _, ok := m[id]; !ok {
		return nil
	}
	delete(m, id)
	return b.writeAll(ident, m)
}

// --- plaintext -----------------------------------------------------------------

// plaintextBackend keeps secrets unencrypted in secrets.json (0600). Used only
// when chosen explicitly; every write says so on the warning writer.
type plaintextBackend struct {
	dir  string
	warn io.Writer
}

func (b *plaintextBackend) Name() string { return BackendPlaintext }
func (b *plaintextBackend) path() string { return filepath.Join(b.dir, plaintextFileName) }

func (b *plaintextBackend) readAll() (map[string]keySecrets, error) {
	data, err := os.ReadFile(b.path())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]keySecrets{}, nil
	}
	if err != nil {
		return nil, fileError("read", b.path(), err)
	}
	m := map[string]keySecrets{}
	if err := json.Unmarshal(data, &m); err != nil {
		// The message must not quote the content: it is secret.
		return nil, corruptError(b.path(), jsonErrorLine(data, err), "invalid JSON")
	}
	return m, nil
}

func (b *plaintextBackend) writeAll(m map[string]keySecrets) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(b.warn, "shipkey: warning: secrets are stored unencrypted in %s (secrets = %q)\n", displayPath(b.path()), BackendPlaintext)
	return writeFileAtomic(b.path(), append(data, '\n'))
}

func (b *plaintextBackend) Get(id string) (keySecrets, bool, error) {
	m, err := b.readAll()
	if err != nil {
		return keySecrets{}, false, err
	}
	ks, ok := m[id]
	return ks, ok, nil
}

func (b *plaintextBackend) Set(id string, ks keySecrets) error {
	m, err := b.readAll()
	if err != nil {
		return err
	}
	m[id] = ks
	return b.writeAll(m)
}

func (b *plaintextBackend) Delete(id string) error {
	m, err := b.readAll()
	if err != nil {
		return err
	}
	if _, ok := m[id]; !ok {
		return nil
	}
	delete(m, id)
	return b.writeAll(m)
}

// --- memory --------------------------------------------------------------------

// memoryBackend keeps secrets in the process only (shipkey demo).
type memoryBackend struct {
	mu sync.Mutex
	m  map[string]keySecrets
}

func (b *memoryBackend) Name() string { return BackendMemory }

func (b *memoryBackend) Get(id string) (keySecrets, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ks, ok := b.m[id]
	return ks, ok, nil
}

func (b *memoryBackend) Set(id string, ks keySecrets) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]keySecrets{}
	}
	b.m[id] = ks
	return nil
}

func (b *memoryBackend) Delete(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, id)
	return nil
}
