//go:build unix

package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShipkeyLinksNoTeamEngine: the shipkey program links no etcd client,
// gRPC or protobuf (their package inits cost every call more than the rest
// of a cached token); shipkey-team does.
func TestShipkeyLinksNoTeamEngine(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	deps := func(pkg string) string {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return string(out)
	}
	heavy := []string{"go.etcd.io/etcd/client/v3\n", "google.golang.org/grpc\n", "google.golang.org/protobuf/"}
	lean := deps(shipkeyPkg)
	for _, h := range heavy {
		if strings.Contains(lean, h) {
			t.Errorf("%s links %s: whatever imports it must move behind team.Engine (store/team/etcdteam)", shipkeyPkg, strings.TrimSpace(h))
		}
	}
	if full := deps(shipkeyTeamPkg); !strings.Contains(full, heavy[0]) {
		t.Errorf("%s does not link the etcd client: team keys would not work", shipkeyTeamPkg)
	}
}

// handOffRig is the shipkey binary in a directory of its own, beside a
// stand-in shipkey-team that records how it was started.
type handOffRig struct {
	*integrityRig
	record string // what the stand-in wrote: its arguments, then its environment
}

func newHandOffRig(t *testing.T, withTeamBinary bool) *handOffRig {
	t.Helper()
	r := &handOffRig{integrityRig: newIntegrityRig(t, "plaintext")}
	dir := t.TempDir()
	bin := filepath.Join(dir, "shipkey")
	linkOrCopy(t, r.bin, bin)
	r.bin = bin
	r.record = filepath.Join(dir, "record")
	if withTeamBinary {
		script := "#!/bin/sh\n{ printf 'ARGS'; printf ' [%s]' \"$@\"; echo; env; } >" + r.record + "\necho from-team-binary\n"
		if err := os.WriteFile(filepath.Join(dir, TeamBinary), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// No shipkey-team on PATH either: only the one beside shipkey counts.
	for i, kv := range r.env {
		if strings.HasPrefix(kv, "PATH=") {
			r.env[i] = "PATH=/usr/bin:/bin"
		}
	}
	return r
}

// linkOrCopy puts the binary at to: a hard link (a copy written while other
// tests fork would be "text file busy" for a moment), else a copy.
func linkOrCopy(t *testing.T, from, to string) {
	t.Helper()
	if os.Link(from, to) == nil {
		return
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// handedOff returns what the stand-in recorded, "" when it never ran.
func (r *handOffRig) handedOff() string {
	b, err := os.ReadFile(r.record)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		r.t.Fatal(err)
	}
	_ = os.Remove(r.record)
	return string(b)
}

// TestHandOffToTeamBinary: shipkey runs local keys itself and hands every
// command that needs the team engine, whole, to the shipkey-team beside it:
// same arguments, same streams, and the secret variables shipkey took out of
// its own environment given back.
func TestHandOffToTeamBinary(t *testing.T) {
	t.Parallel()
	r := newHandOffRig(t, true)
	r.newKey("local")
	for _, args := range [][]string{{"token", "local"}, {"status"}, {"keys", "list"}, {"team", "ls"}} {
		if _, stderr, code := r.run(args...); code != 0 {
			t.Fatalf("shipkey %v: exit %d: %s", args, code, stderr)
		}
		if rec := r.handedOff(); rec != "" {
			t.Fatalf("shipkey %v handed off to %s, though no team is involved:\n%s", args, TeamBinary, rec)
		}
	}

	stdout, stderr, code := r.run("team", "init", "ops", "--etcd", "http://127.0.0.1:9")
	if code != 0 || stdout != "from-team-binary\n" {
		t.Fatalf("team init: exit %d, stdout %q, stderr %q: not the team binary's", code, stdout, stderr)
	}
	rec := r.handedOff()
	if !strings.HasPrefix(rec, "ARGS [team] [init] [ops] [--etcd] [http://127.0.0.1:9]\n") {
		t.Fatalf("shipkey-team started with:\n%s", rec)
	}
	for _, kv := range []string{"SHIPKEY_PASSWORD=" + rigPassword, "SHIPKEY_CLIENT_SECRET=" + rigClientSecret} {
		if !strings.Contains(rec, "\n"+kv+"\n") {
			t.Errorf("shipkey-team's environment lacks %s", strings.SplitN(kv, "=", 2)[0])
		}
	}

	// A machine that joined a team: the listings include team keys, so
	// they are handed off; a local key's token still is not.
	cfg := filepath.Join(r.cfgDir, "config.toml")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[[teams]]\nname = \"ops\"\netcd = [\"http://127.0.0.1:9\"]\nrecipient = \"age1qqqq\"\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{{"keys", "list"}, {"status"}, {"token", "ops/shared"}, {"logout", "ops/shared"}} {
		if _, stderr, code := r.run(args...); code != 0 {
			t.Fatalf("shipkey %v: exit %d: %s", args, code, stderr)
		}
		if rec := r.handedOff(); !strings.HasPrefix(rec, "ARGS ["+strings.Join(args, "] [")+"]\n") {
			t.Fatalf("shipkey %v on a team machine: not handed off as such:\n%s", args, rec)
		}
	}
	if _, stderr, code := r.run("token", "local"); code != 0 || r.handedOff() != "" {
		t.Fatalf("token local on a team machine: exit %d (%s), or handed off", code, stderr)
	}
}

// TestNoTeamBinary: without shipkey-team, a team command says in one line
// what is missing and how to install it; local keys work.
func TestNoTeamBinary(t *testing.T) {
	t.Parallel()
	r := newHandOffRig(t, false)
	r.newKey("local")
	_, stderr, code := r.run("team", "init", "ops", "--etcd", "http://127.0.0.1:9")
	if code != exitFailure || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, TeamBinary) || !strings.Contains(stderr, "go install") {
		t.Fatalf("team init without %s: exit %d, stderr %q", TeamBinary, code, stderr)
	}
	noCrashDump(t, "team init", stderr)
	if _, stderr, code := r.run("token", "local"); code != 0 {
		t.Fatalf("token: exit %d: %s", code, stderr)
	}
}

// TestOnlyCommandBuildsTheNamedCommand: each entry of subcommands builds the
// command its name says, so `shipkey NAME …` (which builds that one alone)
// runs the same command as the whole tree would.
func TestOnlyCommandBuildsTheNamedCommand(t *testing.T) {
	t.Parallel()
	f := newFactory(&iostreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" })
	for _, c := range subcommands {
		if got := c.build(f).Name(); got != c.name {
			t.Errorf("subcommands entry %q builds %q", c.name, got)
		}
		root := newCmdRoot(f, onlyCommand([]string{c.name, "--help"}))
		if n := len(root.Commands()); n != 1 || root.Commands()[0].Name() != c.name {
			t.Errorf("shipkey %s builds %d commands", c.name, n)
		}
	}
	if n := len(newCmdRoot(f, onlyCommand([]string{"--debug", "token"})).Commands()); n != len(subcommands) {
		t.Errorf("a command line that starts with a flag builds %d commands, want all %d", n, len(subcommands))
	}
}
