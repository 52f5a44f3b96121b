//go:build !unix

package cli

import (
	"os"
	"syscall"
)

// signalPid sends sig to the process pid; outside Unix only a kill goes
// through (os.Process.Signal), which is all these tests can ask there.
func signalPid(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}
