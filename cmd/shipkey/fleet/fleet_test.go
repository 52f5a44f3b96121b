package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/testbin"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// testBound ends a test that hangs (its processes are killed). Two runs of
// the suite at once next to CPU hogs took a minute for tests that take 10 s
// alone.
const testBound = 3 * time.Minute

// exitEtcdUnavailable is the documented exit code of a team key whose etcd
// did not answer within the bound (docs/teams.md, "Faults").
const exitEtcdUnavailable = 4

var (
	bin        string // shipkey, built once
	cluster    *etcdtest.Cluster
	clusterErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shipkey-fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// shipkey, which hands every team command to shipkey-team beside it:
		// the fleet runs both, as installed.
		bin = filepath.Join(dir, "shipkey")
		// The cluster starts while the programs build: both mostly wait.
		// The build is cmd/internal/cli's (the same packages, no flags):
		// linked once for both packages and every run of the same sources.
		var started sync.WaitGroup
		started.Go(func() { cluster, clusterErr = etcdtest.Start(filepath.Join(dir, "etcd"), 3) })
		err := testbin.Install(dir, testbin.Build{Packages: []string{"github.com/shipkey/shipkey/cmd/shipkey", "github.com/shipkey/shipkey/cmd/shipkey-team"}})
		started.Wait()
		if cluster != nil {
			defer cluster.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// ownCluster is a 3-member cluster for one test that takes members down:
// the shared one stays whole for the tests running beside it.
func ownCluster(tb testing.TB) *etcdtest.Cluster {
	tb.Helper()
	needCluster(tb) // etcd is there
	return etcdtest.Need(tb, 3)
}

func needCluster(tb testing.TB) *etcdtest.Cluster {
	tb.Helper()
	if clusterErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("etcd cluster: %v", clusterErr)
		}
		tb.Skipf("etcd cluster: %v", clusterErr)
	}
	return cluster
}

const (
	clientSecret = "fleet-client-secret-5c2e"
	password     = "fleet-password-a91f"
)

// realm is the authorization server on a clock the test can set back, so
// that a token can be issued already due.
type realm struct {
	*authtest.Server
	offset atomic.Int64
}

func newRealm(tb testing.TB) *realm {
	r := &realm{}
	r.Server = authtest.NewServer(authtest.Config{
		Users:      []authtest.User{{Username: "svc", Password: password}},
		Clients:    []authtest.Client{{ID: "shipping-api", Secret: clientSecret, ServiceAccount: true}},
		AccessTTL:  10 * time.Minute,
		RefreshTTL: 2 * time.Hour,
		Now:        func() time.Time { return time.Now().Add(time.Duration(r.offset.Load())) },
	})
	tb.Cleanup(r.Close)
	return r
}

// machine is one machine's environment: its own store and identity.
type machine struct {
	dir string
	env []string
	// wrap runs every process through a command first (nsenter into a
	// network namespace cut off from etcd: partition_linux_test.go).
	wrap []string
}

func newMachine(tb testing.TB, name string) *machine {
	dir := filepath.Join(tb.TempDir(), name)
	return &machine{dir: dir, env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + filepath.Join(dir, "state"),
		"SHIPKEY_SECRETS=plaintext",
		// Generous: what waits on etcd here is not about the bound (the
		// default 5 s), except where a test sets its own, after this.
		// Under load a command of two runs at once waited longer.
		"SHIPKEY_TEAM_TIMEOUT=30s",
	}}
}

type result struct {
	stdout, stderr string
	code           int
}

func (m *machine) run(ctx context.Context, extraEnv []string, args ...string) result {
	argv := append(append(append([]string{}, m.wrap...), bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append([]string{}, m.env...), extraEnv...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	return result{o.String(), e.String(), code}
}

func (m *machine) must(tb testing.TB, ctx context.Context, extraEnv []string, args ...string) string {
	tb.Helper()
	r := m.run(ctx, extraEnv, args...)
	if r.code != 0 {
		tb.Fatalf("shipkey %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// fleetTeam sets up team name on two machines through the CLI and creates
// the team key svc with a token that is already due.
func fleetTeam(tb testing.TB, ctx context.Context, c *etcdtest.Cluster, srv *realm, name string) (a, b *machine) {
	tb.Helper()
	a, b = newMachine(tb, "a"), newMachine(tb, "b")
	eps := strings.Join(c.Endpoints(), ",")
	freshTeam(tb, ctx, c, name)
	a.must(tb, ctx, nil, "team", "init", name, "--etcd", eps, "--name", "a")
	rcpt := strings.TrimSpace(b.must(tb, ctx, nil, "team", "join", name, "--etcd", eps, "--yes"))
	if !strings.HasPrefix(rcpt, "age1") {
		tb.Fatalf("team join printed %q, want an age recipient", rcpt)
	}
	added := a.run(ctx, nil, "team", "add", name, rcpt, "--name", "b")
	if added.code != 0 {
		tb.Fatalf("team add: exit %d\n%s", added.code, added.stderr)
	}
	// team add shows the member's fingerprint, which the member sees for
	// itself in team members.
	shown := false
	for line := range strings.Lines(b.must(tb, ctx, nil, "team", "members", name)) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "*" {
			shown = strings.Contains(added.stderr, "fingerprint is "+f[2]+":")
		}
	}
	if !shown {
		tb.Fatalf("team add did not show the fingerprint b's team members shows for itself:\n%s", added.stderr)
	}
	// Issued backdated: its exp lies 2 s ahead (auth refuses a token
	// already expired on arrival); then wait until shipkey sees it expired,
	// so the shared token is due on both machines.
	srv.offset.Store(int64(-(10*time.Minute - 2*time.Second)))
	a.must(tb, ctx, []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret, "SHIPKEY_PASSWORD=" + password},
		"keys", "new", "--team", name, "--label", "svc", "--auth-url", srv.URL(), "--client-id", "shipping-api", "--username", "svc")
	srv.offset.Store(0)
	waitExpired(tb, ctx, a, name+"/svc")
	return a, b
}

// listedKey is what waitExpired reads of a key in `keys list --json`.
type listedKey struct {
	Label           string  `json:"label"`
	Status          string  `json:"status"`
	AccessExpiresAt *string `json:"access_expires_at"`
}

// freshTeam deletes what an earlier run of the same test in this process
// (go test -count=2) left of team name in c, so that it can be created
// again.
func freshTeam(tb testing.TB, ctx context.Context, c *etcdtest.Cluster, name string) {
	tb.Helper()
	if err := c.DeletePrefix(ctx, team.Prefix(name)); err != nil {
		tb.Fatalf("etcd: deleting what a run before left of team %s: %v", name, err)
	}
}

// waitExpired returns once `keys list` on m shows key's token expired
// ("refreshable"). Until then it sleeps until the expiry that keys list
// states (a poll every 100 ms ran a dozen processes, each a tenth of a
// CPU-second), bounded.
func waitExpired(tb testing.TB, ctx context.Context, m *machine, key string) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := m.must(tb, ctx, nil, "keys", "list", "--json")
		var keys []listedKey
		if err := json.Unmarshal([]byte(out), &keys); err != nil {
			tb.Fatalf("keys list --json: %v\n%s", err, out)
		}
		i := slices.IndexFunc(keys, func(k listedKey) bool { return k.Label == key })
		switch {
		case i < 0:
			tb.Fatalf("keys list does not show %s:\n%s", key, out)
		case keys[i].Status == "refreshable":
			return
		case time.Now().After(deadline):
			tb.Fatalf("the token of %s never expired:\n%s", key, out)
		}
		wait := 100 * time.Millisecond
		if at := keys[i].AccessExpiresAt; at != nil {
			if t, err := time.Parse(time.RFC3339, *at); err == nil {
				wait = max(wait, time.Until(t)+10*time.Millisecond)
			}
		}
		select {
		case <-time.After(min(wait, time.Until(deadline))):
		case <-ctx.Done():
			tb.Fatalf("the token of %s: %v", key, ctx.Err())
		}
	}
}

// race runs perMachine `token T/svc` processes on each machine at once.
func race(ctx context.Context, ms []*machine, perMachine int, addr string, during func()) []result {
	results := make([]result, len(ms)*perMachine)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range results {
		m := ms[i%len(ms)]
		wg.Go(func() {
			<-start
			results[i] = m.run(ctx, []string{"SHIPKEY_TEAM_TIMEOUT=8s"}, "token", addr)
		})
	}
	close(start)
	if during != nil {
		during()
	}
	wg.Wait()
	return results
}

func TestFleetRaceOneTokenRequest(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "race")
	before := srv.Count("token")
	results := race(ctx, []*machine{a, b}, 10, "race/svc", nil)
	token := ""
	for i, r := range results {
		tok := strings.TrimSuffix(r.stdout, "\n")
		switch {
		case r.code != 0:
			t.Errorf("process %d: exit %d: %s", i, r.code, r.stderr)
		case tok == "" || strings.Contains(tok, "\n"):
			t.Errorf("process %d printed %q", i, r.stdout)
		case token == "":
			token = tok
		case tok != token:
			t.Errorf("process %d printed another token than the others", i)
		}
	}
	if n := srv.Count("token") - before; n != 1 {
		t.Errorf("token requests during the race = %d, want exactly 1 for 20 processes on 2 machines", n)
	}
	for _, m := range []*machine{a, b} {
		assertNotInTree(t, filepath.Join(m.dir, "state", "teams"), token)
	}
	if out := a.must(t, ctx, nil, "status", "race/svc"); !strings.Contains(out, "race/svc") || !strings.Contains(out, "valid") {
		t.Errorf("status race/svc = %q", out)
	}
	if out := b.must(t, ctx, nil, "__complete", "token", "ra"); !strings.Contains(out, "race/") {
		t.Errorf("completion of \"ra\" does not offer race/: %q", out)
	}
	if out := a.must(t, ctx, nil, "inspect", "--key", "race/svc", "--json"); !strings.Contains(out, `"race/svc"`) {
		t.Errorf("inspect --key race/svc does not name the key: %.300s", out)
	}
	// A team key is not this machine's default: one line says so and what
	// to do instead.
	if r := a.run(ctx, nil, "keys", "default", "race/svc"); r.code != 2 || !strings.Contains(r.stderr, "cannot be the default") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("keys default race/svc: exit %d: %q", r.code, r.stderr)
	}
	// The same key through exec, then renamed on b and seen on a, then
	// removed: T/LABEL everywhere.
	if got := a.must(t, ctx, nil, "exec", "race/svc", "--", "sh", "-c", `printf %s "$SHIPKEY_TOKEN"`); got != token {
		t.Errorf("exec handed the command another token")
	}
	b.must(t, ctx, nil, "keys", "rename", "race/svc", "race/renamed")
	if out := a.must(t, ctx, nil, "keys", "list", "--json"); !strings.Contains(out, `"label": "race/renamed"`) {
		t.Errorf("keys list on a does not show the rename made on b:\n%s", out)
	}
	a.must(t, ctx, nil, "keys", "rm", "--yes", "race/renamed")
	// b's cache hands out a token until it is due (no etcd round trip); any
	// read of the team (keys list, the app's watch) drops a removed key.
	if out := b.must(t, ctx, nil, "keys", "list", "--json"); strings.Contains(out, "race/renamed") {
		t.Errorf("keys list on b still shows the key removed on a")
	}
	if r := b.run(ctx, nil, "token", "race/renamed"); r.code == 0 {
		t.Errorf("b still hands out a token of the removed key")
	}
}

// TestFleetRaceLeaderKilled kills the etcd leader while 20 processes race,
// on a cluster of its own (the other tests keep the shared one).
func TestFleetRaceLeaderKilled(t *testing.T) {
	t.Parallel()
	c := ownCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "leader")
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Count("token")
	results := race(ctx, []*machine{a, b}, 10, "leader/svc", func() {
		time.Sleep(30 * time.Millisecond)
		c.Kill(leader)
	})
	printed := map[string]int{}
	for i, r := range results {
		switch r.code {
		case 0:
			printed[strings.TrimSuffix(r.stdout, "\n")]++
		case exitEtcdUnavailable:
			if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("process %d: more than one line: %q", i, r.stderr)
			}
		default:
			t.Errorf("process %d: exit %d, want 0 or %d: %s", i, r.code, exitEtcdUnavailable, r.stderr)
		}
	}
	if n := srv.Count("token") - before; n < 1 || n > 2 {
		t.Errorf("token requests during the race = %d, want 1 (at most one extra)", n)
	}
	if len(printed) > 2 {
		t.Errorf("%d different tokens printed", len(printed))
	}
	// Consistent afterwards: both machines read the stored token (no new
	// request: it is valid) and agree.
	before = srv.Count("token")
	ta := strings.TrimSpace(a.must(t, ctx, []string{"SHIPKEY_TEAM_TIMEOUT=8s"}, "token", "leader/svc"))
	tb := strings.TrimSpace(b.must(t, ctx, []string{"SHIPKEY_TEAM_TIMEOUT=8s"}, "token", "leader/svc"))
	if ta != tb {
		t.Errorf("after the race the machines hand out different tokens")
	}
	if n := srv.Count("token") - before; n != 0 {
		t.Errorf("after the race: %d more token requests, want 0", n)
	}
}

// TestQuorumLost stops 2 of the 3 members: a machine with a valid cached
// token is served it with a warning; one with nothing cached fails within
// the bound with one line and the documented code. On a cluster of its own.
func TestQuorumLost(t *testing.T) {
	t.Parallel()
	c := ownCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "quorum")
	a.must(t, ctx, nil, "token", "quorum/svc") // renews and caches on a
	c.Stop(1)
	c.Stop(2)
	bound := []string{"SHIPKEY_TEAM_TIMEOUT=1s"}
	// --min-valid longer than the token lives: the cached token is not good
	// enough, etcd is asked, does not answer, and the cached one is served.
	r := a.run(ctx, bound, "token", "--min-valid", "20m", "quorum/svc")
	if r.code != 0 || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("cached token: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "warning: team quorum: etcd did not answer within 1s") {
		t.Errorf("no warning on stderr: %q", r.stderr)
	}
	// The next call, its cached token good enough, does not wait on etcd
	// again so soon after it failed: it says so instead.
	r = a.run(ctx, bound, "token", "quorum/svc")
	if r.code != 0 || strings.TrimSpace(r.stdout) == "" || !strings.Contains(r.stderr, "(under 30s ago); handing out the cached token of quorum/svc without asking") {
		t.Errorf("token right after the outage was seen: exit %d, stderr %q", r.code, r.stderr)
	}
	// b never fetched a token: nothing cached.
	bctx, bcancel := context.WithTimeout(ctx, 20*time.Second)
	defer bcancel()
	r = b.run(bctx, bound, "token", "quorum/svc")
	if r.code != exitEtcdUnavailable {
		t.Fatalf("nothing cached: exit %d, want %d: %s", r.code, exitEtcdUnavailable, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "did not answer within 1s") {
		t.Errorf("stderr = %q, want one line saying etcd did not answer within the bound", r.stderr)
	}
}

// assertNotInTree fails when any file under dir contains secret.
func assertNotInTree(t *testing.T, dir, secret string) {
	t.Helper()
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		if secret != "" && bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the token in plaintext", path)
		}
		return nil
	})
}

// TestRemovedMemberCLI: join pins only a roster it was told to trust; team
// remove says plainly to rotate the secrets; the removed machine's status
// says it was removed (exit 1), not "valid until", and its token commands
// say it was removed, not that it is no member as if never added.
func TestRemovedMemberCLI(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := newMachine(t, "a"), newMachine(t, "b")
	eps := strings.Join(c.Endpoints(), ",")
	freshTeam(t, ctx, c, "gone")
	a.must(t, ctx, nil, "team", "init", "gone", "--etcd", eps, "--name", "desk")
	// join pins the roster only once it is the one the inviting member
	// sees: with no terminal to ask on, only with --fingerprint (exactly
	// the members') or --yes; a mismatch keeps nothing and says what to do.
	var deskFP string
	for _, line := range strings.Split(a.must(t, ctx, nil, "team", "members", "gone"), "\n") {
		if f := strings.Fields(line); marked(line, "desk") && len(f) >= 3 {
			deskFP = f[2]
		}
	}
	j := b.run(ctx, nil, "team", "join", "gone", "--etcd", eps)
	if j.code != 2 || j.stdout != "" || strings.Count(strings.TrimSpace(j.stderr), "\n") != 0 || !strings.Contains(j.stderr, "--fingerprint") {
		t.Fatalf("team join with no terminal and no flag: exit %d, %q %q; want 2 and one line naming --fingerprint", j.code, j.stdout, j.stderr)
	}
	j = b.run(ctx, nil, "team", "join", "gone", "--etcd", eps, "--fingerprint", "SHA256:"+strings.Repeat("A", 43))
	if j.code != 1 || j.stdout != "" || !strings.Contains(j.stderr, deskFP) || !strings.Contains(j.stderr, "do not join") || !strings.Contains(j.stderr, "who invited you") {
		t.Fatalf("team join --fingerprint OTHER: exit %d, %q %q; want 1, the roster's fingerprints and what a mismatch means", j.code, j.stdout, j.stderr)
	}
	if r := b.run(ctx, nil, "team", "ls"); !strings.Contains(r.stderr, "No teams yet") {
		t.Fatalf("a refused join left the team here: %q %q", r.stdout, r.stderr)
	}
	j = b.run(ctx, nil, "team", "join", "gone", "--etcd", eps, "--fingerprint", deskFP)
	if j.code != 0 {
		t.Fatalf("team join --fingerprint %s: exit %d, %s", deskFP, j.code, j.stderr)
	}
	// The card names the etcd user the machine connects as (none here: the
	// test cluster has no users; one is written in, as join prints it).
	card := strings.TrimSpace(j.stdout)
	card += strings.Repeat(":", 3-strings.Count(card, ":")) + "laptop-etcd"
	a.must(t, ctx, nil, "team", "add", "gone", card, "--name", "laptop")
	// join showed the pinned roster's fingerprints; members shows the same,
	// marking this machine.
	out := a.must(t, ctx, nil, "team", "members", "gone")
	if !strings.Contains(out, "laptop") || !strings.HasPrefix(deskFP, "SHA256:") || !strings.Contains(j.stderr, deskFP) {
		t.Fatalf("team members:\n%s\njoin said:\n%s\nwant this machine marked * with the fingerprint join showed", out, j.stderr)
	}
	if bm := b.must(t, ctx, nil, "team", "members", "gone"); !marked(bm, "laptop") {
		t.Fatalf("team members on b does not mark b:\n%s", bm)
	}

	// b holds only team keys: SHIPKEY_KEY names one, and any change of
	// config.toml (a touch) leaves it working.
	a.must(t, ctx, []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret, "SHIPKEY_PASSWORD=" + password},
		"keys", "new", "--team", "gone", "--label", "ci", "--auth-url", srv.URL(), "--client-id", "shipping-api", "--username", "svc")
	if tok := b.must(t, ctx, []string{"SHIPKEY_KEY=gone/ci"}, "token"); strings.TrimSpace(tok) == "" {
		t.Fatal("SHIPKEY_KEY=gone/ci: no token")
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(b.dir, "config", "config.toml"), later, later); err != nil {
		t.Fatal(err)
	}
	b.must(t, ctx, []string{"SHIPKEY_KEY=gone/ci"}, "token")

	r := a.run(ctx, nil, "team", "remove", "gone", "laptop")
	if r.code != 0 || !strings.Contains(r.stderr, "rotate the client secrets") || !strings.Contains(r.stderr, "Revoke its etcd credentials now: etcdctl user delete laptop-etcd") {
		t.Fatalf("team remove: exit %d, %q", r.code, r.stderr)
	}
	// The removed machine's status, before any other command of it read
	// the team: its cached token is still valid, but it is no member now.
	for _, args := range [][]string{{"status", "gone/ci"}, {"status"}, {"status", "--json"}} {
		r = b.run(ctx, nil, args...)
		if r.code != 1 || !strings.Contains(r.stdout, "removed from team gone") || strings.Contains(r.stdout, "valid") ||
			!strings.Contains(r.stderr, "this machine was removed from team gone") || strings.Contains(r.stderr, "login") {
			t.Fatalf("removed member's %v: exit %d, %q %q; want 1, removed from team gone", args, r.code, r.stdout, r.stderr)
		}
	}
	a.must(t, ctx, []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret, "SHIPKEY_PASSWORD=" + password},
		"keys", "new", "--team", "gone", "--label", "after", "--auth-url", srv.URL(), "--client-id", "shipping-api", "--username", "svc")
	for _, key := range []string{"gone/after", "gone/ci"} {
		r = b.run(ctx, nil, "token", key)
		if r.code == 0 || r.stdout != "" || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "team gone: this machine was removed from the team") {
			t.Fatalf("removed member's token %s: exit %d, %q %q; want one line saying it was removed", key, r.code, r.stdout, r.stderr)
		}
	}
	r = b.run(ctx, nil, "team", "leave", "gone")
	if r.code != 0 || !strings.Contains(r.stderr, "team remove gone") {
		t.Fatalf("team leave: exit %d, %q", r.code, r.stderr)
	}
	if r = b.run(ctx, nil, "team", "ls"); !strings.Contains(r.stderr, "No teams yet") {
		t.Fatalf("team ls after leave: %q %q", r.stdout, r.stderr)
	}
}

// marked reports whether a line of team members marks name with *.
func marked(out, name string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "*" && f[1] == name {
			return true
		}
	}
	return false
}

// TestSetSecretCLI: keys set-secret replaces the client secret of a local
// key and of a team key (for every member): a wrong one makes the next
// renewal fail at the realm (the new secret is the one used), the right one
// makes it work again.
func TestSetSecretCLI(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := newMachine(t, "a"), newMachine(t, "b")
	eps := strings.Join(c.Endpoints(), ",")
	freshTeam(t, ctx, c, "rot")
	a.must(t, ctx, nil, "team", "init", "rot", "--etcd", eps)
	card := strings.TrimSpace(b.must(t, ctx, nil, "team", "join", "rot", "--etcd", eps, "--yes"))
	a.must(t, ctx, nil, "team", "add", "rot", card, "--name", "b") // both run on this host: its name is taken
	newKey := []string{"--auth-url", srv.URL(), "--client-id", "shipping-api", "--username", "svc"}
	creds := []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret, "SHIPKEY_PASSWORD=" + password}
	a.must(t, ctx, creds, append([]string{"keys", "new", "--label", "local"}, newKey...)...)
	a.must(t, ctx, creds, append([]string{"keys", "new", "--team", "rot", "--label", "shared"}, newKey...)...)
	wrong := []string{"SHIPKEY_CLIENT_SECRET=not-the-secret"}
	right := []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret}

	a.must(t, ctx, wrong, "keys", "set-secret", "local")
	if r := a.run(ctx, nil, "token", "--force-refresh", "local"); r.code == 0 {
		t.Fatal("local key renewed with the wrong secret: set-secret did not replace it")
	}
	a.must(t, ctx, right, "keys", "set-secret", "local")
	a.must(t, ctx, nil, "token", "--force-refresh", "local")

	a.must(t, ctx, wrong, "keys", "set-secret", "rot/shared")
	if r := b.run(ctx, nil, "login", "rot/shared"); r.code == 0 {
		t.Fatal("the other member renewed with the wrong secret: set-secret did not reach it")
	}
	r := a.run(ctx, right, "keys", "set-secret", "rot/shared")
	if r.code != 0 || !strings.Contains(r.stderr, "for every member") {
		t.Fatalf("set-secret of a team key: exit %d, %q", r.code, r.stderr)
	}
	b.must(t, ctx, nil, "login", "rot/shared")
}
