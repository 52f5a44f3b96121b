//go:build linux

package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// forgetIdentityCache drops the kernel keyring entry the file backend keeps
// for the key file at keyPath (named as store.identityCacheDesc does), so a
// benchmark leaves nothing behind and can measure the uncached path.
func forgetIdentityCache(keyPath string) {
	data, err := os.ReadFile(keyPath)
	if err != nil {
		return
	}
	h := sha256.New()
	h.Write([]byte(keyPath))
	h.Write([]byte{0})
	h.Write(data)
	desc := "shipkey:file-identity:" + hex.EncodeToString(h.Sum(nil)[:16])
	if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0); err == nil {
		_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
	}
}

// kernelKeyringWorks reports whether keyctl answers here (a container's
// seccomp profile may refuse it).
func kernelKeyringWorks() bool {
	_, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "shipkey:probe", 0)
	return err == nil || errors.Is(err, unix.ENOKEY)
}
