//go:build linux

package store

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"time"

	"filippo.io/age"
	"golang.org/x/sys/unix"
)

// The file backend's identity, once unwrapped, is kept for identityCacheTTL
// in the Linux kernel's user keyring (keyctl), so that a script calling
// `shipkey token` in a loop pays the scrypt derivation once, not on every
// call. The entry is readable by this user only (kernel key permissions), is
// named after the key file's path and content (a replaced key file is a
// miss), and is used only when the caller presents the same passphrase: its
// payload carries an HMAC of the passphrase under a random salt, so a wrong
// or missing passphrase still fails exactly as without the cache. When keyctl
// is unavailable (seccomp, old kernels) the cache is silently skipped.

const (
	identityCacheTTL = 10 * time.Minute
	cacheSaltLen     = 16
	// possessor: all; user: view, read, search; group and other: nothing.
	cachePerm = 0x3f0b0000
)

func cacheVerifier(salt []byte, pass string) []byte {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(pass))
	return m.Sum(nil)
}

// kernelCacheLoad returns the identity cached under desc for pass.
func kernelCacheLoad(desc, pass string) (*age.X25519Identity, bool) {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0)
	if err != nil {
		return nil, false
	}
	buf := make([]byte, 512)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil || n > len(buf) || n < cacheSaltLen+sha256.Size {
		return nil, false
	}
	buf = buf[:n]
	salt, mac, rest := buf[:cacheSaltLen], buf[cacheSaltLen:cacheSaltLen+sha256.Size], buf[cacheSaltLen+sha256.Size:]
	if !hmac.Equal(mac, cacheVerifier(salt, pass)) {
		return nil, false
	}
	ident, err := age.ParseX25519Identity(string(rest))
	if err != nil {
		return nil, false
	}
	return ident, true
}

// kernelCacheStore keeps ident under desc for identityCacheTTL.
func kernelCacheStore(desc, pass string, ident *age.X25519Identity) {
	salt := make([]byte, cacheSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return
	}
	payload := append(append(salt, cacheVerifier(salt, pass)...), ident.String()...)
	id, err := unix.AddKey("user", desc, payload, unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		return
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_SETPERM, id, cachePerm, 0, 0); err != nil {
		kernelCacheForget(desc)
		return
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_SET_TIMEOUT, id, int(identityCacheTTL/time.Second), 0, 0); err != nil {
		kernelCacheForget(desc)
	}
}

// kernelCacheForget drops the entry under desc, if any.
func kernelCacheForget(desc string) {
	if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0); err == nil {
		_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
	}
}
