package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// plaintextBackend keeps each key's secrets unencrypted in its own file,
// plaintext.d/<id>.json (0600). Used only when chosen explicitly; the
// first write into a store says so on the warning writer, once: a CI job
// that chose it is not told again at every renewal (status names the
// backend of every key).
type plaintextBackend struct {
	dir  string
	warn io.Writer
}

func newPlaintextBackend(e backendEnv) secretsBackend {
	return &plaintextBackend{dir: e.stateDir, warn: e.warn}
}

const (
	plaintextDirName    = "plaintext.d"
	legacyPlaintextName = "secrets.json" // every key in one file, before plaintext.d
)

func (b *plaintextBackend) Name() string       { return BackendPlaintext }
func (b *plaintextBackend) dataPath() string   { return filepath.Join(b.dir, plaintextDirName) }
func (b *plaintextBackend) legacyPath() string { return filepath.Join(b.dir, legacyPlaintextName) }
func (b *plaintextBackend) files() keyFiles    { return keyFiles{dir: b.dataPath(), ext: ".json"} }

// say warns, before the first write of the store's secrets (plaintext.d
// not made yet), that they will be stored unencrypted.
func (b *plaintextBackend) say() {
	if _, err := os.Stat(b.dataPath()); err == nil {
		return
	}
	fmt.Fprintf(b.warn, "shipkey: warning: secrets are stored unencrypted in %s (secrets = %q); said once, when the first is written\n", displayPath(b.dataPath()), BackendPlaintext)
}

func (b *plaintextBackend) Get(id string) (keySecrets, bool, error) {
	f := b.files()
	data, ok, err := f.read(id)
	if err != nil {
		return keySecrets{}, false, err
	}
	if !ok {
		m, err := b.readLegacy()
		if err != nil {
			return keySecrets{}, false, err
		}
		ks, ok := m[id]
		return ks, ok, nil
	}
	var ks keySecrets
	if err := json.Unmarshal(data, &ks); err != nil {
		// The message must not quote the content: it is secret.
		return keySecrets{}, false, corruptError(f.path(id), jsonErrorLine(data, err), "invalid JSON")
	}
	if err := checkBinding(f, id, ks); err != nil {
		return keySecrets{}, false, err
	}
	return ks, true, nil
}

func encodePlain(ks keySecrets) ([]byte, error) {
	data, err := json.MarshalIndent(ks, "", "  ")
	return append(data, '\n'), err
}

func (b *plaintextBackend) Set(id string, ks keySecrets) error {
	data, err := encodePlain(ks)
	if err != nil {
		return err
	}
	b.say()
	return b.files().write(id, data, true)
}

// setMany writes many keys' secrets with one sync of the file system (Import).
func (b *plaintextBackend) setMany(items map[string]keySecrets) error {
	b.say()
	return b.files().writeMany(items, encodePlain)
}

func (b *plaintextBackend) Delete(id string) error {
	if fileExists(b.legacyPath()) {
		if _, err := b.migrateLegacy(); err != nil {
			return err
		}
	}
	return b.files().remove(id)
}

func (b *plaintextBackend) readLegacy() (map[string]keySecrets, error) {
	path := b.legacyPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]keySecrets{}, nil
	}
	if err != nil {
		return nil, fileError("read", path, err)
	}
	m := map[string]keySecrets{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, corruptError(path, jsonErrorLine(data, err), "invalid JSON")
	}
	return m, nil
}

// migrateLegacy splits secrets.json into plaintext.d (caller holds store.lock).
func (b *plaintextBackend) migrateLegacy() (string, error) {
	if !fileExists(b.legacyPath()) {
		return "", nil
	}
	m, err := b.readLegacy()
	if err != nil {
		return "", err
	}
	f := b.files()
	for id, ks := range m {
		if !validID(id) {
			continue
		}
		data, err := encodePlain(ks)
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
	return legacyPlaintextName, nil
}
