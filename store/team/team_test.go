package team_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/testpar"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdteam"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// cluster is the one 3-member etcd cluster of this package (TestMain);
// tests share it under distinct team names.
var (
	cluster    *etcdtest.Cluster
	clusterErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shipkey-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster, clusterErr = etcdtest.Start(dir, 3)
	// The tests mostly wait on etcd: more run at once than the CPUs (go
	// test's default).
	testpar.Default(4)
	code := m.Run()
	if cluster != nil {
		cluster.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// needCluster fails (CI=true) or skips when etcd is not installed.
func needCluster(t *testing.T) *etcdtest.Cluster {
	t.Helper()
	if clusterErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd cluster: %v", clusterErr)
		}
		t.Skipf("etcd cluster: %v", clusterErr)
	}
	return cluster
}

const (
	clientSecret = "team-client-secret-4e1d"
	password     = "team-password-77aa"
)

func newServer(t *testing.T, clk ...*clock) *authtest.Server {
	now := time.Now
	if len(clk) > 0 {
		now = clk[0].Now
	}
	srv := authtest.NewServer(authtest.Config{
		Now:        now,
		Users:      []authtest.User{{Username: "svc", Password: password}},
		Clients:    []authtest.Client{{ID: "shipping-api", Secret: clientSecret}},
		AccessTTL:  10 * time.Minute,
		RefreshTTL: time.Hour,
	})
	t.Cleanup(srv.Close)
	return srv
}

// machine is one "machine": its own store (own directories, own member
// identity) and engine, on a clock the test moves.
type machine struct {
	st  *store.Store
	eng team.Engine
	now *clock
	log *bytes.Buffer
}

type clock struct {
	mu sync.Mutex
	d  time.Duration
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.d) }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.d += d
	c.mu.Unlock()
}

func newMachine(t *testing.T, timeout time.Duration, clk ...*clock) *machine {
	t.Helper()
	dir := t.TempDir()
	m := &machine{now: &clock{}, log: &bytes.Buffer{}}
	if len(clk) > 0 {
		m.now = clk[0]
	}
	a, err := auth.NewClient(auth.Options{Now: m.now.Now})
	if err != nil {
		t.Fatal(err)
	}
	m.st, err = store.Open(store.Options{ConfigDir: filepath.Join(dir, "config"), StateDir: filepath.Join(dir, "state"), Backend: store.BackendPlaintext, Auth: a, Now: m.now.Now, Warn: m.log})
	if err != nil {
		t.Fatal(err)
	}
	m.eng = etcdteam.New(team.Options{Store: m.st, Auth: a, Now: m.now.Now, Warn: m.log, Timeout: timeout})
	return m
}

// freshTeam deletes what an earlier run of the same test in this process
// (go test -count=2) left of team name in c, so that it starts anew.
func freshTeam(t *testing.T, c *etcdtest.Cluster, name string) {
	t.Helper()
	if err := c.DeletePrefix(context.Background(), team.Prefix(name)); err != nil {
		t.Fatalf("etcd: deleting what a run before left of team %s: %v", name, err)
	}
}

func conn(c *etcdtest.Cluster, name string) store.TeamConn {
	return store.TeamConn{Name: name, Endpoints: c.Endpoints()}
}

// teamTimeout is the machines' team timeout (the bound on etcd): generous,
// as no test here is about the bound. Two runs of the suite at once next to
// a CPU hog saw 8 concurrent renewals on two machines of 5 s each end
// queued on the local lock, and a's AddMember of 600 items pass 5 s at
// load 20.
const teamTimeout = 30 * time.Second

// twoMachines makes team name with machine a as founder and b added.
func twoMachines(t *testing.T, c *etcdtest.Cluster, name string, clk ...*clock) (a, b *machine) {
	t.Helper()
	ctx := context.Background()
	freshTeam(t, c, name)
	a, b = newMachine(t, teamTimeout, clk...), newMachine(t, teamTimeout, clk...)
	if _, err := a.eng.Init(ctx, team.JoinOptions{Conn: conn(c, name), Name: "a"}); err != nil {
		t.Fatal(err)
	}
	rb, err := b.eng.Join(ctx, team.JoinOptions{Conn: conn(c, name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.AddMember(ctx, name, rb, "b"); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func newKey(srv *authtest.Server, label string) team.NewKey {
	return team.NewKey{Label: label, Definition: store.Definition{Grant: auth.GrantPassword, Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Username: "svc"}, ClientSecret: clientSecret, Password: password}
}

func TestTwoMachinesShareOneToken(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	clk := &clock{}
	srv := newServer(t, clk)
	ctx := context.Background()
	a, b := twoMachines(t, c, "share", clk)
	if _, err := a.eng.CreateKey(ctx, "share", newKey(srv, "ci")); err != nil {
		t.Fatal(err)
	}
	ta, err := a.eng.Token(ctx, "share", "ci", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.eng.Token(ctx, "share", "ci", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ta.AccessToken != tb.AccessToken {
		t.Fatal("the two machines hand out different tokens")
	}
	if n := srv.Count("token"); n != 1 {
		t.Fatalf("token requests = %d, want 1 (the key's creation)", n)
	}
	// After expiry on both machines' clocks, both renew: one request.
	clk.Add(11 * time.Minute)
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() {
			m := a
			if i%2 == 1 {
				m = b
			}
			ts, err := m.eng.Token(ctx, "share", "ci", team.TokenOptions{})
			if err == nil {
				got[i] = ts.AccessToken
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i] != got[0] || got[i] == ta.AccessToken {
			t.Fatalf("renewal %d handed out another token", i)
		}
	}
	if n := srv.Count("token"); n != 2 {
		t.Fatalf("token requests = %d, want 2 (creation + one renewal for the fleet)", n)
	}
}

func TestRemovedMemberCannotReadNewKey(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	a, b := twoMachines(t, c, "rm")
	if _, err := a.eng.RemoveMember(ctx, "rm", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.CreateKey(ctx, "rm", newKey(srv, "after")); err != nil {
		t.Fatal(err)
	}
	_, err := b.eng.Token(ctx, "rm", "after", team.TokenOptions{})
	if !errors.Is(err, team.ErrNotMember) {
		t.Fatalf("removed member: err = %v, want ErrNotMember", err)
	}
	if !strings.Contains(err.Error(), "not a member of rm") {
		t.Fatalf("error line %q does not say 'not a member of rm'", err)
	}
	if _, err := a.eng.Token(ctx, "rm", "after", team.TokenOptions{}); err != nil {
		t.Fatalf("remaining member: %v", err)
	}
}

func TestJoinedButNotAddedIsNotMember(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	freshTeam(t, c, "pending")
	a := newMachine(t, teamTimeout)
	if _, err := a.eng.Init(ctx, team.JoinOptions{Conn: conn(c, "pending")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.CreateKey(ctx, "pending", newKey(srv, "k")); err != nil {
		t.Fatal(err)
	}
	b := newMachine(t, teamTimeout)
	if _, err := b.eng.Join(ctx, team.JoinOptions{Conn: conn(c, "pending")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Keys(ctx, "pending"); !errors.Is(err, team.ErrNotMember) {
		t.Fatalf("err = %v, want ErrNotMember", err)
	}
}

func TestEtcdHoldsNoPlaintext(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	a, _ := twoMachines(t, c, "cipher")
	if _, err := a.eng.CreateKey(ctx, "cipher", newKey(srv, "secret-label")); err != nil {
		t.Fatal(err)
	}
	ts, err := a.eng.Token(ctx, "cipher", "secret-label", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Fatalf("etcdctl: %v (apt-get install -y etcd-client)", err)
	}
	cmd := exec.CommandContext(ctx, etcdctl, "--endpoints", strings.Join(c.Endpoints(), ","), "get", "--prefix", "/shipkey/teams/cipher/")
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("etcdctl: %v\n%s", err, out)
	}
	// Items are signed envelopes around age ciphertext (base64 in JSON).
	if !bytes.Contains(out, []byte(`"data":"`+base64.StdEncoding.EncodeToString([]byte("age-encryption.org/v1"))[:24])) {
		t.Fatalf("etcdctl shows no age ciphertext:\n%.400s", out)
	}
	for name, s := range map[string]string{"client secret": clientSecret, "password": password, "access token": ts.AccessToken, "refresh token": ts.RefreshToken, "label": "secret-label"} {
		if s != "" && bytes.Contains(out, []byte(s)) {
			t.Errorf("etcdctl get --prefix shows the %s in plaintext", name)
		}
	}
}

func TestRenameAndRemoveShowOnTheOtherMachine(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	a, b := twoMachines(t, c, "cat")
	if _, err := a.eng.CreateKey(ctx, "cat", newKey(srv, "one")); err != nil {
		t.Fatal(err)
	}
	if err := b.eng.RenameKey(ctx, "cat", "one", "two"); err != nil {
		t.Fatal(err)
	}
	keys, err := a.eng.Keys(ctx, "cat")
	if err != nil || len(keys) != 1 || keys[0].Label != "two" {
		t.Fatalf("after rename: %v %v", keys, err)
	}
	if _, err := a.eng.Token(ctx, "cat", "two", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.eng.RemoveKey(ctx, "cat", "two"); err != nil {
		t.Fatal(err)
	}
	a.now.Add(11 * time.Minute)
	if _, err := a.eng.Token(ctx, "cat", "two", team.TokenOptions{}); !errors.Is(err, team.ErrKeyNotFound) {
		t.Fatalf("token of a removed key: %v", err)
	}
}

// TestDefinitionMirrorsStoreKey: a team key's definition carries every
// definition field of store.Key (the one declaration of a key), with the
// same type, so a field added there cannot silently vanish from etcd.
func TestDefinitionMirrorsStoreKey(t *testing.T) {
	t.Parallel()
	// store.Key's fields that are state, not definition; Team and Secrets
	// are where the key and its secrets are kept (the team's prefix in
	// etcd; this machine's secrets backend), not part of it.
	state := map[string]bool{"LastUsed": true, "Default": true, "Token": true, "Masked": true, "LoggedOut": true, "HasRefreshToken": true, "EndPending": true, "Team": true, "TeamRemoved": true, "Secrets": true}
	def := reflect.TypeFor[team.Definition]()
	key := reflect.TypeFor[store.Key]()
	for i := range key.NumField() {
		f := key.Field(i)
		if state[f.Name] {
			continue
		}
		df, ok := def.FieldByName(f.Name)
		if !ok {
			t.Errorf("team.Definition lacks store.Key's %s: add it (and to its JSON) so team keys keep it", f.Name)
			continue
		}
		if df.Type != f.Type {
			t.Errorf("team.Definition.%s is %s, store.Key's is %s", f.Name, df.Type, f.Type)
		}
		if !f.Anonymous && (df.Tag.Get("json") == "" || df.Tag.Get("json") == "-") {
			t.Errorf("team.Definition.%s has no JSON name: it would not reach etcd", f.Name)
		}
	}
}

// The team record carries the whole store.Definition: every field of it,
// each filled with its own value by reflection (so a field added there is
// covered with no change here), survives the record's JSON; and a record
// of the shape written before (the connection as "conn") still reads.
func TestDefinitionSurvivesTheTeamRecord(t *testing.T) {
	t.Parallel()
	var want team.Definition
	n := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case reflect.String:
			v.SetString(fmt.Sprintf("v%d", n))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64:
			v.SetInt(int64(n))
		case reflect.Slice:
			v.Set(reflect.ValueOf([]string{fmt.Sprintf("a%d", n), fmt.Sprintf("b%d", n)}).Convert(v.Type()))
		default:
			t.Fatalf("cannot fill a %s: teach the test the kind", v.Kind())
		}
	}
	fill(reflect.ValueOf(&want.Definition).Elem())
	want.ID, want.Label, want.CreatedAt = "0123456789abcdef", "k", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got team.Definition
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the team record drops a field:\n got %+v\nwant %+v", got, want)
	}
	old := `{"id":"0123456789abcdef","label":"k","conn":{"auth_url":"https://a.example","client_id":"c","basic_auth":true},"grant":"password","username":"u","created_at":"2026-01-02T03:04:05Z"}`
	if err := json.Unmarshal([]byte(old), &got); err != nil {
		t.Fatal(err)
	}
	if got.AuthURL != "https://a.example" || got.ClientID != "c" || got.AuthMethod() != auth.ClientSecretBasic || got.Username != "u" {
		t.Fatalf("an old record read as %+v", got)
	}
}

// ccServer is a token endpoint that speaks only the client credentials
// grant (authtest does not) and counts the tokens it issues.
func ccServer(t *testing.T, clk *clock) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ParseForm() != nil || r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("client_secret") != clientSecret {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"cc-token-%d-%d","token_type":"Bearer","expires_in":600}`, i, clk.Now().UnixNano())
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClientCredentialsTeamKey(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	clk := &clock{}
	srv, issued := ccServer(t, clk)
	ctx := context.Background()
	a, b := twoMachines(t, c, "cc", clk)
	nk := team.NewKey{Label: "robot", Definition: store.Definition{Grant: auth.GrantClientCredentials, Connection: auth.Connection{TokenURL: srv.URL + "/token", ClientID: "robot"}}, ClientSecret: clientSecret}
	if _, err := a.eng.CreateKey(ctx, "cc", nk); err != nil {
		t.Fatal(err)
	}
	clk.Add(11 * time.Minute)
	tb, err := b.eng.Token(ctx, "cc", "robot", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ta, err := a.eng.Token(ctx, "cc", "robot", team.TokenOptions{})
	if err != nil || ta.AccessToken != tb.AccessToken {
		t.Fatalf("machines disagree (%v)", err)
	}
	if n := issued.Load(); n != 2 {
		t.Fatalf("client credentials grants = %d, want 2 (creation, one renewal for both machines)", n)
	}
}

// TestWatchSeesOtherMachine: a key added and renamed on b is reported on a
// (its cache rebuilt) without a on-demand read.
func TestWatchSeesOtherMachine(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	clk := &clock{}
	srv := newServer(t, clk)
	a, b := twoMachines(t, c, "watch", clk)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changes := make(chan struct{}, 16)
	go func() { _ = a.eng.Watch(ctx, "watch", func() { changes <- struct{}{} }) }()
	<-changes // the first sync
	waitFor := func(label string) {
		t.Helper()
		for {
			select {
			case <-changes:
				keys, _ := a.eng.CachedKeys("watch")
				if len(keys) == 1 && keys[0].Label == label {
					return
				}
			case <-ctx.Done():
				t.Fatalf("a's cache never showed %s", label)
			}
		}
	}
	if _, err := b.eng.CreateKey(ctx, "watch", newKey(srv, "w1")); err != nil {
		t.Fatal(err)
	}
	waitFor("w1")
	if err := b.eng.RenameKey(ctx, "watch", "w1", "w2"); err != nil {
		t.Fatal(err)
	}
	waitFor("w2")
}

// TestKilledCacheWriterLeavesNoDebris: a temporary file a killed writer left
// is swept by the next write, and a label with path characters never names
// a file outside the team's directory.
func TestKilledCacheWriterLeavesNoDebris(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	a, _ := twoMachines(t, c, "debris")
	if _, err := a.eng.CreateKey(ctx, "debris", newKey(srv, "k")); err != nil {
		t.Fatal(err)
	}
	_, state := a.st.Paths()
	dir := filepath.Join(state, "teams", "debris")
	stale := filepath.Join(dir, ".cache.age.tmp-12345")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.Keys(ctx, "debris"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed writer's temporary file is still there (%v)", err)
	}
	if _, err := a.eng.Token(ctx, "debris", "../../escape", team.TokenOptions{}); !errors.Is(err, team.ErrKeyNotFound) {
		t.Errorf("token of ../../escape: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "escape.lock")); !os.IsNotExist(err) {
		t.Errorf("a label named a file outside the team's directory")
	}
}
