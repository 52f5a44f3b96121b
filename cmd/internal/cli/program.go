package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/shipkey/shipkey/store/team"
)

// Package cli is shipkey's command line: the cobra commands (an options
// struct and a run function each), the interactive app's start, and how a
// command hands the team engine's work on.
//
// Two programs link it. cmd/shipkey, the one people run, links no etcd
// client: the team engine's gRPC and protobuf packages would cost every
// process about 2 ms of package initialisation before main (3× the whole run
// of a bare Go program), whatever the command, and most calls are a cached
// `shipkey token`. cmd/shipkey-team is the same command line with the team
// engine (package etcdteam). A shipkey command that needs the engine (team,
// keys new --team, a T/LABEL, a listing or the app on a machine that joined a
// team) replaces its process with shipkey-team and the same arguments
// (execve: same pid, streams, terminal and signals) before it has read stdin
// or written to stdout.

// Program is what a main package links into the command line.
type Program struct {
	// NewTeam builds the team engine; nil: a command that needs it is handed
	// to TeamBinary.
	NewTeam func(team.Options) team.Engine
}

// TeamBinary is the program with the team engine, looked for beside the
// running shipkey, then on PATH.
const TeamBinary = "shipkey-team"

// newTeamEngine is Program.NewTeam (tests set it to etcdteam.New).
var newTeamEngine func(team.Options) team.Engine

// handOff replaces the process with TeamBinary; nil when there is no
// process to replace (runWith called in a test).
var handOff func(f *factory) error

// Main runs the command line of p on os.Args and returns the exit code.
func Main(p Program) int {
	newTeamEngine = p.NewTeam
	if p.NewTeam == nil {
		handOff = execTeamBinary
	}
	takeSecretEnv()
	return run()
}

// execTeamBinary replaces this process with TeamBinary running the same
// command line; it returns only on failure.
func execTeamBinary(f *factory) error {
	if f.IO.lines != nil || f.IO.secretAsked {
		// Stdin was read: the other program would not see it again. A
		// command must ask for the engine first; this is a bug.
		return errors.New("internal error: the team engine was needed after stdin was read; please report it")
	}
	bin, err := teamBinaryPath()
	if err != nil {
		return err
	}
	env := os.Environ()
	for name, v := range takenEnv { // the secrets this process took out of its environment
		env = append(env, name+"="+v)
	}
	argv := append([]string{TeamBinary}, f.Args...)
	err = syscall.Exec(bin, argv, env)
	return fmt.Errorf("starting %s: %w", bin, err)
}

// teamBinaryPath finds TeamBinary beside the running program, then on PATH.
func teamBinaryPath() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), TeamBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(TeamBinary); err == nil {
		return p, nil
	}
	return "", &exitError{code: exitFailure, err: fmt.Errorf("team keys need %s (shipkey with the team engine) beside shipkey or on PATH: %s", TeamBinary, teamInstallHint(versionString()))}
}

// teamInstallHint says how to get TeamBinary for a shipkey of version v:
// the release archives and packages carry both programs; go install builds
// the same version; a build from a checkout ("devel") installs from there.
func teamInstallHint(v string) string {
	if v == "devel" {
		return "install it from the same checkout: go install ./cmd/" + TeamBinary
	}
	return "it comes with shipkey's release archives and packages, or: go install github.com/shipkey/shipkey/cmd/" + TeamBinary + "@" + v
}
