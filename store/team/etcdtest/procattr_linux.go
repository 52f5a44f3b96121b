package etcdtest

import "syscall"

// memberProcAttr puts an etcd member in its own process group and has the
// kernel kill it when the test process dies, so no member outlives a
// crashed or killed test run.
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
