//go:build !windows

package cli

import (
	"encoding/json"
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
			created := h.accessExpiries()
			s := h.start(w, size[1])
			s.waitText(10*time.Second, "one")
			s.keys("2")
			s.waitText(5*time.Second, "2 of 2 keys", "one", "two")
			// Two renewals a key: the second renews what the first got.
			s.waitFor("four renewals at the realm", 30*time.Second, func(string) bool { return srv.Count("refresh_token") >= 4 })
			// The realm counts a renewal before the app has stored and
			// drawn it: a renewal a loaded machine made late may read
			// "expired" for that moment. Both rows valid again is awaited;
			// a failed renewal fails at once.
			screen := s.waitFor("both keys valid", 10*time.Second, func(screen string) bool {
				if strings.Contains(screen, "renewal failed") {
					t.Fatalf("a renewal failed in the open app:\n%s", screen)
				}
				return strings.Contains(screen, "one") && strings.Contains(screen, "two") && !strings.Contains(screen, "expired")
			})
			noCutLines(t, screen, w)
			s.keys("q")
			s.waitFor("the app to exit", 10*time.Second, func(string) bool { return s.dead() })
			// The store holds the renewed tokens, and the CLI hands one out
			// with at most one renewal of its own (the token may be due by
			// now). Both with the app gone: its renewals, every few
			// seconds, would count with the CLI's.
			for label, was := range h.accessExpiries() {
				if !was.After(created[label]) {
					t.Errorf("key %s: the store's access token expires at %s, as the one made before the app (%s)", label, was, created[label])
				}
			}
			before := srv.Count("refresh_token")
			h.cli("token", "one")
			if after := srv.Count("refresh_token"); after > before+1 {
				t.Errorf("the CLI renewed %d times after the app's renewals", after-before)
			}
		})
	}
}

// accessExpiries is each key's access token expiry as the store holds it
// (keys list --json, which renews nothing).
func (h *tmuxHome) accessExpiries() map[string]time.Time {
	h.t.Helper()
	out := h.cli("keys", "list", "--json")
	var keys []keyJSON
	if err := json.Unmarshal([]byte(out[max(0, strings.Index(out, "[")):]), &keys); err != nil {
		h.t.Fatalf("keys list --json: %v\n%s", err, out)
	}
	at := map[string]time.Time{}
	for _, k := range keys {
		if k.AccessExpiresAt == nil {
			h.t.Fatalf("key %s has no access expiry:\n%s", k.Label, out)
		}
		t, err := time.Parse(time.RFC3339, *k.AccessExpiresAt)
		if err != nil {
			h.t.Fatal(err)
		}
		at[k.Label] = t
	}
	return at
}
