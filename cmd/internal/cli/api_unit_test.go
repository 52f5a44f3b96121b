package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
)

// An answer printed to a terminal has its control sequences made visible
// (the hostile body's clear-screen, OSC 52 and C1 CSI come out inert), and
// the same answer to a pipe is passed on byte for byte.
func TestAPIAnswerToATerminalIsInert(t *testing.T) {
	t.Parallel()
	st, srv := testStore(t, time.Now)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret})
	t.Cleanup(rs.Close)
	run := func(tty bool, path, jq string) string {
		ios, out, _ := testIO("")
		ios.StdoutTTY = tty
		err := apiRun(context.Background(), &apiOptions{
			IO: ios, Now: time.Now, Secrets: &secretSet{}, Target: rs.URL() + path, JQ: jq,
			Store: func() (*store.Store, error) { return st, nil },
			Client: func(s auth.APISource, _ *auth.DPoPKey) (*http.Client, error) {
				return auth.NewAPIClient(auth.APIOptions{Source: s})
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for _, tc := range []struct{ path, jq string }{
		{"/test/hostile?raw", ""},                     // raw bytes
		{"/test/hostile", ".name, .note, .c1, .bidi"}, // JSON escapes that --jq decodes
	} {
		shown := run(true, tc.path, tc.jq)
		for _, c := range shown {
			if (c < 0x20 && c != '\n') || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u202e' {
				t.Fatalf("%s %s: terminal output holds %U: %q", tc.path, tc.jq, c, shown)
			}
		}
		if !strings.Contains(shown, `evil\x1b[2J`) || !strings.Contains(shown, `\x1b]52;c;ZXZpbA==\x07`) {
			t.Errorf("%s %s: the escapes are not shown as text: %q", tc.path, tc.jq, shown)
		}
		if piped := run(false, tc.path, tc.jq); !strings.Contains(piped, "evil\x1b[2J") {
			t.Errorf("%s %s: piped output changed: %q", tc.path, tc.jq, piped)
		}
	}
}
