package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestForgedTokenWithControlBytesCLI: a token set in etcd holding ESC,
// OSC 52, BEL and CR LF, signed even by a member, reaches no output: token,
// header and exec (SHIPKEY_TOKEN) each refuse it in a warning line and hand
// out a token the realm issued instead.
func TestForgedTokenWithControlBytesCLI(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "ctrl")
	a.must(t, ctx, nil, "token", "ctrl/svc") // renews; both cache it on use
	key, err := etcdtest.MemberSigningKey(a.dir, "ctrl")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	id, err := etcdtest.OnlyKeyID(ctx, cli, "ctrl")
	if err != nil {
		t.Fatal(err)
	}
	const hostile = "tok\x1b]52;c;ZXZpbA==\x07\r\nX-Evil: 1"
	for _, cmd := range [][]string{{"token", "ctrl/svc"}, {"header", "ctrl/svc"}, {"exec", "ctrl/svc", "--", "sh", "-c", `printf %s "$SHIPKEY_TOKEN"`}} {
		for _, m := range []*machine{a, b} {
			now := time.Now()
			if err := etcdtest.Forge(ctx, cli, "ctrl", "token", id, auth.TokenSet{AccessToken: hostile, TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: now, AccessExpiresAt: now.Add(10 * time.Minute)}, key); err != nil {
				t.Fatal(err)
			}
			r := m.run(ctx, nil, cmd...)
			if r.code != 0 || strings.ContainsAny(r.stdout, "\x1b\x07\r") || strings.Contains(r.stdout, "X-Evil") {
				t.Fatalf("%s: exit %d, stdout %q", cmd[0], r.code, r.stdout)
			}
			if !strings.Contains(r.stderr, "refused the token set") {
				t.Fatalf("%s: no refusal said: %q", cmd[0], r.stderr)
			}
		}
	}
}
