// Package scryptcost holds the one setting that lets tests make the file
// backend's passphrase derivation cheap for the shipkey processes they run.
// Nothing a user runs sets it: a release build leaves linkedWorkFactor empty
// (.goreleaser.yaml's ldflags), no environment variable or flag reaches it,
// and store
// reads it only when wrapping a new secrets.key.age (an existing file keeps
// the work factor it was written with).
package scryptcost

import (
	"fmt"
	"strconv"
)

// WorkFactor, when non-zero, is the scrypt work factor (log2 N) of a new
// secrets.key.age in place of age's default (18: about a second and 256 MiB).
// Two kinds of test process set it:
//   - cmd/internal/cli's TestMain, in the processes its scripts run as
//     `shipkey`;
//   - a test build of the binaries, through the linker (linkedWorkFactor):
//     the tests that run built binaries (sessions, serve, tmux, kill -9)
//     check what a derivation guards and how often one runs, not what it
//     costs.
//
// BenchmarkProcess measures the cost at the default, and the test of one
// derivation per session (its 256 MiB) runs a build without it.
var WorkFactor int

// linkedWorkFactor is WorkFactor as the linker sets it in a test build:
//
//	go build -ldflags=-X=github.com/shipkey/shipkey/internal/scryptcost.linkedWorkFactor=12
//
// A string, because -X sets only strings; empty in every release.
var linkedWorkFactor string

// LinkerFlag is the -ldflags argument of a test build whose new stores are
// wrapped at work factor n.
func LinkerFlag(n int) string {
	return "-X=github.com/shipkey/shipkey/internal/scryptcost.linkedWorkFactor=" + strconv.Itoa(n)
}

func init() {
	if linkedWorkFactor == "" {
		return
	}
	n, err := strconv.Atoi(linkedWorkFactor)
	// age accepts 1-30; a build that asked for anything else is a mistake
	// of the build, not something to run with.
	if err != nil || n < 1 || n > 30 {
		panic(fmt.Sprintf("scryptcost: the linker set work factor %q, want 1-30", linkedWorkFactor))
	}
	WorkFactor = n
}
