package etcdtest

import "syscall"

// memberProcAttr starts an etcd member in its own process group, killed
// with the test binary (Linux: the parent's death signal).
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
