//go:build !windows

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestTmuxForgedTeamTokenRefused: the app on a member's machine, in a real
// terminal, while etcd's token set of its team key is replaced by one that
// holds ESC, OSC 52, BEL and CR LF, encrypted to the roster and signed with
// the member's own key (so only the token checks stand in the way). The
// app's watch refuses it on the status line; the hostile bytes reach
// neither the screen nor a tmux buffer, and c copies no token (there is
// none the app will use) instead of the forged one.
func TestTmuxForgedTeamTokenRefused(t *testing.T) {
	t.Parallel()
	c := etcdtest.Need(t, 1)
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.cli("team", "init", "ctrl", "--etcd", strings.Join(c.Endpoints(), ","))
	h.env = append(h.env, "SHIPKEY_CLIENT_SECRET="+authtest.DemoClientSecret, "SHIPKEY_PASSWORD="+authtest.DemoPassword)
	h.cli("keys", "new", "--team", "ctrl", "--label", "svc", "--auth-url", srv.URL(), "--client-id", authtest.DemoClientID, "--username", authtest.DemoUsername)

	// The member's signing key, as the test's attacker that is a member.
	key, err := etcdtest.MemberSigningKey(h.dir, "ctrl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience(time.Minute))
	defer cancel()
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	id, err := etcdtest.OnlyKeyID(ctx, cli, "ctrl")
	if err != nil {
		t.Fatal(err)
	}

	s := h.start(120, 30)
	s.waitText(10*time.Second, "ctrl/svc")
	s.keys("2")
	s.waitText(5*time.Second, "API Key", "ctrl/svc")

	const hostile = "tok\x1b]52;c;ZXZpbA==\x07\r\nX-Evil: 1"
	now := time.Now()
	if err := etcdtest.Forge(ctx, cli, "ctrl", "token", id, auth.TokenSet{AccessToken: hostile, TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: now, AccessExpiresAt: now.Add(10 * time.Minute)}, key); err != nil {
		t.Fatal(err)
	}
	s.waitText(10*time.Second, "refused the token set")

	// The team key's details (its only row), then c: no forged token is
	// copied.
	s.keys("Enter")
	s.waitText(5*time.Second, "Token details")
	// c again while the details are still being read: the key's read
	// drops c ("reading the key…") or, ending, clears what c said. The
	// whole wait is bounded by patience, each try by 2 s.
	var screen string
	for end := time.Now().Add(patience(10 * time.Second)); ; {
		s.keys("c")
		screen = s.capture()
		for try := time.Now().Add(2 * time.Second); !strings.Contains(screen, "no token to copy") && time.Now().Before(try); screen = s.capture() {
			time.Sleep(50 * time.Millisecond)
		}
		if strings.Contains(screen, "no token to copy") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("c did not say there is no token to copy:\n%s", screen)
		}
	}
	for _, evil := range []string{"X-Evil", "ZXZpbA", "tok]52"} {
		if strings.Contains(screen, evil) {
			t.Fatalf("the forged token reached the screen:\n%s", screen)
		}
	}
	names, _ := s.tmux("list-buffers", "-F", "#{buffer_name}")
	for _, name := range strings.Fields(names) {
		if out, _ := s.tmux("show-buffer", "-b", name); strings.Contains(out, "X-Evil") || strings.Contains(out, "ZXZpbA") {
			t.Fatalf("tmux buffer %s holds the forged token", name)
		}
	}
	s.keys("q")
}
