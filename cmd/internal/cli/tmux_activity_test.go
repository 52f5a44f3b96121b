//go:build !windows

package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// TestTmuxActivity: at 80×24 and 40×10, 5 opens the Activity screen of a
// store whose trail is empty; a `shipkey token` run by another process
// while it is open appears on it as it happens (no key pressed); the
// app's own copy of the token is recorded too and shown on top, and the
// frame keeps its header line.
func TestTmuxActivity(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			srv := authtest.NewServer(authtest.DemoConfig())
			t.Cleanup(srv.Close)
			h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
			h.newKey(srv, "mine")
			s := h.start(size[0], size[1])
			s.waitText(10*time.Second, "mine")
			s.keys("5")
			s.waitText(5*time.Second, "shipkey › Activity", "No hand-out yet")

			h.cli("token", "mine") // another process: the screen follows the file
			s.waitText(10*time.Second, "mine token token pid")

			s.keys("1")
			s.detailsRead(5 * time.Second)
			s.keys("c")
			s.keys("5")
			screen := s.waitText(10*time.Second, "mine copy app copy", "mine token token pid")
			if strings.Index(screen, "mine copy") > strings.Index(screen, "mine token") {
				t.Fatalf("the newest hand-out is not on top:\n%s", screen)
			}
			if lines := strings.Split(screen, "\n"); !strings.HasPrefix(lines[0], "shipkey › Activity") {
				t.Fatalf("the frame lost its header:\n%s", screen)
			}
			s.keys("q")
		})
	}
}
