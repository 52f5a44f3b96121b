package store

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"filippo.io/age"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/shipkey/shipkey/internal/text"
)

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

// keyringBackend keeps each key's secrets in its own file,
// keyring.d/<id>.age, encrypted to a per-store X25519 identity that the OS
// keyring holds: one entry (service "shipkey", user "store-<hex>", named in
// keyring.id) of 74 bytes whatever the tokens' size. go-keyring refuses an
// entry over 2,560 bytes on Windows (the Credential Manager's blob) and a
// `security` command line over 4,096 bytes on macOS; a key's secrets with
// real tokens are larger than both. The identity is read from the keyring
// once per process.
//
// Stores of the old layout kept one JSON entry per key (user = key ID).
// Such an entry moves into the key's file the first time the key is read,
// or written, and is then deleted (see migrateEntry): a kill at any instant
// leaves either the entry alone, or the file with a marker saying that the
// entry may still exist, which the next use deletes.
//
// Every keyring call is bounded by a timeout: a keyring that does not answer
// (no D-Bus, a prompt nobody sees) must not hang shipkey.
type keyringBackend struct {
	kr      Keyring
	timeout time.Duration
	// bus tells, once, whether a D-Bus session bus answers; nil for an
	// injected Keyring. The OS keyring is never asked without one, so its
	// client never starts dbus-launch.
	bus func() error
	dir string // the state directory

	mu       sync.Mutex // guards identity and serializes its creation
	identity *age.X25519Identity
}

func newKeyringBackend(e backendEnv) secretsBackend {
	kr := e.opts.Keyring
	b := &keyringBackend{kr: kr, timeout: keyringTimeout, dir: e.stateDir}
	if kr == nil {
		b.kr = osKeyring{}
		b.bus = sync.OnceValue(func() error { return sessionBusCheck(sessionBusTimeout) })
	}
	return b
}

const (
	keyringDirName  = "keyring.d"
	keyringIDName   = "keyring.id" // names the keyring entry of the store identity
	keyringIDPrefix = "store-"
	// entryMarkExt marks, as keyring.d/.<id>.entry, a key whose entry of the
	// old layout may still be in the keyring.
	entryMarkExt = ".entry"
)

func (b *keyringBackend) dataPath() string { return filepath.Join(b.dir, keyringDirName) }
func (b *keyringBackend) idPath() string   { return filepath.Join(b.dir, keyringIDName) }
func (b *keyringBackend) files() keyFiles  { return keyFiles{dir: b.dataPath(), ext: ".age"} }
func (b *keyringBackend) markPath(id string) string {
	return filepath.Join(b.dataPath(), "."+id+entryMarkExt)
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
	if b.bus != nil {
		if err := b.bus(); err != nil {
			return "", &BackendError{
				Backend: BackendKeyring,
				Msg:     fmt.Sprintf("the OS keyring is not available (%s: %s)", op, err),
				Kind:    ErrBackendMissing,
				Err:     err,
			}
		}
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
	reason := text.Safe(err.Error())
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
	if errors.Is(err, gokeyring.ErrSetDataTooBig) {
		return &BackendError{Backend: BackendKeyring, Kind: ErrBackendMissing, Err: err,
			Msg: fmt.Sprintf("the OS keyring refused an entry as too big (%s)", op)}
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

// keyHome says where the store identity is, for messages.
func (b *keyringBackend) keyHome() string {
	return "the OS keyring entry named in " + displayPath(b.idPath())
}

// unlock returns the store identity: read from the keyring entry that
// keyring.id names, or made with both on the first write. Two processes
// making it at once each write an entry of their own; keyring.id is created
// once (linkNew), and the loser deletes its entry and reads the winner's.
func (b *keyringBackend) unlock(create bool) (*age.X25519Identity, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.identity != nil {
		return b.identity, nil
	}
	name, err := b.entryName()
	if err != nil {
		return nil, err
	}
	if name == "" {
		if !create {
			return nil, nil
		}
		ident, err := age.GenerateX25519Identity()
		if err != nil {
			return nil, err
		}
		name = keyringIDPrefix + rand.Text()
		if _, err := b.call("write", b.timeout, func() (string, error) { return "", b.kr.Set(keyringService, name, ident.String()) }); err != nil {
			return nil, err
		}
		won, err := linkNew(b.idPath(), []byte(name+"\n"))
		if err != nil || !won {
			_, _ = b.call("delete", b.timeout, func() (string, error) { return "", b.kr.Delete(keyringService, name) })
		}
		if err != nil {
			return nil, err
		}
		if won {
			syncDir(b.dir)
			b.identity = ident
			return ident, nil
		}
		if name, err = b.entryName(); err != nil {
			return nil, err
		}
	}
	v, err := b.call("read", b.timeout, func() (string, error) { return b.kr.Get(keyringService, name) })
	if isKeyringNotFound(err) {
		return nil, &BackendError{Backend: BackendKeyring, Kind: ErrBackendLocked, Err: err,
			Msg: fmt.Sprintf("the OS keyring has no entry %s/%s, the key to %s (the keyring was reset, or the store was copied from another user or machine): "+
				"the secrets there cannot be read; remove the keys (shipkey keys rm) and add them again", keyringService, name, displayPath(b.dataPath()))}
	}
	if err != nil {
		return nil, err
	}
	ident, err := age.ParseX25519Identity(strings.TrimSpace(v))
	if err != nil {
		return nil, &BackendError{Backend: BackendKeyring, Kind: ErrBackendLocked,
			Msg: fmt.Sprintf("the OS keyring entry %s/%s is not a shipkey store key: it was changed outside shipkey; the secrets in %s cannot be read",
				keyringService, name, displayPath(b.dataPath()))}
	}
	b.identity = ident
	return ident, nil
}

// entryName reads keyring.id: the keyring entry of the store identity, ""
// when there is none yet.
func (b *keyringBackend) entryName() (string, error) {
	data, err := os.ReadFile(b.idPath())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fileError("read", b.idPath(), err)
	}
	name := strings.TrimSpace(string(data))
	rest, ok := strings.CutPrefix(name, keyringIDPrefix)
	if !ok || !validID(rest) {
		return "", corruptError(b.idPath(), 0, "it does not name a keyring entry of shipkey's")
	}
	return name, nil
}

func (b *keyringBackend) Get(id string) (keySecrets, bool, error) {
	f := b.files()
	data, ok, err := f.read(id)
	if err != nil {
		return keySecrets{}, false, err
	}
	if !ok {
		return b.migrateEntry(id)
	}
	ident, err := b.unlock(false)
	if err != nil {
		return keySecrets{}, false, err
	}
	if ident == nil {
		return keySecrets{}, false, &BackendError{Backend: BackendKeyring, Kind: ErrBackendLocked,
			Msg: fmt.Sprintf("%s is missing: it names the OS keyring entry that opens %s; restore it from a backup, or remove the keys (shipkey keys rm) and add them again",
				displayPath(b.idPath()), displayPath(b.dataPath()))}
	}
	ks, err := openRecord(f, id, data, ident, BackendKeyring, b.keyHome())
	if err != nil {
		return keySecrets{}, false, err
	}
	if fileExists(b.markPath(id)) {
		b.dropEntry(id) // a migration a kill cut short
	}
	return ks, true, nil
}

// migrateEntry moves a key's entry of the old layout (one JSON entry per
// key) into its file: the marker first, then the file (a newer one, written
// meanwhile, wins), then the entry is deleted and the marker with it.
func (b *keyringBackend) migrateEntry(id string) (keySecrets, bool, error) {
	if !validID(id) {
		return keySecrets{}, false, nil
	}
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
	ident, err := b.unlock(true)
	if err != nil {
		return keySecrets{}, false, err
	}
	data, err := encryptRecord(ident, ks)
	if err != nil {
		return keySecrets{}, false, err
	}
	if err := b.mark(id); err != nil {
		return keySecrets{}, false, err
	}
	wrote, err := b.files().writeNew(id, data)
	if err != nil {
		return keySecrets{}, false, err
	}
	if !wrote {
		return b.Get(id) // written meanwhile: the file is the newer
	}
	syncDir(b.dataPath())
	b.dropEntry(id)
	return ks, true, nil
}

// mark records that a key's entry of the old layout may be in the keyring.
func (b *keyringBackend) mark(id string) error {
	if err := ensureDir(b.dataPath()); err != nil {
		return err
	}
	f, err := os.OpenFile(b.markPath(id), os.O_CREATE|os.O_WRONLY, filePerm)
	if err != nil {
		return fileError("write", b.markPath(id), err)
	}
	return f.Close()
}

// dropEntry deletes a key's entry of the old layout, then its marker; a
// keyring that fails keeps the marker for the next use.
func (b *keyringBackend) dropEntry(id string) {
	_, err := b.call("delete", b.timeout, func() (string, error) { return "", b.kr.Delete(keyringService, id) })
	if err == nil || isKeyringNotFound(err) {
		_ = os.Remove(b.markPath(id))
	}
}

func (b *keyringBackend) Set(id string, ks keySecrets) error {
	ident, err := b.unlock(true)
	if err != nil {
		return err
	}
	data, err := encryptRecord(ident, ks)
	if err != nil {
		return err
	}
	f := b.files()
	first := !fileExists(f.path(id))
	if first {
		// The key may have an entry of the old layout that was never read.
		if err := b.mark(id); err != nil {
			return err
		}
	}
	if err := f.write(id, data, true); err != nil {
		return err
	}
	if first || fileExists(b.markPath(id)) {
		b.dropEntry(id)
	}
	return nil
}

// Delete removes the key's file, then its entry of the old layout, if any.
func (b *keyringBackend) Delete(id string) error {
	if err := b.files().remove(id); err != nil {
		return err
	}
	if !validID(id) {
		return nil
	}
	_, err := b.call("delete", b.timeout, func() (string, error) { return "", b.kr.Delete(keyringService, id) })
	if err != nil && !isKeyringNotFound(err) {
		return err
	}
	return removeFile(b.markPath(id))
}
