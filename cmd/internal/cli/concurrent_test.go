package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/scryptcost"
	"github.com/shipkey/shipkey/internal/testbin"
)

// buildShipkey returns the real binary, with shipkey-team beside it, built
// without -race (twenty of them run at once) and linked so that the stores
// it creates are wrapped at a low scrypt work factor (internal/scryptcost):
// the tests that run it check what a derivation guards and how often one
// runs, not what it costs. Linked once for all runs of the same sources
// (internal/testbin).
func buildShipkey(t *testing.T) string {
	t.Helper()
	return lowCostBuild.bin(t)
}

// buildShipkeyRealScrypt is buildShipkey at age's default work factor, as
// users get it: for the test that one derivation (256 MiB) happens per
// session.
func buildShipkeyRealScrypt(t *testing.T) string {
	t.Helper()
	return realBuild.bin(t)
}

// testWorkFactor is the scrypt work factor of buildShipkey's stores (age's
// default is 18).
const testWorkFactor = 12

// The two programs: shipkey (no team engine; it hands team commands to
// shipkey-team, which buildShipkey puts beside it).
const (
	shipkeyPkg     = "github.com/shipkey/shipkey/cmd/shipkey"
	shipkeyTeamPkg = "github.com/shipkey/shipkey/cmd/shipkey-team"
)

var (
	lowCostBuild = &shipkeyBuild{b: testbin.Build{Packages: []string{shipkeyPkg, shipkeyTeamPkg}, LDFlags: scryptcost.LinkerFlag(testWorkFactor)}}
	realBuild    = &shipkeyBuild{b: testbin.Build{Packages: []string{shipkeyPkg, shipkeyTeamPkg}}}
)

// shipkeyBuild is one build, installed once per test process into a
// directory that TestMain removes.
type shipkeyBuild struct {
	b    testbin.Build
	once sync.Once
	dir  string
	err  error
}

func (s *shipkeyBuild) bin(t *testing.T) string {
	t.Helper()
	dir, err := s.install()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "shipkey")
}

// install returns the directory of the build's programs.
func (s *shipkeyBuild) install() (string, error) {
	s.once.Do(func() {
		s.dir, s.err = os.MkdirTemp("", "shipkey-test-bin-")
		if s.err == nil {
			s.err = testbin.Install(s.dir, s.b)
		}
	})
	return s.dir, s.err
}

// removeBuilds removes what buildShipkey and buildShipkeyRealScrypt
// installed.
func removeBuilds() {
	for _, b := range []*shipkeyBuild{lowCostBuild, realBuild} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
}

// TestConcurrentTokenRefreshesOnce runs twenty `shipkey token` processes at
// once on a key whose access token has expired: exactly one may refresh, and
// all must print the new token.
//
// The access token is made expired by backdating the realm's clock while the
// key is created (its JWT exp lies in the past), not by a short lifetime:
// shipkey treats a token as expired auth.Expiry's margin (up to 30 s) early, so a
// lifetime of a few seconds would make every refreshed token look expired too.
func TestConcurrentTokenRefreshesOnce(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)

	var offset atomic.Int64
	// Backdated so that the token's exp lies 3 s ahead when it arrives: auth
	// refuses a token that is already expired on arrival.
	offset.Store(int64(-(10*time.Minute - 3*time.Second)))
	const password, clientSecret = "concurrent-password-7f3a", "concurrent-secret-91bc"
	srv := authtest.NewServer(authtest.Config{
		Users:      []authtest.User{{Username: "alice", Password: password}},
		Clients:    []authtest.Client{{ID: "shipping-api", Secret: clientSecret}},
		AccessTTL:  10 * time.Minute,
		RefreshTTL: 2 * time.Hour,
		Now:        func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
	})
	defer srv.Close()

	dir := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + filepath.Join(dir, "state"),
		"SHIPKEY_SECRETS=file",
		"SHIPKEY_PASSPHRASE=concurrent-passphrase",
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience(4*time.Minute))
	defer cancel()
	shipkey := func(extraEnv []string, args ...string) (stdout, stderr string, err error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(append([]string{}, env...), extraEnv...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}

	_, stderr, err := shipkey([]string{"SHIPKEY_CLIENT_SECRET=" + clientSecret, "SHIPKEY_PASSWORD=" + password},
		"keys", "new", "--label", "k", "--auth-url", srv.URL(), "--client-id", "shipping-api", "--username", "alice")
	if err != nil {
		t.Fatalf("keys new: %v\n%s", err, stderr)
	}
	offset.Store(0)

	// Bounded poll until shipkey itself sees the access token as expired.
	waitRefreshable(t, 50, func() (string, string, bool) {
		out, stderr, err := shipkey(nil, "keys", "list", "--json")
		return out, stderr, err == nil
	})
	if n := srv.Count("refresh_token"); n != 0 {
		t.Fatalf("refreshes before the race: %d", n)
	}

	const procs = 20
	type result struct {
		stdout, stderr string
		err            error
	}
	results := make([]result, procs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o, e, err := shipkey(nil, "token", "k")
			results[i] = result{o, e, err}
		}()
	}
	close(start)
	wg.Wait()

	var token string
	for i, r := range results {
		if r.err != nil {
			var ee *exec.ExitError
			code := -1
			if errors.As(r.err, &ee) {
				code = ee.ExitCode()
			}
			t.Errorf("process %d: exit %d (%v): %s", i, code, r.err, r.stderr)
			continue
		}
		tok := strings.TrimSuffix(r.stdout, "\n")
		if tok == "" || strings.Contains(tok, "\n") {
			t.Errorf("process %d printed %q", i, r.stdout)
			continue
		}
		if token == "" {
			token = tok
		} else if tok != token {
			t.Errorf("process %d printed another token than process 0", i)
		}
	}
	if got := srv.Count("refresh_token"); got != 1 {
		t.Errorf("refresh_token grants = %d, want exactly 1", got)
	}
	if t.Failed() {
		return
	}
	d, err := auth.Decode(token, time.Now())
	if err != nil || d.ExpiresAt.Before(time.Now().Add(5*time.Minute)) {
		t.Errorf("the printed token is not the refreshed one: exp %v (%v)", d.ExpiresAt, err)
	}
	if !introspectActive(t, srv, clientSecret, token) {
		t.Errorf("the server does not accept the printed token")
	}
	for _, s := range []string{password, clientSecret, token} {
		assertNotInTree(t, dir, s)
	}
}

// introspectActive asks the realm whether it accepts token.
func introspectActive(t *testing.T, srv *authtest.Server, clientSecret, token string) bool {
	t.Helper()
	form := url.Values{"client_id": {"shipping-api"}, "client_secret": {clientSecret}, "token": {token}}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.PostForm(srv.Issuer()+"/protocol/openid-connect/token/introspect", form)
	if err != nil {
		t.Fatalf("introspect: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Active bool `json:"active"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("introspect answer: %v", err)
	}
	return body.Active
}

// assertNotInTree fails when any file under dir contains secret.
func assertNotInTree(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds a secret in plaintext", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitRefreshable polls `keys list --json` (run by list, which reports
// whether it exited 0) until its one key reads "refreshable": the access
// token expired by shipkey's own account, nothing refreshed (keys list never
// refreshes). At most tries polls, 100 ms apart.
func waitRefreshable(t *testing.T, tries int, list func() (stdout, stderr string, ok bool)) {
	t.Helper()
	for i := 0; ; i++ {
		out, stderr, ok := list()
		if !ok {
			t.Fatalf("keys list failed:\n%s", stderr)
		}
		var keys []keyJSON
		if err := json.Unmarshal([]byte(out), &keys); err != nil || len(keys) != 1 {
			t.Fatalf("keys list --json = %q (%v)", out, err)
		}
		if keys[0].Status == "refreshable" {
			return
		}
		if i == tries {
			t.Fatalf("the access token never expired: status %q", keys[0].Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
