//go:build !windows

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// tmuxSession is the app running in a private tmux server.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) capture() string {
	s.t.Helper()
	out, err := s.tmux("capture-pane", "-p", "-t", "t")
	if err != nil {
		s.t.Fatalf("capture-pane: %v: %s", err, out)
	}
	return out
}

// waitFor polls the screen every 50 ms until cond holds, at most
// patience(limit).
func (s *tmuxSession) waitFor(what string, limit time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	var screen string
	for end := time.Now().Add(patience(limit)); ; {
		screen = s.capture()
		if cond(screen) {
			return screen
		}
		if time.Now().After(end) {
			s.t.Fatalf("timed out waiting for %s; screen:\n%s", what, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *tmuxSession) waitText(limit time.Duration, subs ...string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("%q", subs), limit, func(screen string) bool {
		for _, sub := range subs {
			if !strings.Contains(screen, sub) {
				return false
			}
		}
		return true
	})
}

// pressUntil presses key until the screen shows want, at most most times:
// one press at a time, each awaited until part(screen), the part of the
// screen that key moves, is no longer what it was. Waiting for any change
// would take text typed just before (and drawn late) for the press's effect,
// and the next press would go past want.
func (s *tmuxSession) pressUntil(key, want string, most int, part func(screen string) string) {
	s.t.Helper()
	for range most {
		screen := s.capture()
		if strings.Contains(screen, want) {
			return
		}
		before := part(screen)
		s.keys(key)
		s.waitFor("the screen after "+key, 5*time.Second, func(now string) bool { return part(now) != before })
	}
	s.waitText(5*time.Second, want)
}

// focusLine is the name of the form's field that has the focus ("› Name"),
// not its value: text typed into the field and drawn late is no move.
func focusLine(screen string) string {
	for _, line := range strings.Split(screen, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "› "); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
			return rest
		}
	}
	return ""
}

// choiceLine is the first line with a choice between arrows ("‹ GET ›").
func choiceLine(screen string) string {
	for _, line := range strings.Split(screen, "\n") {
		if strings.Contains(line, "‹ ") {
			return line
		}
	}
	return ""
}

// detailsRead waits for the token details with subs on the screen and no
// operation in flight (the header's spinner): the screen shows at once,
// from the key list, and the key's tokens come after with its read; c
// before them finds no token to copy ("log in first").
func (s *tmuxSession) detailsRead(limit time.Duration, subs ...string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("the token details read, %q", subs), limit, func(screen string) bool {
		head, _, _ := strings.Cut(screen, "\n")
		if !strings.Contains(head, "Token details") || strings.ContainsAny(head, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
			return false
		}
		for _, sub := range subs {
			if !strings.Contains(screen, sub) {
				return false
			}
		}
		return true
	})
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...); err != nil {
		s.t.Fatalf("send-keys %v: %v: %s", keys, err, out)
	}
}

// tmuxHome is a built shipkey with its config, state and home in a
// temporary folder: the app runs in tmux, the CLI beside it on the same
// store.
type tmuxHome struct {
	t   *testing.T
	dir string
	bin string
	env []string // added to the environment of the app and the CLI
}

func newTmuxHome(t *testing.T, env []string) *tmuxHome {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required in CI: apt-get install -y tmux")
		}
		t.Skip("tmux not installed (apt-get install -y tmux); skipping the real-terminal test")
	}
	dir := t.TempDir()
	bin := buildShipkey(t)
	for _, d := range []string{"config", "state", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return &tmuxHome{t: t, dir: dir, bin: bin, env: append([]string{
		"HOME=" + filepath.Join(dir, "home"),
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + filepath.Join(dir, "state"),
		"DISPLAY=", "WAYLAND_DISPLAY=", // no native clipboard: OSC 52 only
	}, env...)}
}

// config writes config.toml.
func (h *tmuxHome) config(toml string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, "config", "config.toml"), []byte(toml), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// cli runs the shipkey CLI on the same store, bounded.
func (h *tmuxHome) cli(args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(os.Environ(), h.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("shipkey %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// newKey adds a key through the CLI against srv.
func (h *tmuxHome) newKey(srv *authtest.Server, label string) {
	h.t.Helper()
	cmd := []string{"keys", "new", "--label", label, "--auth-url", srv.URL(), "--client-id", authtest.DemoClientID,
		"--username", authtest.DemoUsername}
	h.env = append(h.env, "SHIPKEY_CLIENT_SECRET="+authtest.DemoClientSecret, "SHIPKEY_PASSWORD="+authtest.DemoPassword)
	h.cli(cmd...)
}

// start runs the app with args in a private tmux server at width×height.
func (h *tmuxHome) start(width, height int, args ...string) *tmuxSession {
	t := h.t
	t.Helper()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("shipkey-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(s.stop)
	var appEnv []string
	for _, e := range h.env {
		if !strings.HasPrefix(e, "SHIPKEY_PASSWORD=") && !strings.HasPrefix(e, "SHIPKEY_CLIENT_SECRET=") {
			appEnv = append(appEnv, e)
		}
	}
	app := append(append([]string{"env"}, appEnv...), h.bin)
	app = append(app, args...)
	// tmux's own defaults otherwise (set-clipboard external: an
	// application's OSC 52 is ignored), as most people run it.
	if out, err := s.tmux("start-server", ";",
		"set", "-g", "escape-time", "0", ";",
		"set", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "t", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), strings.Join(app, " ")); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	return s
}

// stop ends the tmux server and waits (at most 10 s) for the app to exit,
// so that the test's temporary folder is not removed under an app that is
// still writing to it (the app ends on the server's SIGHUP, in its own time).
func (s *tmuxSession) stop() {
	out, _ := s.tmux("display-message", "-p", "-t", "t", "#{pane_pid}")
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	_, _ = s.tmux("kill-server")
	if pid <= 0 {
		return
	}
	for end := time.Now().Add(patience(10 * time.Second)); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	s.t.Logf("the app (pid %d) was still running 10 s after the tmux server ended", pid)
}

// startTmuxApp builds shipkey and runs it with args in a private tmux server
// at 100x30, with its config, state and home in a temporary folder and env
// added to its environment.
func startTmuxApp(t *testing.T, env []string, args ...string) *tmuxSession {
	t.Helper()
	return newTmuxHome(t, env).start(100, 30, args...)
}

// buffer waits for the tmux paste buffer name and returns its content.
func (s *tmuxSession) buffer(name string) string {
	s.t.Helper()
	for end := time.Now().Add(patience(5 * time.Second)); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if out, err := s.tmux("show-buffer", "-b", name); err == nil && strings.TrimSpace(out) != "" {
			return strings.TrimSpace(out)
		}
	}
	s.t.Fatalf("tmux holds no buffer %s", name)
	return ""
}

// dead reports whether the app has exited.
func (s *tmuxSession) dead() bool {
	out, _ := s.tmux("display-message", "-p", "-t", "t", "#{pane_dead}")
	return strings.TrimSpace(out) == "1"
}

// TestTmuxDemo runs `shipkey demo` in a real terminal (tmux): gets a key
// through the walk-through, watches the countdown move, copies the token by
// OSC 52 into tmux's buffer, and visits the key list and the inspector.
func TestTmuxDemo(t *testing.T) {
	t.Parallel()
	s := startTmuxApp(t, []string{"SHIPKEY_SECRETS=memory"}, "demo")

	// No keys yet: the app opens Get API Key, filled in by the demo.
	s.waitText(10*time.Second, "Get API Key", "Client Secret", "Password")
	screen := s.capture()
	if strings.Contains(screen, "demo-password") || strings.Contains(screen, "demo-client-secret") {
		t.Fatalf("a secret is on the screen:\n%s", screen)
	}
	s.keys("Enter")
	s.waitText(10*time.Second, "Token details", "Access expires", "Refresh expires", "Bearer")

	// The countdown moves: the refresh token's mm:ss changes between captures.
	refreshLine := regexp.MustCompile(`Refresh expires.*in (\d+:\d\d)`)
	first := refreshLine.FindStringSubmatch(s.capture())
	if first == nil {
		t.Fatalf("no refresh countdown:\n%s", s.capture())
	}
	s.waitFor("the countdown to move", 5*time.Second, func(screen string) bool {
		m := refreshLine.FindStringSubmatch(screen)
		return m != nil && m[1] != first[1]
	})

	// c copies the access token into tmux's buffer shipkey-token, where the
	// toast says it went.
	s.keys("c")
	s.waitText(5*time.Second, "Copied the access token to the tmux buffer")
	buf := s.buffer("shipkey-token")
	dec, err := auth.Decode(buf, time.Now())
	if err != nil || dec.Format != auth.FormatJWT || dec.Username != "demo" {
		t.Fatalf("the buffer is not the demo user's JWT (err %v)", err)
	}
	// And it is the token the details reveal.
	s.keys("v")
	s.waitText(5*time.Second, buf[:40])
	s.keys("v")

	// API keys: the row, with a Last Used that is no longer "not yet" (the
	// table shows the copy's use once it has read the store again, in its
	// own time: the row is awaited, not read at once).
	s.keys("2")
	s.waitText(5*time.Second, "API Key", "Label", "Last Used", "* demo")
	demoRow := func(screen string) string {
		for _, l := range strings.Split(screen, "\n") {
			if strings.Contains(l, "* demo") {
				return l
			}
		}
		return ""
	}
	s.waitFor("Last Used after a copy to read \"just now\"", 5*time.Second, func(screen string) bool {
		row := demoRow(screen)
		if strings.Contains(row, "never") {
			t.Fatalf("Last Used after a copy: %q", row)
		}
		return strings.Contains(row, "just now")
	})

	// The inspector on the current key.
	s.keys("3")
	s.waitText(5*time.Second, "Claims inspector", "preferred_username", "demo")

	s.keys("q")
	s.waitFor("the app to exit", 5*time.Second, func(string) bool {
		out, _ := s.tmux("display-message", "-p", "-t", "t", "#{pane_dead}")
		return strings.TrimSpace(out) == "1"
	})
}

// TestTmuxAppKeepsItsFrame runs `shipkey` on the user's own store with the
// plaintext backend, which warns on every write: the warning must show on the
// app's status line, never as a stray stderr line that tears the frame.
func TestTmuxAppKeepsItsFrame(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	s := startTmuxApp(t, []string{"SHIPKEY_SECRETS=plaintext"})

	s.waitText(10*time.Second, "Get API Key", "Auth URL")
	for _, v := range []string{srv.URL(), "", authtest.DemoClientID, authtest.DemoClientSecret,
		authtest.DemoUsername, authtest.DemoPassword, "mine"} {
		if v != "" {
			s.keys("-l", v)
		}
		s.keys("Tab")
	}
	s.keys("Enter")
	screen := s.waitText(10*time.Second, "Token details", "Access expires", "unencrypted")
	lines := strings.Split(screen, "\n")
	if !strings.HasPrefix(lines[0], "shipkey › Token details") {
		t.Fatalf("the header is not on the first line:\n%s", screen)
	}
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "shipkey: ") {
			t.Fatalf("a stderr line tore the frame: %q\n%s", l, screen)
		}
	}
	if !strings.Contains(screen, "⚠") {
		t.Fatalf("the warning is not on the status line:\n%s", screen)
	}
	s.keys("q")
}

// At 60×15 the token details do not fit: both countdowns and the state are
// reached by scrolling; revealing the token at 100×30 does not push them
// off for good.
func TestTmuxDetailsScrollWhenSmall(t *testing.T) {
	t.Parallel()
	s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(60, 15, "demo")
	s.waitText(10*time.Second, "Get API Key")
	s.keys("Enter")
	s.waitText(10*time.Second, "Token details", "Access token", "↓ more")
	s.keys("G")
	s.waitText(5*time.Second, "Refresh expires", "State", "↑ more")
	if !regexp.MustCompile(`Refresh expires.*in \d+:\d\d`).MatchString(s.capture()) {
		t.Fatalf("no refresh countdown after G:\n%s", s.capture())
	}
	for range 6 {
		s.keys("Up")
	}
	screen := s.waitText(5*time.Second, "Access expires")
	if !regexp.MustCompile(`Access expires.*in \d+`).MatchString(screen) {
		t.Fatalf("no access countdown:\n%s", screen)
	}
	if _, err := s.tmux("resize-window", "-t", "t", "-x", "100", "-y", "30"); err != nil {
		t.Fatal(err)
	}
	s.keys("g", "v")
	s.waitText(5*time.Second, "(v hides)")
	s.keys("G")
	s.waitText(5*time.Second, "Access expires", "Refresh expires", "State")
	s.keys("q")
}

// With tmux's default options, c and C put the token and the header in
// shipkey's tmux buffers, and the clear leaves no buffer holding either.
func TestTmuxClipboardClearReachesTmux(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.config("clipboard_clear = \"4s\"\n")
	h.newKey(srv, "mine")
	s := h.start(100, 30)
	s.waitText(10*time.Second, "mine")
	s.keys("1")
	s.detailsRead(10*time.Second, "Access expires")
	s.keys("c")
	s.waitText(5*time.Second, "Copied the access token to the tmux buffer and terminal clipboard; clears in 4s")
	buf := s.buffer("shipkey-token")
	s.keys("C")
	s.waitText(5*time.Second, "Copied the Authorization header to the tmux buffer")
	if h := s.buffer("shipkey-header"); h != "Authorization: Bearer "+buf {
		t.Fatal("tmux's buffer shipkey-header does not hold the header")
	}
	s.waitText(10*time.Second, "Cleared the clipboard")
	for end := time.Now().Add(patience(5 * time.Second)); ; time.Sleep(50 * time.Millisecond) {
		// Every buffer, with its whole content (list-buffers shows a sample).
		names, _ := s.tmux("list-buffers", "-F", "#{buffer_name}")
		held := false
		for _, name := range strings.Fields(names) {
			if out, _ := s.tmux("show-buffer", "-b", name); strings.Contains(out, buf[:40]) {
				held = true
			}
		}
		if !held {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("a tmux buffer still holds the token or the header after the clear: %s", names)
		}
	}
	s.keys("q")
}

// A wrong password keeps the log-in-again prompt open with the error, and
// what is typed next is text: "X", "y" and "q" neither log out nor quit.
func TestTmuxLoginPromptSurvivesWrongPassword(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.newKey(srv, "mine")
	s := h.start(100, 30)
	s.waitText(10*time.Second, "mine")
	s.keys("1")
	s.detailsRead(10*time.Second, "Access expires")
	s.keys("l")
	s.waitText(5*time.Second, "Password", "enter logs in")
	s.keys("-l", "not-the-password")
	s.keys("Enter")
	s.waitText(10*time.Second, "✗", "enter logs in")
	s.keys("-l", "Xyq")
	// The field masks each character it took: three dots once the app has
	// read all three (a fixed pause instead let a slow app be judged
	// before it read them).
	screen := s.waitText(5*time.Second, "Password", "enter logs in", "•••")
	if s.dead() || strings.Contains(screen, "logged out") {
		t.Fatalf("a retyped password fired bindings:\n%s", screen)
	}
	s.keys("C-u")
	s.keys("-l", authtest.DemoPassword)
	s.keys("Enter")
	s.waitFor("the prompt to close", 10*time.Second, func(screen string) bool {
		return !strings.Contains(screen, "enter logs in") && strings.Contains(screen, "valid")
	})
	s.keys("q")
}

// A key added by the CLI shows in the running app's table within a tick or
// two.
func TestTmuxAppSeesKeyAddedByCLI(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.newKey(srv, "first")
	s := h.start(100, 30)
	s.waitText(10*time.Second, "first")
	s.keys("2")
	s.waitText(5*time.Second, "API Key", "1 of 1 key")
	h.newKey(srv, "from-the-cli")
	s.waitText(5*time.Second, "from-the-cli", "2 of 2 keys")
	h.cli("keys", "rm", "first", "--yes")
	s.waitFor("the removed key to go", 5*time.Second, func(screen string) bool {
		return !strings.Contains(screen, "first") && strings.Contains(screen, "1 of 1 key")
	})
	s.keys("q")
}

// SIGTERM, SIGINT and SIGHUP each end the app and restore the terminal,
// every time: 20 fresh starts per signal, the signals side by side, each in
// its own tmux server.
func TestTmuxAlwaysQuitsOnSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
			s := h.start(80, 24)
			for i := range 20 {
				if i > 0 {
					if out, err := s.tmux("respawn-pane", "-k", "-t", "t"); err != nil {
						t.Fatalf("respawn: %v: %s", err, out)
					}
				}
				s.waitText(10*time.Second, "Get API Key")
				out, err := s.tmux("display-message", "-p", "-t", "t", "#{pane_pid}")
				pid, perr := strconv.Atoi(strings.TrimSpace(out))
				if err != nil || perr != nil {
					t.Fatalf("pane pid %q: %v %v", out, err, perr)
				}
				if err := syscall.Kill(pid, sig); err != nil {
					t.Fatalf("kill: %v", err)
				}
				if !eventually(5*time.Second, s.dead) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("%v #%d: the app did not exit within %v", sig, i+1, patience(5*time.Second))
				}
				if out, _ := s.tmux("display-message", "-p", "-t", "t", "#{alternate_on}"); strings.TrimSpace(out) != "0" {
					t.Fatalf("%v #%d: the terminal was left in the alternate screen", sig, i+1)
				}
			}
		})
	}
}

// A CLI request that takes long says so on the terminal's stderr, counting
// the seconds, and the line is gone once the answer is in.
func TestTmuxCLIWaitingNotice(t *testing.T) {
	t.Parallel() // its own realm, store and tmux server
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.newKey(srv, "mine")
	// 5 s: on a loaded machine the screen is captured seldom, and the line
	// must still be there to be seen (which second it counts does not
	// matter).
	srv.Inject(authtest.Fault{Endpoint: "token", Delay: 5 * time.Second})
	// --force-refresh renews although the token is valid.
	s := h.start(100, 10, "token", "mine", "--force-refresh")
	counting := regexp.MustCompile(`waiting for the server… \([1-9]\d*s\)`)
	s.waitFor("the waiting line", 10*time.Second, counting.MatchString)
	s.waitFor("the command to end", 20*time.Second, func(string) bool { return s.dead() })
	if screen := s.capture(); strings.Contains(screen, "waiting for the server") {
		t.Fatalf("the waiting line stayed:\n%s", screen)
	}
}

// Inside tmux, $COLORTERM does not reach the app, so TERM and terminfo alone
// say 256 colours; where tmux has Tc or RGB the app draws in true colour all
// the same (lipgloss asks `tmux info` before main), and it asks once: the
// program's own detection is handed lipgloss's answer and no TMUX. The tmux on
// the app's PATH answers `info` as tmux does for a client terminal with Tc (a
// detached test server has no client) and hands everything else to the real
// tmux; it notes each call. With NO_COLOR the app asks nothing and draws no
// colour.
func TestTmuxTrueColour(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		env     []string
		wantRGB bool
	}{{"colours", nil, true}, {"no-color", []string{"NO_COLOR=1"}, false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newTmuxHome(t, append([]string{"SHIPKEY_SECRETS=plaintext", "COLORTERM=", "TERM=tmux-256color"}, c.env...))
			real, err := exec.LookPath("tmux") // there: newTmuxHome checked
			if err != nil {
				t.Fatal(err)
			}
			bin := t.TempDir()
			calls := filepath.Join(bin, "calls")
			wrapper := "#!/bin/sh\nif [ \"$1\" = info ]; then echo info >> " + calls + "; echo '  197: Tc: (flag) true'; exit 0; fi\nexec " + real + " \"$@\"\n"
			if err := os.WriteFile(filepath.Join(bin, "tmux"), []byte(wrapper), 0o700); err != nil {
				t.Fatal(err)
			}
			h.env = append(h.env, "PATH="+bin+":"+os.Getenv("PATH"))
			s := h.start(80, 24)
			s.waitText(10*time.Second, "Get API Key")
			rgb := regexp.MustCompile(`\x1b\[[0-9;]*[34]8;2;`)
			if !c.wantRGB {
				// A redraw after the first frame: the focus moves on.
				before := focusLine(s.capture())
				s.keys("Tab")
				s.waitFor("the focus to move", 5*time.Second, func(screen string) bool { return focusLine(screen) != before })
				out, _ := s.tmux("capture-pane", "-p", "-e", "-t", "t")
				if rgb.MatchString(out) {
					t.Fatalf("true colour under NO_COLOR:\n%q", out)
				}
				if data, err := os.ReadFile(calls); err == nil {
					t.Fatalf("the app ran tmux info under NO_COLOR: %q", data)
				}
				return
			}
			var screen string
			for end := time.Now().Add(patience(10 * time.Second)); ; time.Sleep(50 * time.Millisecond) {
				screen, _ = s.tmux("capture-pane", "-p", "-e", "-t", "t")
				if rgb.MatchString(screen) {
					break
				}
				if time.Now().After(end) {
					calls, _ := os.ReadFile(calls)
					t.Fatalf("no true colour on the screen (tmux info ran: %q):\n%q", calls, screen)
				}
			}
			if data, _ := os.ReadFile(calls); string(data) != "info\n" {
				t.Fatalf("tmux info ran %q, want once", data)
			}
		})
	}
}
