package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

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
