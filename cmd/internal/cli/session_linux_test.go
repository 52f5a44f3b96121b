//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/shipkey/shipkey/auth/authtest"
)

// These tests run the real binary as a user would on a machine without an OS
// keyring: the file backend, unlocked once per session (kernel keyring or
// shipkey agent), derived once for all processes, asked for on a terminal
// (a pty) with the reason first, and no secret variable handed to a child.

const (
	sessPassword     = "sess-password-5d1e"
	sessClientSecret = "sess-secret-a8c2"
	sessPassphrase   = "sess-passphrase-77b0"
)

// sessEnv is one user's world: its own directories, an authtest realm, a
// fake dbus-launch on PATH that records its environment and fails (so the
// keyring probe finds no keyring), and the unlock mechanism under test.
type sessEnv struct {
	t      *testing.T
	bin    string
	dir    string
	srv    *authtest.Server
	env    []string
	record string // where the fake helpers write their environment
}

func newSessEnv(t *testing.T, bin, mech string) *sessEnv {
	t.Helper()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	fake := filepath.Join(dir, "fakebin")
	record := filepath.Join(dir, "record")
	for _, d := range []string{run, fake, record} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf("#!/bin/sh\nenv > %q/$(basename \"$0\").$$\nexit 1\n", record)
	for _, name := range []string{"dbus-launch", "xclip", "xsel", "wl-copy"} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := authtest.NewServer(authtest.Config{
		Users:      []authtest.User{{Username: "alice", Password: sessPassword}},
		Clients:    []authtest.Client{{ID: "shipping-api", Secret: sessClientSecret}},
		AccessTTL:  10 * time.Minute,
		RefreshTTL: time.Hour,
	})
	t.Cleanup(srv.Close)
	e := &sessEnv{t: t, bin: bin, dir: dir, srv: srv, record: record, env: []string{
		"PATH=" + fake + ":" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + run,
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + e2state(dir),
		"SHIPKEY_SECRETS=file",
		"SHIPKEY_UNLOCK_MECH=" + mech,
		"TERM=xterm",
	}}
	// Leave no unlock behind: the kernel keyring entry, the agent.
	t.Cleanup(func() { e.run(nil, "lock") })
	return e
}

func e2state(dir string) string { return filepath.Join(dir, "state") }

func (e *sessEnv) stateDir() string { return e2state(e.dir) }

type sessResult struct {
	stdout, stderr string
	code           int
}

func (e *sessEnv) command(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(append([]string{}, e.env...), extra...)
	return cmd
}

// run runs shipkey with stdin from /dev/null.
func (e *sessEnv) run(extra []string, args ...string) sessResult {
	ctx, cancel := context.WithTimeout(context.Background(), patience(2*time.Minute))
	defer cancel()
	cmd := e.command(ctx, extra, args...)
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	r := sessResult{stdout: o.String(), stderr: er.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		e.t.Fatalf("shipkey %v: %v", args, err)
	}
	return r
}

func (e *sessEnv) keysNew(label string, withPassphrase bool) sessResult {
	return e.keysNewWith(nil, label, withPassphrase)
}

// keysNewDebug is keysNew with --debug: its stderr says when it derives.
func (e *sessEnv) keysNewDebug(label string, withPassphrase bool) sessResult {
	return e.keysNewWith([]string{"--debug"}, label, withPassphrase)
}

func (e *sessEnv) keysNewWith(flags []string, label string, withPassphrase bool) sessResult {
	extra := []string{"SHIPKEY_CLIENT_SECRET=" + sessClientSecret, "SHIPKEY_PASSWORD=" + sessPassword}
	if withPassphrase {
		extra = append(extra, "SHIPKEY_PASSPHRASE="+sessPassphrase)
	}
	args := append(flags, "keys", "new", "--label", label, "--auth-url", e.srv.URL(),
		"--client-id", "shipping-api", "--username", "alice")
	return e.run(extra, args...)
}

// mechanisms are the unlock mechanisms this machine can test.
func mechanisms(t *testing.T) []string {
	if kernelKeyringWorks() {
		return []string{"kernel", "agent"}
	}
	t.Log("keyctl does not answer here: only the agent is tested")
	return []string{"agent"}
}

// agentPID returns the pid of the agent serving the store of e (SO_PEERCRED
// of its socket), or 0 when none answers.
func (e *sessEnv) agentPID() int {
	socks, _ := filepath.Glob(filepath.Join(e.dir, "run", "shipkey-agent", "agent-*.sock"))
	for _, s := range socks {
		c, err := net.DialTimeout("unix", s, time.Second)
		if err != nil {
			continue
		}
		defer c.Close()
		raw, err := c.(*net.UnixConn).SyscallConn()
		if err != nil {
			continue
		}
		var cred *unix.Ucred
		_ = raw.Control(func(fd uintptr) { cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
		if cred != nil {
			return int(cred.Pid)
		}
	}
	return 0
}

func TestSessionBinary(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)

	// After one unlock every process gets the key without a prompt and
	// without SHIPKEY_PASSPHRASE; after shipkey lock they fail with a clear
	// line (no terminal here).
	t.Run("UnlockOnce", func(t *testing.T) {
		t.Parallel()
		for _, mech := range mechanisms(t) {
			t.Run(mech, func(t *testing.T) {
				t.Parallel()
				e := newSessEnv(t, bin, mech)
				if r := e.keysNew("k", true); r.code != 0 {
					t.Fatalf("keys new: exit %d: %s", r.code, r.stderr)
				}
				if n := e.keyWorkFactor(); n != testWorkFactor {
					t.Fatalf("buildShipkey's secrets.key.age: scrypt work factor %d, want %d", n, testWorkFactor)
				}
				for i := range 2 {
					r := e.run(nil, "token", "k")
					if r.code != 0 || !strings.HasPrefix(r.stdout, "eyJ") {
						t.Fatalf("token %d without a passphrase after the unlock: exit %d, %q", i, r.code, r.stderr)
					}
				}
				if r := e.run(nil, "unlock"); r.code != 0 || !strings.Contains(r.stderr, "already unlocked") {
					t.Fatalf("unlock when unlocked: exit %d, %q", r.code, r.stderr)
				}
				if mech == "agent" && e.agentPID() == 0 {
					t.Fatal("no agent answers after the unlock")
				}
				if r := e.run(nil, "lock"); r.code != 0 || !strings.Contains(r.stderr, "locked") {
					t.Fatalf("lock: exit %d, %q", r.code, r.stderr)
				}
				r := e.run(nil, "token", "k")
				if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no terminal to ask its passphrase on") ||
					!strings.Contains(r.stderr, "shipkey unlock") || strings.Count(r.stderr, "\n") != 1 {
					t.Fatalf("token after lock: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
				}
				if mech == "agent" {
					if !eventually(2*time.Second, func() bool { return e.agentPID() == 0 }) {
						t.Fatal("the agent still answers after shipkey lock")
					}
				}
				// shipkey unlock ahead of scripts, then scripts need nothing.
				if r := e.run([]string{"SHIPKEY_PASSPHRASE=" + sessPassphrase}, "unlock"); r.code != 0 || !strings.Contains(r.stderr, "unlocked for 10m") {
					t.Fatalf("unlock: exit %d, %q", r.code, r.stderr)
				}
				if r := e.run(nil, "token", "k"); r.code != 0 {
					t.Fatalf("token after unlock: exit %d, %q", r.code, r.stderr)
				}
			})
		}
	})

	// Twelve cold processes on a fresh encrypted store: one derives (here:
	// creates and wraps) the key, the others wait on unlock.lock and use the
	// published one. Each process's debug log (--debug) says when it runs
	// scrypt: exactly one line among all twelve.
	// The build users get: the real cost of a derivation is what is counted.
	t.Run("DeriveOnce", func(t *testing.T) {
		t.Parallel()
		bin := buildShipkeyRealScrypt(t)
		for _, mech := range mechanisms(t) {
			t.Run(mech, func(t *testing.T) {
				t.Parallel()
				e := newSessEnv(t, bin, mech)
				const procs = 12
				results := make([]sessResult, procs)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range procs {
					wg.Go(func() {
						<-start
						results[i] = e.keysNewDebug(fmt.Sprintf("k%02d", i), true)
					})
				}
				close(start)
				wg.Wait()
				derived := 0
				for i, r := range results {
					if r.code != 0 {
						t.Errorf("process %d: exit %d: %s", i, r.code, r.stderr)
					}
					derived += strings.Count(r.stderr, "(scrypt)")
				}
				if n := e.keyWorkFactor(); n != ageDefaultWorkFactor {
					t.Errorf("secrets.key.age wrapped at scrypt work factor %d, want age's default %d", n, ageDefaultWorkFactor)
				}
				if derived != 1 {
					t.Errorf("the passphrase was derived %d times by %d processes, want once", derived, procs)
				}
				r := e.run(nil, "keys", "list", "--json")
				var keys []keyJSON
				if err := json.Unmarshal([]byte(r.stdout), &keys); err != nil || len(keys) != procs {
					t.Fatalf("keys list: %d keys (%v): %s", len(keys), err, r.stderr)
				}
				// And every one has its secrets.
				for i := range procs {
					if r := e.run(nil, "token", fmt.Sprintf("k%02d", i)); r.code != 0 {
						t.Errorf("token k%02d: exit %d: %s", i, r.code, r.stderr)
					}
				}
			})
		}
	})

	// No process shipkey starts gets SHIPKEY_PASSWORD, SHIPKEY_CLIENT_SECRET
	// or SHIPKEY_PASSPHRASE: not the agent; and without a D-Bus address the
	// auto backend's keyring probe starts no dbus-launch at all.
	t.Run("ChildEnvironment", func(t *testing.T) {
		t.Parallel()
		e := newSessEnv(t, bin, "agent")
		extra := []string{
			"SHIPKEY_SECRETS=auto", // no D-Bus address: the file, without asking the keyring
			"SHIPKEY_CLIENT_SECRET=" + sessClientSecret, "SHIPKEY_PASSWORD=" + sessPassword,
			"SHIPKEY_PASSPHRASE=" + sessPassphrase,
		}
		r := e.run(extra, "keys", "new", "--label", "k", "--auth-url", e.srv.URL(), "--client-id", "shipping-api", "--username", "alice")
		if r.code != 0 || !strings.Contains(r.stderr, "no OS keyring available") {
			t.Fatalf("keys new: exit %d: %s", r.code, r.stderr)
		}
		if recs, _ := filepath.Glob(filepath.Join(e.record, "dbus-launch.*")); len(recs) != 0 {
			t.Fatalf("the auto backend started dbus-launch %d times without a D-Bus address", len(recs))
		}
		var envs []string
		pid := e.agentPID()
		if pid == 0 {
			t.Fatal("no agent answers")
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if errors.Is(err, os.ErrPermission) {
			t.Log("the agent's environment is not readable here (not dumpable); only dbus-launch is checked")
		} else if err != nil {
			t.Fatal(err)
		} else {
			envs = append(envs, strings.ReplaceAll(string(data), "\x00", "\n"))
		}
		for _, env := range envs {
			for _, name := range []string{"SHIPKEY_PASSWORD", "SHIPKEY_CLIENT_SECRET", "SHIPKEY_PASSPHRASE"} {
				if strings.Contains(env, name) {
					t.Errorf("a child inherited %s", name)
				}
			}
			for _, s := range []string{sessPassword, sessClientSecret, sessPassphrase} {
				if strings.Contains(env, s) {
					t.Errorf("a child's environment holds a secret")
				}
			}
		}
	})

	// Prompts on a terminal: the reason before the prompt, a new passphrase
	// asked twice, ctrl+c exits 130 and ctrl+d exits 1 with nothing made.
	t.Run("Prompts", func(t *testing.T) {
		t.Parallel()
		t.Run("WhyThenConfirm", func(t *testing.T) {
			t.Parallel()
			e := newSessEnv(t, bin, "auto")
			p := e.startPTY(t, []string{"SHIPKEY_SECRETS=auto"}, "unlock")
			out := p.waitFor("New passphrase for ")
			why := strings.Index(out, "no OS keyring available (")
			if why < 0 || why > strings.Index(out, "New passphrase for ") || !strings.Contains(out, "encrypted with a passphrase") {
				t.Fatalf("no reason before the prompt:\n%s", out)
			}
			p.send("first-try\r")
			p.waitFor("Repeat the new passphrase: ")
			p.send("second-try\r")
			p.waitFor("the passphrases do not match; try again")
			if _, err := os.Stat(filepath.Join(e.stateDir(), "secrets.key.age")); err == nil {
				t.Fatal("a key file exists before the passphrase was confirmed")
			}
			p.waitFor("New passphrase for ")
			p.send(sessPassphrase + "\r")
			p.waitFor("Repeat the new passphrase: ")
			p.send(sessPassphrase + "\r")
			if code := p.wait(); code != 0 {
				t.Fatalf("exit %d:\n%s", code, p.output())
			}
			if !strings.Contains(p.output(), "unlocked for") {
				t.Fatalf("no unlock said:\n%s", p.output())
			}
			if strings.Contains(p.output(), sessPassphrase) || strings.Contains(p.output(), "first-try") {
				t.Fatal("a passphrase was echoed")
			}
			// It is the confirmed passphrase that unlocks.
			e.run(nil, "lock")
			if r := e.run([]string{"SHIPKEY_PASSPHRASE=" + sessPassphrase}, "unlock"); r.code != 0 {
				t.Fatalf("unlock with the confirmed passphrase: exit %d: %s", r.code, r.stderr)
			}
		})
		t.Run("AppOnAnEmptyStoreAsksNothing", func(t *testing.T) {
			t.Parallel()
			e := newSessEnv(t, bin, "auto")
			p := e.startPTY(t, nil) // no key: the app opens on Get API Key, nothing asked first
			out := p.waitFor("Get API Key")
			if strings.Contains(out, "assphrase") {
				t.Fatalf("a passphrase was asked before the first frame:\n%s", out)
			}
			p.send("\x03")
			p.wait()
			e.assertNothingMade(t)
		})
		t.Run("CtrlCInTheApp", func(t *testing.T) {
			t.Parallel()
			e := newSessEnv(t, bin, "auto")
			if r := e.keysNew("k", true); r.code != 0 {
				t.Fatalf("keys new: exit %d: %s", r.code, r.stderr)
			}
			e.run(nil, "lock")
			p := e.startPTY(t, nil) // a store with a key: asked before the first frame
			p.waitFor("Passphrase for ")
			p.send("half\x03")
			if code := p.wait(); code != 130 {
				t.Fatalf("ctrl+c: exit %d, want 130:\n%s", code, p.output())
			}
		})
		t.Run("CtrlD", func(t *testing.T) {
			t.Parallel()
			e := newSessEnv(t, bin, "auto")
			p := e.startPTY(t, nil, "unlock")
			p.waitFor("New passphrase for ")
			p.send("\x04")
			if code := p.wait(); code != 1 {
				t.Fatalf("ctrl+d: exit %d, want 1:\n%s", code, p.output())
			}
			if !strings.Contains(p.output(), "no passphrase was given") {
				t.Fatalf("no clear line:\n%s", p.output())
			}
			e.assertNothingMade(t)
		})
	})
}

// ageDefaultWorkFactor is the scrypt work factor age wraps with unless told
// otherwise (log2 N: 256 MiB).
const ageDefaultWorkFactor = 18

// keyWorkFactor returns the scrypt work factor that the store's
// secrets.key.age is wrapped with, from its age header
// ("-> scrypt SALT LOGN").
func (e *sessEnv) keyWorkFactor() int {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.stateDir(), "secrets.key.age"))
	if err != nil {
		e.t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "->" && f[1] == "scrypt" {
			n, err := strconv.Atoi(f[3])
			if err != nil {
				e.t.Fatalf("secrets.key.age: scrypt stanza %q", line)
			}
			return n
		}
	}
	e.t.Fatalf("secrets.key.age has no scrypt stanza:\n%s", data)
	return 0
}

func (e *sessEnv) assertNothingMade(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(e.stateDir())
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), "secrets") || strings.Contains(de.Name(), ".tmp-") {
			t.Errorf("left behind: %s", de.Name())
		}
	}
}

// ptyRun is shipkey on a pseudo-terminal.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	buf  bytes.Buffer // everything the terminal showed
	pos  int          // where waitFor looks next
	done chan struct{}
}

func (e *sessEnv) startPTY(t *testing.T, extra []string, args ...string) *ptyRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience(time.Minute))
	t.Cleanup(cancel)
	cmd := e.command(ctx, extra, args...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyRun{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			p.mu.Lock()
			p.buf.Write(b[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
	})
	return p
}

func (p *ptyRun) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// waitFor polls the output after the previous match for s (bounded) and
// returns the output from the previous match up to and including this one.
func (p *ptyRun) waitFor(s string) string {
	p.t.Helper()
	for end := time.Now().Add(patience(10 * time.Second)); time.Now().Before(end); {
		p.mu.Lock()
		full := p.buf.String()
		if idx := strings.Index(full[p.pos:], s); idx >= 0 {
			from := p.pos
			p.pos += idx + len(s)
			p.mu.Unlock()
			return full[from:p.pos]
		}
		p.mu.Unlock()
		time.Sleep(25 * time.Millisecond)
	}
	p.t.Fatalf("waited for %q; the terminal shows:\n%s", s, p.output())
	return ""
}

func (p *ptyRun) send(s string) {
	p.t.Helper()
	if _, err := p.tty.WriteString(s); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the exit and returns the exit code.
func (p *ptyRun) wait() int {
	p.t.Helper()
	err := p.cmd.Wait()
	select {
	case <-p.done:
	case <-time.After(patience(5 * time.Second)):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0
}
