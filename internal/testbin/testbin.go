// Package testbin builds shipkey's programs for the tests that run them as
// a user does (a process per command, terminals, signals), without linking
// them again for every test process and every run: `go build` does not
// cache a link, and linking shipkey and shipkey-team costs about 6
// CPU-seconds.
//
// `go run` does (Go 1.24 and later): it keeps the executable in the build
// cache under the hash of everything that went into it, so every test
// package, run and checkout with the same sources and flags links once.
// Install asks `go run -exec cp` for each program, which copies the cached
// executable (or the one just linked, which then joins the cache) to where
// the test wants it.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// Build is one build of one or more main packages.
type Build struct {
	// Packages are the import paths of the programs, put side by side into
	// one directory (shipkey finds shipkey-team beside itself).
	Packages []string
	// LDFlags is go build's -ldflags, "" for none.
	LDFlags string
}

// Install puts b's programs into dir, each named after its package's last
// element.
func Install(dir string, b Build) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build the programs under test: %w", err)
	}
	// No deadline of its own: on a new machine the first build compiles
	// all of shipkey beside the other test packages' builds, and how long
	// that takes says nothing of the code (a 5-minute bound failed every
	// test that runs the programs on a loaded machine). go test's -timeout
	// bounds the whole.
	for _, pkg := range b.Packages {
		args := []string{"run", "-exec", "cp"}
		if b.LDFlags != "" {
			args = append(args, "-ldflags="+b.LDFlags)
		}
		// go run runs `cp EXECUTABLE TARGET`.
		args = append(args, pkg, filepath.Join(dir, path.Base(pkg)))
		cmd := exec.Command(goBin, args...)
		// Static, as a release is built (.goreleaser.yaml): no dynamic
		// loader in every start.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	}
	return nil
}
