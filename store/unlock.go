package store

import (
	"bytes"
	"context"
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

// Unlocking the file backend.
//
// The identity in secrets.key.age is wrapped with the passphrase (age scrypt:
// about a second and 256 MiB per derivation). It is unwrapped at most once
// per session, not once per process:
//
//   - the first process that needs it and finds no session entry asks the
//     passphrase (or takes SHIPKEY_PASSPHRASE), then takes <state>/unlock.lock,
//     looks again, and only if still nobody published it derives it and
//     publishes it (see session.go for where); others wait on the lock and then
//     find it published, so at most one scrypt runs at a time per store;
//   - every later process of the same user finds it published and asks
//     nothing, until the unlock timeout or `shipkey lock`.

// unlockLockName is the file lock under which the identity is derived and
// published.
const unlockLockName = "unlock.lock"

// newPassphraseTries bounds how often a new passphrase and its confirmation
// are asked when they do not match.
const newPassphraseTries = 3

// promptPassphrase asks the passphrase of an existing key file: it first says
// why (sess.sayWhy), then asks on the terminal. Without a terminal the error
// says what to do.
// waitAhead tells the Store that this unlock may take long (beforeWait).
func (b *fileBackend) waitAhead() {
	if b.beforeWait != nil {
		b.beforeWait()
	}
}

func (b *fileBackend) promptPassphrase(sess *session) (string, error) {
	if p := sess.envPassphrase(); p != "" {
		return p, nil
	}
	keyPath := b.keyPath()
	if b.passphrase == nil {
		return "", b.lockedError(fmt.Sprintf("the secrets file %s is locked and there is no terminal to ask its passphrase on: run `shipkey unlock` in a terminal%s, or set %s",
			displayPath(keyPath), sess.forHowLong(), EnvPassphrase), nil)
	}
	sess.sayWhy(false, b.dataPath())
	p, err := b.passphrase(fmt.Sprintf("Passphrase for %s: ", displayPath(keyPath)))
	if err != nil {
		return "", b.lockedError("the secrets file stays locked: no passphrase was given ("+err.Error()+")", err)
	}
	if p == "" {
		return "", b.lockedError("the secrets file stays locked: the passphrase is empty", nil)
	}
	return p, nil
}

// promptNewPassphrase asks a new passphrase twice (up to newPassphraseTries
// times while they differ or are empty). Nothing is written until it returns.
func (b *fileBackend) promptNewPassphrase(sess *session) (string, error) {
	if p := sess.envPassphrase(); p != "" {
		return p, nil
	}
	keyPath := b.keyPath()
	if b.passphrase == nil {
		return "", b.lockedError(fmt.Sprintf("no secrets file yet at %s and no terminal to ask a new passphrase on: set %s, or run `shipkey unlock` in a terminal",
			displayPath(keyPath), EnvPassphrase), nil)
	}
	sess.sayWhy(true, b.dataPath())
	aborted := func(err error) error {
		return b.lockedError("no secrets file was made: no passphrase was given ("+err.Error()+")", err)
	}
	for try := 1; ; try++ {
		var problem string
		p, err := b.passphrase(fmt.Sprintf("New passphrase for %s: ", displayPath(keyPath)))
		if err != nil {
			return "", aborted(err)
		}
		if p == "" {
			problem = "the passphrase is empty"
		} else {
			again, err := b.passphrase("Repeat the new passphrase: ")
			if err != nil {
				return "", aborted(err)
			}
			if again == p {
				return p, nil
			}
			problem = "the passphrases do not match"
		}
		if try == newPassphraseTries {
			return "", b.lockedError(fmt.Sprintf("no secrets file was made: %s (%d tries)", problem, try), nil)
		}
		fmt.Fprintf(sess.warn, "shipkey: %s; try again\n", problem)
	}
}

// unlock returns the store's identity: from this process, else from the
// session (kernel keyring or agent), else unwrapped with the passphrase (or
// created on first use) under unlock.lock and published to the session. A
// process that follows the session asks the session each time, and never
// for a passphrase (session_follow.go).
func (b *fileBackend) unlock() (*age.X25519Identity, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.follow != notFollowing {
		return b.fromSession()
	}
	if b.identity != nil {
		return b.identity, nil
	}
	sess := b.sess()
	if sess.err != nil {
		return nil, sess.err
	}
	keyPath := b.keyPath()
	wrapped, err := os.ReadFile(keyPath)
	switch {
	case err == nil:
		desc := identityCacheDesc(keyPath, wrapped)
		if id, ok := sess.load(desc); ok {
			if b.identityOpens(id) {
				b.identity = id
				return id, nil
			}
			b.dropCached(sess, desc)
		}
		b.waitAhead()
		pass, err := b.promptPassphrase(sess)
		if err != nil {
			return nil, err
		}
		id, err := b.deriveLocked(sess, pass)
		if err != nil {
			return nil, err
		}
		b.identity = id
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fileError("read", keyPath, err)
	}
	if _, err := os.Stat(b.dataPath()); err == nil {
		return nil, corruptError(b.dataPath(), 0, "its key file "+secretsKeyFileName+" is missing, so it cannot be decrypted")
	}
	b.waitAhead()
	pass, err := b.promptNewPassphrase(sess)
	if err != nil {
		return nil, err
	}
	id, err := b.deriveLocked(sess, pass)
	if err != nil {
		return nil, err
	}
	b.identity = id
	return id, nil
}

// deriveLocked runs under unlock.lock: it looks for a published identity once
// more (another process may have derived it while this one waited), else
// unwraps the key file with pass (or creates it when there is none yet) and
// publishes the identity to the session.
func (b *fileBackend) deriveLocked(sess *session, pass string) (*age.X25519Identity, error) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockLockWait)
	defer cancel()
	l, err := acquireLock(ctx, filepath.Join(b.dir, unlockLockName))
	if err != nil {
		return nil, err
	}
	defer l.release()

	keyPath := b.keyPath()
	wrapped, err := os.ReadFile(keyPath)
	if err == nil {
		desc := identityCacheDesc(keyPath, wrapped)
		if id, ok := sess.load(desc); ok && b.identityOpens(id) {
			return id, nil
		}
		b.logDerivation("unwrapped the secrets key with the passphrase", keyPath)
		id, err := unwrapIdentity(keyPath, wrapped, pass)
		if err != nil {
			return nil, err
		}
		sess.publish(desc, id)
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fileError("read", keyPath, err)
	}
	b.logDerivation("wrapped a new secrets key with the passphrase", keyPath)
	id, wrapped, err := b.newWrappedIdentity(pass)
	if err != nil {
		return nil, b.lockedError("no secrets file was made: unusable passphrase", err)
	}
	created, err := createFileExclusive(keyPath, wrapped)
	if err != nil {
		return nil, err
	}
	if !created {
		// Made by a process that does not take unlock.lock: use theirs.
		if wrapped, err = os.ReadFile(keyPath); err != nil {
			return nil, fileError("read", keyPath, err)
		}
		b.logDerivation("unwrapped the secrets key with the passphrase", keyPath)
		if id, err = unwrapIdentity(keyPath, wrapped, pass); err != nil {
			return nil, err
		}
	}
	sess.publish(identityCacheDesc(keyPath, wrapped), id)
	return id, nil
}

// logDerivation tells the debug log of a passphrase derivation (scrypt):
// the one costly step of an unlock, which a session spares every other
// process.
func (b *fileBackend) logDerivation(what, keyPath string) {
	if b.logger != nil {
		b.logger.Debug("unlock: "+what+" (scrypt)", "file", displayPath(keyPath))
	}
}

// newWrappedIdentity makes a new identity and wraps it with pass.
func (b *fileBackend) newWrappedIdentity(pass string) (*age.X25519Identity, []byte, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, nil, err
	}
	rcpt, err := b.scryptRecipient(pass)
	if err != nil {
		return nil, nil, err
	}
	scryptUnwraps.Add(1)
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, rcpt)
	if err != nil {
		return nil, nil, err
	}
	if _, err := io.WriteString(w, id.String()+"\n"); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	return id, buf.Bytes(), nil
}

// identityCacheDesc names the session entry of a key file: its path and a
// hash of its content, so a replaced key file never hits a stale entry and
// stores in other directories never share one.
func identityCacheDesc(keyPath string, wrapped []byte) string {
	h := sha256.New()
	h.Write([]byte(keyPath))
	h.Write([]byte{0})
	h.Write(wrapped)
	return "shipkey:file-identity:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// scryptUnwraps counts passphrase derivations, wrapping included (tests
// check that the session spares them).
var scryptUnwraps atomic.Int64

func unwrapIdentity(keyPath string, wrapped []byte, pass string) (*age.X25519Identity, error) {
	scryptUnwraps.Add(1)
	sid, err := age.NewScryptIdentity(pass)
	if err != nil {
		return nil, &BackendError{Backend: BackendFile, Msg: "the secrets file stays locked: unusable passphrase", Kind: ErrBackendLocked, Err: err}
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

// UnlockAsk is what unlocking the secrets (Unlock) would ask of a person.
type UnlockAsk int

const (
	// AskNothing: another backend, SHIPKEY_PASSPHRASE, or the identity is
	// at hand (this process, the session); also when the file backend is
	// damaged (Unlock says how).
	AskNothing UnlockAsk = iota
	// AskPassphrase: the passphrase of the existing key file.
	AskPassphrase
	// AskNewPassphrase: a new passphrase, for the key file not made yet.
	AskNewPassphrase
)

// UnlockAsks says what Unlock would ask, and the key file it asks for (its
// display form), so that an app can ask in its own screen and unlock with
// UnlockWith.
func (s *Store) UnlockAsks() (UnlockAsk, string, error) {
	b := s.fileBackend()
	if b == nil || s.backend() != secretsBackend(b) {
		return AskNothing, "", nil
	}
	st, err := s.Session() // finds an identity the session keeps
	if err != nil {
		return AskNothing, "", err
	}
	b.mu.Lock()
	given := b.identity != nil || b.sess().envPassphrase() != ""
	b.mu.Unlock()
	switch {
	case given || st.Unlocked:
		return AskNothing, st.KeyFile, nil
	case st.Exists:
		return AskPassphrase, st.KeyFile, nil
	}
	if _, err := os.Lstat(b.dataPath()); !errors.Is(err, os.ErrNotExist) {
		return AskNothing, st.KeyFile, nil // secrets without a key file: Unlock says so
	}
	return AskNewPassphrase, st.KeyFile, nil
}

// UnlockWith is Unlock with pass as the passphrase it would ask (for a new
// key file, the one it is made with): for an app that asked it in its own
// screen (UnlockAsks). pass is used for this unlock only.
func (s *Store) UnlockWith(pass string) error {
	b := s.fileBackend()
	if b == nil || pass == "" {
		return s.Unlock()
	}
	b.mu.Lock()
	sess := b.sess()
	was := sess.pass
	sess.pass = pass
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		sess.pass = was
		b.mu.Unlock()
	}()
	return s.Unlock()
}
