package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"filippo.io/age"
)

// fileBackend keeps all keys' secrets in secrets.age, encrypted to a
// per-store X25519 identity. The identity is kept in secrets.key.age,
// wrapped with the passphrase (scrypt at age's default work factor), and is
// unwrapped once per process: one slow derivation, then fast reads and writes.
type fileBackend struct {
	dir        string
	passphrase func(prompt string) (string, error)
	// session keeps the unwrapped identity for other processes of the user
	// until a timeout or `shipkey lock` (see session.go).
	session *session

	mu       sync.Mutex // guards identity and serializes unlocking
	identity *age.X25519Identity
}

func (b *fileBackend) Name() string { return BackendFile }

func (b *fileBackend) dataPath() string { return filepath.Join(b.dir, secretsFileName) }
func (b *fileBackend) keyPath() string  { return filepath.Join(b.dir, secretsKeyFileName) }

func (b *fileBackend) lockedError(msg string, cause error) error {
	return &BackendError{Backend: BackendFile, Msg: msg, Kind: ErrBackendLocked, Err: cause}
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
