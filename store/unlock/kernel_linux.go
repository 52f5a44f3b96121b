//go:build linux

package unlock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"golang.org/x/sys/unix"
)

// The kernel mechanism of the session (see session.go): the unwrapped
// identity lives in the Linux kernel's user keyring (keyctl), the kernel's
// memory for this user, as an agent's memory would be. The entry:
//
//   - is named after the key file's path and content (identityCacheDesc), so
//     a replaced key file is a miss and two stores never share an entry;
//   - is readable by this user only: possessor all, user view, read, search
//     and setattr (to extend its timeout), group and other nothing;
//   - expires on its own after the idle timeout, which each use extends, but
//     never beyond the maximum age counted from the unlock (the payload
//     carries the unlock time);
//   - is dropped by `shipkey lock` (KEYCTL_INVALIDATE).
//
// When keyctl is unavailable (seccomp in containers, old kernels) the probe
// says so and auto uses the agent instead.

// cachePerm: possessor all; user view, read, search, setattr; group and
// other nothing.
const cachePerm = 0x3f2b0000

// KernelSupported: this system has a kernel keyring (Linux only).
const KernelSupported = true

// KernelAvailable reports whether keyctl answers: a search for an entry
// that does not exist fails with ENOKEY where the keyring works.
func KernelAvailable() bool {
	_, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "shipkey:probe", 0)
	return err == nil || errors.Is(err, unix.ENOKEY)
}

// KernelLoad returns the identity kept under desc and extends its
// timeout to idle (bounded by maxAge from the unlock).
func KernelLoad(desc string, idle, maxAge time.Duration) (*age.X25519Identity, bool) {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0)
	if err != nil {
		return nil, false
	}
	buf := make([]byte, 512)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil || n > len(buf) {
		return nil, false
	}
	created, ident, ok := parseCachePayload(string(buf[:n]))
	if !ok {
		return nil, false
	}
	left := time.Until(created.Add(maxAge))
	if left <= 0 {
		_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
		return nil, false
	}
	_, _ = unix.KeyctlInt(unix.KEYCTL_SET_TIMEOUT, id, timeoutSeconds(min(idle, left)), 0, 0)
	return ident, true
}

// KernelStore keeps ident under desc for idle.
func KernelStore(desc string, ident *age.X25519Identity, idle time.Duration) error {
	payload := cachePayload(time.Now(), ident)
	id, err := unix.AddKey("user", desc, []byte(payload), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		return fmt.Errorf("the kernel keyring refused the entry: %w", err)
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_SETPERM, id, cachePerm, 0, 0); err != nil {
		_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
		return fmt.Errorf("the kernel keyring refused the entry's permissions: %w", err)
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_SET_TIMEOUT, id, timeoutSeconds(idle), 0, 0); err != nil {
		_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
		return fmt.Errorf("the kernel keyring refused the entry's timeout: %w", err)
	}
	return nil
}

// KernelForget drops the entry under desc and reports whether there
// was one.
func KernelForget(desc string) bool {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0)
	if err != nil {
		return false
	}
	_, err = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
	return err == nil
}

func timeoutSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// cachePayload is "v1 <unlock time, unix seconds> <identity>".
func cachePayload(created time.Time, ident *age.X25519Identity) string {
	return "v1 " + strconv.FormatInt(created.Unix(), 10) + " " + ident.String()
}

func parseCachePayload(p string) (time.Time, *age.X25519Identity, bool) {
	f := strings.Fields(p)
	if len(f) != 3 || f[0] != "v1" {
		return time.Time{}, nil, false
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return time.Time{}, nil, false
	}
	ident, err := age.ParseX25519Identity(f[2])
	if err != nil {
		return time.Time{}, nil, false
	}
	return time.Unix(sec, 0), ident, true
}
