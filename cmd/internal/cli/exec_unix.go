//go:build unix

package cli

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwardedSignals are passed on to exec's command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// fromOwnTerminal reports whether sig was most likely sent by the
// controlling terminal to its whole foreground process group (ctrl+c, a
// hangup), which holds exec's command too: passing it on would deliver it
// twice, and many programs treat a second ctrl+c as "stop now, skip the
// cleanup". SIGTERM never comes from the terminal.
func fromOwnTerminal(sig os.Signal) bool {
	if sig != syscall.SIGINT && sig != syscall.SIGHUP {
		return false
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal: someone sent it with kill
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}
