//go:build unix

package cli

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// The real binary against damaged and crashed stores: a fault while bbolt
// reads a truncated state.db is a SIGBUS, which only a separate process can
// show, and kill -9 is only real for a process.

// integrityRig is one store and one realm for the binary.
type integrityRig struct {
	t        *testing.T
	bin      string
	srv      *authtest.Server
	env      []string
	cfgDir   string
	stateDir string
}

const (
	rigPassword     = "integrity-password-41c9"
	rigClientSecret = "integrity-secret-7d02"
)

func newIntegrityRig(t *testing.T, backend string) *integrityRig {
	t.Helper()
	srv := authtest.NewServer(authtest.Config{
		Users:      []authtest.User{{Username: "alice", Password: rigPassword}},
		Clients:    []authtest.Client{{ID: "shipping-api", Secret: rigClientSecret}},
		AccessTTL:  time.Hour,
		RefreshTTL: 2 * time.Hour,
	})
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	r := &integrityRig{
		t: t, bin: buildShipkey(t), srv: srv,
		cfgDir: filepath.Join(dir, "config"), stateDir: filepath.Join(dir, "state"),
	}
	r.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"SHIPKEY_CONFIG_DIR=" + r.cfgDir,
		"SHIPKEY_STATE_DIR=" + r.stateDir,
		"SHIPKEY_SECRETS=" + backend,
		"SHIPKEY_PASSPHRASE=integrity-passphrase",
		"SHIPKEY_CLIENT_SECRET=" + rigClientSecret,
		"SHIPKEY_PASSWORD=" + rigPassword,
	}
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = r.run("lock") })
	return r
}

func (r *integrityRig) command(args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env
	return cmd
}

// run runs shipkey and returns stdout, stderr and the exit code.
func (r *integrityRig) run(args ...string) (string, string, int) {
	cmd := r.command(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(patience(60 * time.Second)):
		_ = cmd.Process.Kill()
		<-done
		r.t.Fatalf("shipkey %v did not finish", args)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

func (r *integrityRig) newKey(label string) {
	r.t.Helper()
	if _, stderr, code := r.run("keys", "new", "--label", label, "--auth-url", r.srv.URL(), "--client-id", "shipping-api", "--username", "alice"); code != 0 {
		r.t.Fatalf("keys new %s: exit %d: %s", label, code, stderr)
	}
}

// noCrashDump fails when stderr shows a Go crash or more than one line.
func noCrashDump(t *testing.T, what, stderr string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "SIGBUS", "panic", "runtime."} {
		if strings.Contains(stderr, bad) {
			t.Fatalf("%s: a crash dump:\n%s", what, stderr)
		}
	}
}

// TestTruncatedStateDBBinary: every command on a truncated state.db (the
// audit's 8192 and 12288 bytes of a 32 KiB file, and every other page
// boundary) works, says once that the file was damaged and set aside, and
// token and status agree.
func TestTruncatedStateDBBinary(t *testing.T) {
	t.Parallel()
	r := newIntegrityRig(t, "plaintext")
	r.newKey("k")
	r.newKey("other")
	tok, stderr, code := r.run("token", "k")
	if code != 0 {
		t.Fatalf("token: %d %s", code, stderr)
	}
	dbPath := filepath.Join(r.stateDir, "state.db")
	whole, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	cuts := []int{8192, 12288}
	for off := 4096; off < len(whole); off += 4096 {
		if off != 8192 && off != 12288 {
			cuts = append(cuts, off)
		}
	}
	for i, cut := range cuts {
		if err := os.WriteFile(dbPath, whole[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		cmds := [][]string{{"token", "k"}, {"status"}, {"keys", "list"}}
		// Every command, each on a freshly cut file.
		first := cmds[i%len(cmds)]
		out, stderr, code := r.run(first...)
		what := strings.Join(first, " ") + " on state.db cut at " + strconv.Itoa(cut)
		noCrashDump(t, what, stderr)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", what, code, stderr)
		}
		if n := strings.Count(stderr, "was damaged"); n > 1 || strings.Count(stderr, "\n") > 1 {
			t.Fatalf("%s: not one line: %q", what, stderr)
		}
		if first[0] == "token" && out != tok {
			t.Fatalf("%s: another token", what)
		}
		// status and token agree afterwards.
		if _, stderr, code := r.run("status", "k"); code != 0 {
			t.Fatalf("%s: status then: exit %d: %s", what, code, stderr)
		}
		if out, stderr, code := r.run("token", "k"); code != 0 || out != tok {
			t.Fatalf("%s: token then: exit %d: %s", what, code, stderr)
		}
	}
	if aside, _ := filepath.Glob(dbPath + ".damaged-*"); len(aside) == 0 {
		t.Fatal("no damaged state.db was set aside")
	}
}

// keyIDs are the ids of the keys config.toml lists.
func keyIDs(t *testing.T, cfgDir string) map[string]bool {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(cfgDir, "config.toml"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^id\s*=\s*['"]([^'"]+)['"]`).FindAllStringSubmatch(string(cfg), -1) {
		ids[m[1]] = true
	}
	return ids
}

// rmKilledAtItsFirstWrite runs `keys rm --yes label` (a key whose id is
// id, with its secret file at secret) and kills it (-9) the moment its
// first write is seen: the secret file gone or config.toml no longer
// naming the key, whichever comes first. That is between its two commits
// whatever their order, the instant a random kill rarely hits. It reports
// whether the kill came while the command still ran.
func (r *integrityRig) rmKilledAtItsFirstWrite(label, id, secret string) bool {
	r.t.Helper()
	cmd := r.command("keys", "rm", "--yes", label)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	cfg := filepath.Join(r.cfgDir, "config.toml")
	for end := time.Now().Add(patience(30 * time.Second)); time.Now().Before(end); {
		select {
		case <-done:
			return false
		default:
		}
		_, err := os.Stat(secret)
		b, _ := os.ReadFile(cfg)
		if os.IsNotExist(err) || (len(b) > 0 && !strings.Contains(string(b), id)) {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled()
		}
	}
	_ = cmd.Process.Kill()
	<-done
	r.t.Fatalf("keys rm %s wrote nothing in %v", label, patience(30*time.Second))
	return false
}

// TestKillNineLeavesNothingBehind kills `keys new`, `keys rm` and `token` at
// random instants, and `keys rm` at its first write (between its commits);
// after the next holder of the store lock (`keys default`, once what was
// left is older than the sweep's age) there is no orphaned secret file, no
// temporary file and no key without its secrets, and the store opens.
func TestKillNineLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"plaintext", "file"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := newIntegrityRig(t, backend)
			r.newKey("k")
			rng := rand.New(rand.NewPCG(9, uint64(len(backend))))
			const rounds = 12
			for i := range rounds {
				for _, args := range [][]string{
					{"keys", "new", "--label", "n" + strconv.Itoa(i), "--auth-url", r.srv.URL(), "--client-id", "shipping-api", "--username", "alice"},
					{"keys", "rm", "--yes", "n" + strconv.Itoa(i-1)},
					{"token", "k"},
				} {
					cmd := r.command(args...)
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
					_ = cmd.Process.Signal(syscall.SIGKILL)
					_ = cmd.Wait()
				}
			}
			// keys rm killed between its commits, each time: the definition
			// must go first (a kill then leaves secrets no key names, which
			// the sweep takes), never the secrets (a key listed without them).
			secretsDir := filepath.Join(r.stateDir, map[string]string{"plaintext": "plaintext.d", "file": "secrets.d"}[backend])
			ext := map[string]string{"plaintext": ".json", "file": ".age"}[backend]
			killed := 0
			for i := range 4 {
				label := "rm" + strconv.Itoa(i)
				before := keyIDs(t, r.cfgDir)
				r.newKey(label)
				id := ""
				for k := range keyIDs(t, r.cfgDir) {
					if !before[k] {
						id = k
					}
				}
				secret := filepath.Join(secretsDir, id+ext)
				if _, err := os.Stat(secret); id == "" || err != nil {
					t.Fatalf("key %s (id %q): no secret file %s: %v", label, id, secret, err)
				}
				if r.rmKilledAtItsFirstWrite(label, id, secret) {
					killed++
				}
			}
			if killed == 0 {
				t.Fatal("no keys rm was killed while it ran: every one finished before its first write was seen")
			}

			// Beside whatever the kills left, exactly what a kill in the
			// worst window leaves: a `keys new` killed after its secret file
			// and before config.toml, and a write killed before its rename.
			entries, err := os.ReadDir(secretsDir)
			if err != nil || len(entries) == 0 {
				t.Fatalf("no secret files: %v", err)
			}
			data, err := os.ReadFile(filepath.Join(secretsDir, entries[0].Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"00000000deadbeef" + ext, ".00000000deadbeef" + ext + ".tmp-424242"} {
				if err := os.WriteFile(filepath.Join(secretsDir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// What the kills left is older than the sweep's age now.
			old := time.Now().Add(-5 * time.Minute)
			for _, root := range []string{r.cfgDir, r.stateDir} {
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err == nil {
						_ = os.Chtimes(p, old, old)
					}
					return nil
				})
			}
			if _, stderr, code := r.run("token", "k"); code != 0 {
				t.Fatalf("token after the kills: exit %d: %s", code, stderr)
			}
			if _, stderr, code := r.run("keys", "default", "k"); code != 0 {
				t.Fatalf("keys default after the kills: exit %d: %s", code, stderr)
			}
			ids := keyIDs(t, r.cfgDir)
			if len(ids) == 0 {
				t.Fatal("no key ids in config.toml")
			}
			withSecrets := map[string]bool{}
			for _, root := range []string{r.cfgDir, r.stateDir} {
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return nil
					}
					name := d.Name()
					if strings.Contains(name, ".tmp-") {
						t.Errorf("temporary file left: %s", p)
					}
					if dir := filepath.Base(filepath.Dir(p)); dir == "secrets.d" || dir == "plaintext.d" {
						id := strings.TrimSuffix(strings.TrimSuffix(name, ".age"), ".json")
						withSecrets[id] = true
						if !ids[id] {
							t.Errorf("orphaned secret file: %s", p)
						}
					}
					return nil
				})
			}
			// No key is listed without its secrets (a `keys rm` killed
			// between its commits must not leave one).
			for id := range ids {
				if !withSecrets[id] {
					t.Errorf("key %s is in config.toml without its secret file", id)
				}
			}
			if _, stderr, code := r.run("keys", "list"); code != 0 {
				t.Fatalf("keys list after the kills: exit %d: %s", code, stderr)
			}
		})
	}
}

// TestForeignStoreBinary: shipkey run as root on a store that belongs to
// another user (sudo -E) refuses it in one line naming the owner and the
// file, and leaves no root-owned file behind.
func TestForeignStoreBinary(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root (CI runs as root)")
		}
		t.Skip("needs root to give the store to another user")
	}
	r := newIntegrityRig(t, "plaintext")
	r.newKey("k")
	for _, dir := range []string{r.cfgDir, r.stateDir} {
		if out, err := exec.Command("chown", "-R", "65534:65534", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	for _, args := range [][]string{{"token", "k"}, {"keys", "list"}, {"status"},
		{"keys", "new", "--label", "x", "--auth-url", r.srv.URL(), "--client-id", "shipping-api", "--username", "alice"}} {
		_, stderr, code := r.run(args...)
		noCrashDump(t, args[0], stderr)
		if code != 1 || !strings.Contains(stderr, "belongs to") || !strings.Contains(stderr, "uid 65534") || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("%v on another user's store: exit %d: %q", args, code, stderr)
		}
	}
	for _, root := range []string{r.cfgDir, r.stateDir} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 65534 {
					t.Errorf("%s is owned by uid %d", p, st.Uid)
				}
			}
			return nil
		})
	}
}
