//go:build !unix

package cli

import "os"

// forwardedSignals are passed on to exec's command.
var forwardedSignals = []os.Signal{os.Interrupt}

// fromOwnTerminal: without process groups to tell, every signal is passed on.
func fromOwnTerminal(os.Signal) bool { return false }
