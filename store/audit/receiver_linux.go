//go:build linux

package audit

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// describe reads /proc/PID: the owner of the process's directory is its
// uid; exe, cmdline and the ssh session from its environment (readable for
// a process of this user only, which is every process served).
func describe(pid int) Receiver {
	r := Receiver{UID: -1}
	dir := "/proc/" + strconv.Itoa(pid)
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			r.UID = int(st.Uid)
		}
	}
	r.Exe, _ = os.Readlink(dir + "/exe")
	if b, err := os.ReadFile(dir + "/cmdline"); err == nil && len(b) > 0 {
		b = bytes.TrimSuffix(b, []byte{0})
		for a := range bytes.SplitSeq(b, []byte{0}) {
			r.Cmdline = append(r.Cmdline, string(a))
		}
	}
	if pid != os.Getpid() && pid != os.Getppid() {
		if b, err := os.ReadFile(dir + "/environ"); err == nil {
			r.SSH = sshSession(envOf(b))
		}
	}
	return r
}
