//go:build !windows

package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// TestTmuxOpenAppRenewsEveryKey: with 6-second access tokens, the open app
// on the keys table (no key's details shown) renews both keys, each more
// than once, through the realm's refresh grant; no row reads "expired" or
// "renewal failed" afterwards, at 80×24 and 40×10.
func TestTmuxOpenAppRenewsEveryKey(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			w := size[0]
			cfg := authtest.DemoConfig()
			cfg.AccessTTL = 6 * time.Second
			srv := authtest.NewServer(cfg)
			t.Cleanup(srv.Close)
			h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
			h.newKey(srv, "one")
			h.newKey(srv, "two")
			s := h.start(w, size[1])
			s.waitText(10*time.Second, "one")
			s.keys("2")
			s.waitText(5*time.Second, "2 of 2 keys", "one", "two")
			// Two renewals a key: the second renews what the first got.
			s.waitFor("four renewals at the realm", 30*time.Second, func(string) bool { return srv.Count("refresh_token") >= 4 })
			screen := s.waitText(5*time.Second, "one", "two")
			if strings.Contains(screen, "expired") || strings.Contains(screen, "renewal failed") {
				t.Fatalf("a key expired in the open app:\n%s", screen)
			}
			noCutLines(t, screen, w)
			// The store holds the renewed tokens: the CLI hands one out
			// without a renewal of its own.
			before := srv.Count("refresh_token")
			h.cli("token", "one")
			if after := srv.Count("refresh_token"); after > before+1 {
				t.Errorf("the CLI renewed %d times after the app's renewals", after-before)
			}
			s.keys("q")
		})
	}
}
