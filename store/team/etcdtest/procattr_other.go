//go:build !linux

package etcdtest

import "syscall"

// memberProcAttr: outside Linux there is no parent-death signal; Close kills
// the members (a killed test run may leave them behind).
func memberProcAttr() *syscall.SysProcAttr { return nil }
