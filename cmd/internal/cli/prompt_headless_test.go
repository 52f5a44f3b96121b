package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// On a machine with no browser, the sign-in says how to reach the callback
// from another machine; it suggests fixing the port only when the port was
// not fixed already (--callback-port).
func TestHeadlessSigninSuggestsAFixedPortOnce(t *testing.T) {
	t.Parallel()
	noBrowser := func(string) string { return "" }
	for _, fixed := range []bool{false, true} {
		ios, _, errOut := testIO("")
		newPrompter(ios, noBrowser)(auth.Prompt{Grant: auth.GrantAuthCode, AuthURL: "https://auth.example/auth?x=1",
			RedirectURI: "http://127.0.0.1:8400/callback", StartURL: "http://127.0.0.1:8400/start/x", PortFixed: fixed,
			ExpiresAt: time.Now().Add(time.Minute)})
		got := errOut.String()
		if !strings.Contains(got, "ssh -L 8400:127.0.0.1:8400") {
			t.Fatalf("fixed %v: no tunnel advice:\n%s", fixed, got)
		}
		if says := strings.Contains(got, "--callback-port 8400"); says == fixed {
			t.Errorf("fixed %v: suggests --callback-port: %v\n%s", fixed, says, got)
		}
	}
}
