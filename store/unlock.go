package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"filippo.io/age"
)

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
	rcpt, err := b.scryptRecipient(pass)
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
