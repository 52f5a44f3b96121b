//go:build !linux

package etcdtest

import "syscall"

// memberProcAttr: elsewhere etcd members are killed by Close only.
func memberProcAttr() *syscall.SysProcAttr { return nil }
