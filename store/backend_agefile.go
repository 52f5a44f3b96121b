package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"filippo.io/age"
	"github.com/shipkey/shipkey/internal/scryptcost"
)

// fileBackend keeps each key's secrets in its own small file,
// secrets.d/<id>.age, encrypted to a per-store X25519 identity: reading one
// key's secrets decrypts one record, and removing a key deletes its file.
// The identity is kept in secrets.key.age, wrapped with the passphrase
// (scrypt at age's default work factor), and is unwrapped once per process:
// one slow derivation, then fast reads and writes (see unlock.go).
type fileBackend struct {
	dir        string
	passphrase func(prompt string) (string, error)
	// session keeps the unwrapped identity for other processes of the user
	// until a timeout or `shipkey lock` (see session.go).
	session *session
	// scryptWorkFactor, when non-zero, replaces age's default work factor for
	// a new secrets.key.age. Tests only: users always get the default.
	scryptWorkFactor int
	// beforeWait, when set, runs before a passphrase is asked for or
	// derived: the Store's held read lock is dropped (readonce.go).
	beforeWait func()
	// logger is told of each derivation (Options.Logger); nil: nobody.
	logger *slog.Logger

	mu       sync.Mutex // guards identity, follow and serializes unlocking
	identity *age.X25519Identity
	// follow: whether the identity follows the session (FollowSession), and
	// where it stands; followChanged is told each change.
	follow        followState
	followChanged func(locked bool)
}

func newFileBackend(e backendEnv) secretsBackend {
	return &fileBackend{dir: e.stateDir, passphrase: e.opts.Passphrase, logger: e.opts.Logger}
}

const (
	secretsDirName     = "secrets.d"
	secretsKeyFileName = "secrets.key.age"
	legacySecretsName  = "secrets.age" // every key in one file, before secrets.d
	fileKeyHome        = secretsKeyFileName + " next to it"
)

func (b *fileBackend) Name() string { return BackendFile }

// dataPath is where the secrets are: the directory of per-key files.
func (b *fileBackend) dataPath() string   { return filepath.Join(b.dir, secretsDirName) }
func (b *fileBackend) keyPath() string    { return filepath.Join(b.dir, secretsKeyFileName) }
func (b *fileBackend) legacyPath() string { return filepath.Join(b.dir, legacySecretsName) }
func (b *fileBackend) files() keyFiles    { return keyFiles{dir: b.dataPath(), ext: ".age"} }

// scryptRecipient wraps a new identity with pass.
func (b *fileBackend) scryptRecipient(pass string) (*age.ScryptRecipient, error) {
	r, err := age.NewScryptRecipient(pass)
	if err != nil {
		return nil, err
	}
	if b.scryptWorkFactor > 0 {
		r.SetWorkFactor(b.scryptWorkFactor)
	} else if scryptcost.WorkFactor > 0 {
		r.SetWorkFactor(scryptcost.WorkFactor)
	}
	return r, nil
}

func (b *fileBackend) lockedError(msg string, cause error) error {
	return &BackendError{Backend: BackendFile, Msg: msg, Kind: ErrBackendLocked, Err: cause}
}

// encryptRecord is a key's secrets as a file encrypted to the store identity.
func encryptRecord(id *age.X25519Identity, ks keySecrets) ([]byte, error) {
	plain, err := json.Marshal(ks)
	if err != nil {
		return nil, err
	}
	return ageEncrypt(id, plain)
}

func ageEncrypt(id *age.X25519Identity, plain []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, id.Recipient())
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ageDecrypt opens data (read from path) with the store identity of
// backend, which keeps it where keyHome says.
func ageDecrypt(path string, data []byte, id *age.X25519Identity, backend, keyHome string) ([]byte, error) {
	r, err := age.Decrypt(bytes.NewReader(data), id)
	if err != nil {
		if errors.Is(err, age.ErrIncorrectIdentity) {
			return nil, &BackendError{Backend: backend, Kind: ErrBackendLocked,
				Msg: displayPath(path) + " was not encrypted to the key in " + keyHome + " (copied from another store?); the other keys' files are not affected"}
		}
		return nil, corruptError(path, 0, "not an age file ("+err.Error()+")")
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		return nil, corruptError(path, 0, "damaged ("+err.Error()+")")
	}
	return plain, nil
}

func (b *fileBackend) Get(id string) (keySecrets, bool, error) {
	ident, err := b.unlock()
	if err != nil {
		return keySecrets{}, false, err
	}
	f := b.files()
	data, ok, err := f.read(id)
	if err != nil {
		return keySecrets{}, false, err
	}
	if !ok {
		// Not migrated yet (a store of the one-file layout): read the old file.
		m, err := b.readLegacy(ident)
		if err != nil {
			return keySecrets{}, false, err
		}
		ks, ok := m[id]
		return ks, ok, nil
	}
	ks, err := openRecord(f, id, data, ident, BackendFile, fileKeyHome)
	return ks, err == nil, err
}

// openRecord decrypts a key's file (data, read from f's file of id) with the
// store identity of backend, kept where keyHome says, and checks that the
// record is that key's.
func openRecord(f keyFiles, id string, data []byte, ident *age.X25519Identity, backend, keyHome string) (keySecrets, error) {
	plain, err := ageDecrypt(f.path(id), data, ident, backend, keyHome)
	if err != nil {
		return keySecrets{}, err
	}
	var ks keySecrets
	if err := json.Unmarshal(plain, &ks); err != nil {
		return keySecrets{}, corruptError(f.path(id), 0, "its content is not shipkey's")
	}
	if err := checkBinding(f, id, ks); err != nil {
		return keySecrets{}, err
	}
	return ks, nil
}

func (b *fileBackend) Set(id string, ks keySecrets) error {
	ident, err := b.unlock()
	if err != nil {
		return err
	}
	data, err := encryptRecord(ident, ks)
	if err != nil {
		return err
	}
	return b.files().write(id, data, true)
}

// setMany writes many keys' secrets with one sync of the file system (Import).
func (b *fileBackend) setMany(items map[string]keySecrets) error {
	ident, err := b.unlock()
	if err != nil {
		return err
	}
	return b.files().writeMany(items, func(ks keySecrets) ([]byte, error) { return encryptRecord(ident, ks) })
}

func (b *fileBackend) Delete(id string) error {
	if fileExists(b.legacyPath()) {
		// Never leave a copy in the old file: move it first (Remove holds
		// store.lock and has unlocked the backend).
		if _, err := b.migrateLegacy(); err != nil {
			return err
		}
	}
	return b.files().remove(id)
}

// readLegacy reads secrets.age; a missing file is no secrets.
func (b *fileBackend) readLegacy(ident *age.X25519Identity) (map[string]keySecrets, error) {
	path := b.legacyPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]keySecrets{}, nil
	}
	if err != nil {
		return nil, fileError("read", path, err)
	}
	plain, err := ageDecrypt(path, data, ident, BackendFile, fileKeyHome)
	if err != nil {
		return nil, err
	}
	m := map[string]keySecrets{}
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, corruptError(path, 0, "its content is not shipkey's")
	}
	return m, nil
}

// migrateLegacy splits secrets.age into secrets.d (caller holds store.lock).
func (b *fileBackend) migrateLegacy() (string, error) {
	if !fileExists(b.legacyPath()) {
		return "", nil
	}
	ident, err := b.unlock()
	if err != nil {
		return "", err
	}
	m, err := b.readLegacy(ident)
	if err != nil {
		return "", err
	}
	f := b.files()
	for id, ks := range m {
		if !validID(id) {
			continue
		}
		data, err := encryptRecord(ident, ks)
		if err != nil {
			return "", err
		}
		if _, err := f.writeNew(id, data); err != nil {
			return "", err
		}
	}
	if err := removeFile(b.legacyPath()); err != nil {
		return "", err
	}
	syncDir(b.dir)
	return legacySecretsName, nil
}
