package cli

import (
	"bytes"
	"context"
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

	"github.com/shipkey/shipkey/auth/authtest"
)

// cliRun is one isolated shipkey installation (its own config, state and
// secrets) that runs the built binary.
type cliRun struct {
	t   *testing.T
	bin string
	ctx context.Context
	env []string
}

const (
	lcPassword     = "lifecycle-password-4c2e"
	lcClientSecret = "lifecycle-secret-8d1b"
	lcClientID     = "shipping-api"
	lcUser         = "alice"
)

// newCLIRun prepares an installation under a fresh temporary directory with
// the plaintext secrets backend (fast: fifty processes start at once; the
// tests here are about the token lifecycle, not secrets at rest).
func newCLIRun(t *testing.T, bin string, timeout time.Duration) *cliRun {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), patience(timeout))
	t.Cleanup(cancel)
	return &cliRun{t: t, bin: bin, ctx: ctx, env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + filepath.Join(dir, "state"),
		"SHIPKEY_SECRETS=plaintext",
		"NO_COLOR=1",
	}}
}

// run runs shipkey with args and returns stdout, stderr and the exit code
// (-1 when it did not exit normally).
func (c *cliRun) run(extraEnv []string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.CommandContext(c.ctx, c.bin, args...)
	cmd.Env = append(append([]string{}, c.env...), extraEnv...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			code = -1
		}
	}
	return o.String(), e.String(), code
}

// newKey runs `keys new` for the realm's alice with extra flags.
func (c *cliRun) newKey(srv *authtest.Server, label string, flags ...string) {
	c.t.Helper()
	args := append([]string{"keys", "new", "--label", label, "--auth-url", srv.URL(), "--client-id", lcClientID, "--username", lcUser}, flags...)
	_, stderr, code := c.run([]string{"SHIPKEY_CLIENT_SECRET=" + lcClientSecret, "SHIPKEY_PASSWORD=" + lcPassword}, args...)
	if code != 0 {
		c.t.Fatalf("keys new: exit %d\n%s", code, stderr)
	}
}

// token runs `shipkey token label` and returns the one printed line.
func (c *cliRun) token(label string) string {
	c.t.Helper()
	out, stderr, code := c.run(nil, "token", label)
	tok := strings.TrimSuffix(out, "\n")
	if code != 0 || tok == "" || strings.Contains(tok, "\n") {
		c.t.Fatalf("token %s: exit %d, stdout %q\n%s", label, code, out, stderr)
	}
	return tok
}

func lcConfig(mod func(*authtest.Config)) authtest.Config {
	cfg := authtest.Config{
		Users: []authtest.User{{Username: lcUser, Password: lcPassword, Email: "alice@example.com",
			FirstName: "Alice", LastName: "Shipper", RealmRoles: []string{"shipper"}}},
		Clients:    []authtest.Client{{ID: lcClientID, Secret: lcClientSecret}},
		AccessTTL:  time.Hour,
		RefreshTTL: 2 * time.Hour,
	}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

// realmWithClock starts the lifecycle realm with access tokens of ttl and a
// clock that runs offset behind or ahead of the machine's (the tests set it
// so that a token is issued with only part of its life left).
func realmWithClock(t *testing.T, ttl time.Duration) (*authtest.Server, *atomic.Int64) {
	t.Helper()
	offset := new(atomic.Int64)
	srv := authtest.NewServer(lcConfig(func(c *authtest.Config) {
		c.AccessTTL = ttl
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	}))
	t.Cleanup(srv.Close)
	return srv, offset
}

// TestShortLivedTokenLifecycle: an 8 s access token is reused for its life
// (two `token` calls in a row make no token request beyond the login), and
// once it has expired fifty concurrent `token` processes make exactly one
// refresh and all print the same new token.
//
// The login's token expires 8 s after it is issued because the realm's clock
// is behind while the key is made (its JWT exp is what shipkey goes by); the
// refreshed token lives 10 minutes: with a short life it could expire again
// before the fiftieth process of a loaded machine has run, and that process
// would rightly refresh once more.
func TestShortLivedTokenLifecycle(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)
	srv, offset := realmWithClock(t, 10*time.Minute)
	c := newCLIRun(t, bin, 4*time.Minute)

	begun := time.Now()
	offset.Store(int64(-(10*time.Minute - 8*time.Second)))
	c.newKey(srv, "k")
	offset.Store(0)
	first := c.token("k")
	second := c.token("k")
	// The token is due for renewal 6 s after begun at the earliest (its
	// exp in whole seconds, less the margin, a tenth of its life). A loaded
	// machine may take longer for keys new and the two calls, and a
	// renewal is then right: the reuse is asserted when they came before.
	if took := time.Since(begun); took < 6*time.Second {
		if got := srv.Count("token"); got != 1 {
			t.Fatalf("token requests after keys new and two `token` calls = %d, want 1 (the login)", got)
		}
		if first != second {
			t.Fatalf("two `token` calls in a row printed different tokens")
		}
	} else {
		t.Logf("keys new and two `token` calls took %v, past the token's renewal: its reuse not asserted", took)
	}

	// Let the access token expire: a bounded poll on what shipkey itself
	// says, without refreshing (keys list never refreshes).
	waitRefreshable(t, 150, func() (string, string, bool) {
		out, stderr, code := c.run(nil, "keys", "list", "--json")
		return out, stderr, code == 0
	})
	if n := srv.Count("refresh_token"); n != 0 {
		t.Fatalf("refreshes before the race: %d", n)
	}

	const procs = 50
	type result struct {
		stdout, stderr string
		code           int
	}
	results := make([]result, procs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o, e, code := c.run(nil, "token", "k")
			results[i] = result{o, e, code}
		}()
	}
	close(start)
	wg.Wait()

	var token string
	for i, r := range results {
		tok := strings.TrimSuffix(r.stdout, "\n")
		if r.code != 0 || tok == "" || strings.Contains(tok, "\n") {
			t.Errorf("process %d: exit %d, stdout %q: %s", i, r.code, r.stdout, r.stderr)
			continue
		}
		if token == "" {
			token = tok
		} else if tok != token {
			t.Errorf("process %d printed another token than the others", i)
		}
	}
	if got := srv.Count("refresh_token"); got != 1 {
		t.Errorf("refresh_token grants = %d, want exactly 1", got)
	}
	if got := srv.Count("password"); got != 1 {
		t.Errorf("password grants = %d, want 1 (the login)", got)
	}
	if token == first {
		t.Errorf("the racers printed the expired token")
	}
}

// refreshAtServer redeems refreshToken at srv's token endpoint directly, as
// anyone holding it could, and returns the status.
func refreshAtServer(t *testing.T, srv *authtest.Server, refreshToken string) int {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "client_id": {lcClientID}, "client_secret": {lcClientSecret}, "refresh_token": {refreshToken}}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.PostForm(srv.Issuer()+"/protocol/openid-connect/token", form)
	if err != nil {
		t.Fatalf("refresh at the server: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
