//go:build !linux

package cli

import (
	"errors"
	"net"
)

// socketListener is the token socket (Linux only: peers are checked with
// SO_PEERCRED).
type socketListener struct {
	*net.UnixListener
	path string
	uid  int
}

func (l *socketListener) remove() {}

func listenSocket(string) (*socketListener, error) {
	return nil, errors.New("shipkey serve needs Linux (it checks each client's user with SO_PEERCRED)")
}

func peerCred(*net.UnixConn) (uid, pid int, err error) {
	return 0, 0, errors.New("no SO_PEERCRED here")
}

func pendingBytes(*net.UnixConn) int { return -1 }

// checkParents and checkDirOwner check nothing here (no owners to compare).
func checkParents(string, int, string) error  { return nil }
func checkDirOwner(string, int, string) error { return nil }
