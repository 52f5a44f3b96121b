//go:build linux

package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shipkey/shipkey/internal/text"
)

// socketListener is the token socket: a unix listener whose file is removed
// when it is closed.
type socketListener struct {
	*net.UnixListener
	path string
	uid  int // the only peer uid served
}

func (l *socketListener) remove() {
	_ = l.Close()
	_ = os.Remove(l.path)
}

// listenSocket creates the socket at path mode 0600, in a directory only
// this user can open (made 0700 when missing). A stale socket nobody listens
// on is replaced; a live one, or a file that is not a socket, is an error.
func listenSocket(path string) (*socketListener, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	show := text.Sanitize(path) // as the errors name it
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the socket's directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return nil, text.Errorf("the socket's directory %s belongs to uid %d, not you; use a directory of your own", dir, st.Uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, text.Errorf("the socket's directory %s is open to other users (mode %04o); use one only you can open (chmod 700 %s)", dir, perm, text.ShellQuote(dir))
	}
	if err := checkParents(dir, uid, "the socket's directory"); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, text.Errorf("%s exists and is not a socket; remove it or name another path", show)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, text.Errorf("%s: another server already listens on it", show)
		}
		if err := os.Remove(path); err != nil {
			return nil, text.Errorf("removing the stale socket %s: %w", show, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	old := unix.Umask(0o177) // the socket is born 0600: no moment open to others
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, text.Errorf("listening on %s: %w", show, unwrapExecError(err))
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return &socketListener{UnixListener: ln, path: path, uid: uid}, nil
}

// checkParents refuses a socket directory whose parents another user could
// change, as ssh checks the directories above authorized_keys: each must
// belong to root or to uid and not be writable by group or others (another
// user could rename the socket's directory away and put one of theirs in
// its place). A sticky directory owned by root, such as /tmp, is safe: only
// a directory's owner can rename it there. what names the path checked in
// the error ("the socket's directory").
func checkParents(dir string, uid int, what string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		if err := checkDirOwner(d, uid, what+" is inside"); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// checkDirOwner refuses a directory d that belongs to another user than
// uid or root, or that group or others can write, unless it is sticky and
// root's; what is said before it ("token file F", "the socket's directory
// is inside").
func checkDirOwner(d string, uid int, what string) error {
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	owner, perm := int(st.Uid), fi.Mode().Perm()
	sticky := fi.Mode()&os.ModeSticky != 0 && owner == 0
	switch {
	case owner != 0 && owner != uid:
		return text.Errorf("%s %s, which belongs to uid %d; use a directory of your own", what, d, owner)
	case perm&0o022 != 0 && !sticky:
		return text.Errorf("%s %s, which other users can write (mode %04o); use a directory only you or root can change (chmod go-w %s)", what, d, perm, text.ShellQuote(d))
	}
	return nil
}

// peerCred is the uid and pid of the process at the other end, as it
// connected (SO_PEERCRED): the uid decides whether it is served, the pid
// which client its connection counts against.
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// pendingBytes is how many bytes the peer sent that nobody read yet
// (SIOCINQ); -1 when it cannot be told.
func pendingBytes(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	n, ierr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil || ierr != nil {
		return -1
	}
	return n
}
