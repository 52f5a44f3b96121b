//go:build unix

package cli

import "syscall"

// signalPid sends sig to the process pid (the test helpers' children and
// shipkey processes they drive).
func signalPid(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
