//go:build linux

package unlock

import (
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID returns the uid of the process at the other end of c
// (SO_PEERCRED).
func PeerUID(c *net.UnixConn) (uid int, known bool, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, false, err
	}
	if cerr != nil {
		return 0, false, cerr
	}
	return int(cred.Uid), true, nil
}

// hardenAgent keeps the agent's memory out of core dumps and away from
// ptrace by other processes of the user.
func hardenAgent() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
