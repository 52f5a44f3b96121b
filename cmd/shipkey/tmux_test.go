package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// waitFor polls the screen every 50 ms until cond holds, at most limit.
func (s *tmuxSession) waitFor(what string, limit time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	var screen string
	for end := time.Now().Add(limit); ; {
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

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...); err != nil {
		s.t.Fatalf("send-keys %v: %v: %s", keys, err, out)
	}
}

// startTmuxApp builds shipkey and runs it with args in a private tmux server
// at 100x30, with its config, state and home in a temporary folder and env
// added to its environment.
func startTmuxApp(t *testing.T, env []string, args ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required in CI: apt-get install -y tmux")
		}
		t.Skip("tmux not installed (apt-get install -y tmux); skipping the real-terminal test")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "shipkey")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, d := range []string{"config", "state", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("shipkey-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })

	app := append([]string{
		"env",
		"HOME=" + filepath.Join(dir, "home"),
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + filepath.Join(dir, "state"),
		"DISPLAY=", "WAYLAND_DISPLAY=", // no native clipboard: OSC 52 only
	}, env...)
	app = append(append(app, bin), args...)
	if out, err := s.tmux("start-server", ";",
		"set", "-g", "set-clipboard", "on", ";",
		"set", "-g", "escape-time", "0", ";",
		"set", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "t", "-x", "100", "-y", "30", strings.Join(app, " ")); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	return s
}

// TestTmuxDemo runs `shipkey demo` in a real terminal (tmux): gets a key
// through the walk-through, watches the countdown move, copies the token by
// OSC 52 into tmux's buffer, and visits the key list and the inspector.
func TestTmuxDemo(t *testing.T) {
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

	// c copies the access token: OSC 52 lands in tmux's paste buffer.
	s.keys("c")
	s.waitText(5*time.Second, "Copied the access token")
	var buf string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if out, err := s.tmux("show-buffer"); err == nil && strings.Count(out, ".") == 2 {
			buf = strings.TrimSpace(out)
			break
		}
	}
	if buf == "" {
		t.Fatal("tmux show-buffer holds no token after c")
	}
	dec, err := auth.Decode(buf, time.Now())
	if err != nil || dec.Format != auth.FormatJWT || dec.Username != "demo" {
		t.Fatalf("the buffer is not the demo user's JWT (err %v)", err)
	}
	// And it is the token the details reveal.
	s.keys("v")
	s.waitText(5*time.Second, buf[:40])
	s.keys("v")

	// API keys: the row, with a Last Used that is no longer "never".
	s.keys("2")
	screen = s.waitText(5*time.Second, "API Key", "Label", "Last Used", "* demo")
	row := ""
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "* demo") {
			row = l
		}
	}
	if strings.Contains(row, "never") || !strings.Contains(row, "just now") {
		t.Fatalf("Last Used after a copy: %q", row)
	}

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
