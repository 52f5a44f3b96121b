//go:build !linux

package cli

// noCoreDump has no portable equivalent of Linux's PR_SET_DUMPABLE here.
func noCoreDump() {}
