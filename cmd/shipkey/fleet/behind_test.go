package fleet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestFrozenMachineRefusesCLI: the freeze attack through real shipkey
// processes, on an etcd that compacted its revisions (so the machine
// cannot read what the roster key held meanwhile). a removes r; b has run
// nothing since it cached the key's token. r, which kept its etcd access,
// writes back the roster it was in, deletes the newer one from the history
// and writes a token set and a definition (token URL its own) it signs for
// that roster. b's token, header and exec hand out nothing: exit 4 and one
// line saying that b may be behind; nothing reaches r's URL. `team remove`
// said to revoke r's etcd credentials.
func TestFrozenMachineRefusesCLI(t *testing.T) {
	t.Parallel()
	needCluster(t)
	c := etcdtest.Need(t, 1) // its own: the test compacts it
	srv := newRealm(t)
	var stolen atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ATTACKER-CHOSEN-TOKEN","token_type":"Bearer","expires_in":600}`))
	}))
	defer evil.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	const name = "frozen"
	a, b := fleetTeam(t, ctx, c, srv, name)
	r := newMachine(t, "r")
	card := strings.TrimSpace(r.must(t, ctx, nil, "team", "join", name, "--etcd", strings.Join(c.Endpoints(), ","), "--yes"))
	a.must(t, ctx, nil, "team", "add", name, card, "--name", "r")
	b.must(t, ctx, nil, "token", name+"/svc") // renews; b caches it and pins the roster

	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	p := team.Prefix(name)
	resp, err := cli.Get(ctx, p+"roster")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("roster: %v", err)
	}
	was, _, err := team.ParseRoster(name, resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	rm := a.run(ctx, nil, "team", "remove", name, "r")
	if rm.code != 0 || !strings.Contains(rm.stderr, "Revoke its etcd credentials") {
		t.Fatalf("team remove: exit %d, %q", rm.code, rm.stderr)
	}

	// r's freeze: the roster it was in back, the newer one deleted, items
	// it signs for the old roster; then etcd compacts.
	old := fmt.Sprintf("%srosters/%012d", p, was.Version)
	if resp, err = cli.Get(ctx, old); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("%s: %v", old, err)
	}
	if _, err := cli.Put(ctx, p+"roster", string(resp.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, fmt.Sprintf("%srosters/%012d", p, was.Version+1)); err != nil {
		t.Fatal(err)
	}
	key, err := etcdtest.MemberSigningKey(r.dir, name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := etcdtest.OnlyKeyID(ctx, cli, name)
	if err != nil {
		t.Fatal(err)
	}
	honestDef, err := cli.Get(ctx, p+"keys/"+id)
	if err != nil || len(honestDef.Kvs) != 1 {
		t.Fatalf("the definition: %v", err)
	}
	now := time.Now()
	def := team.Definition{ID: id, Label: "svc", Definition: store.Definition{Grant: auth.GrantPassword, Connection: auth.Connection{AuthURL: evil.URL, Realm: "r", ClientID: "shipping-api"}, Username: "svc"}, Password: password, CreatedAt: now}
	if err := etcdtest.Forge(ctx, cli, name, "key", id, def, key); err != nil {
		t.Fatal(err)
	}
	if err := etcdtest.Forge(ctx, cli, name, "token", id, auth.TokenSet{AccessToken: "ATTACKER-CHOSEN-TOKEN", TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: now, AccessExpiresAt: now.Add(10 * time.Minute)}, key); err != nil {
		t.Fatal(err)
	}
	last, err := cli.Get(ctx, p+"roster")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, last.Header.Revision); err != nil {
		t.Fatal(err)
	}

	for _, cmd := range [][]string{{"token", name + "/svc"}, {"header", name + "/svc"}, {"exec", name + "/svc", "--", "sh", "-c", `printf %s "$SHIPKEY_TOKEN"`}} {
		res := b.run(ctx, nil, cmd...)
		if res.code != exitEtcdUnavailable || res.stdout != "" || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 || !strings.Contains(res.stderr, "may be behind") {
			t.Fatalf("%s on the frozen machine: exit %d, stdout %q, stderr %q; want exit %d and one line", cmd[0], res.code, res.stdout, res.stderr, exitEtcdUnavailable)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the removed member's token URL saw %d requests", n)
	}

	// The way back docs/teams.md gives: the roster a pinned (the newest)
	// written back with its history entry, and the definition r replaced
	// written again (here the honest record, as a kept copy would be). b,
	// whose pin is older, takes it along the chain; a, whose pin is that
	// very roster, cannot tell it from a freeze until it joins again.
	pin, err := os.ReadFile(filepath.Join(a.dir, "state", "teams", name, "roster.pin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{p + "roster", string(pin)}, {fmt.Sprintf("%srosters/%012d", p, was.Version+1), string(pin)}, {p + "keys/" + id, string(honestDef.Kvs[0].Value)}} {
		if _, err := cli.Put(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	realmToken := func(m *machine, who string) {
		t.Helper()
		res := m.run(ctx, nil, "token", name+"/svc")
		if res.code != 0 || strings.Contains(res.stdout, "ATTACKER") || strings.Count(res.stdout, ".") != 2 {
			t.Fatalf("%s after the roster was restored: exit %d, stdout %q, stderr %q", who, res.code, res.stdout, res.stderr)
		}
	}
	realmToken(b, "b")
	if res := a.run(ctx, nil, "token", name+"/svc"); res.code != exitEtcdUnavailable {
		t.Fatalf("a, whose pin is the restored roster, before it joins again: exit %d, %q", res.code, res.stderr)
	}
	a.must(t, ctx, nil, "team", "join", name, "--etcd", strings.Join(c.Endpoints(), ","), "--yes")
	realmToken(a, "a")
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the removed member's token URL saw %d requests", n)
	}
}
