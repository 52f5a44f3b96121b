//go:build linux

package cli

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// wholeJWT is what a token file may hold: a whole JWT, nothing more.
var wholeJWT = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)

// jwtExp is the exp claim of a JWT (zero when it has none).
func jwtExp(t *testing.T, tok string) time.Time {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("a token whose payload is not base64url: %v", err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("a token whose payload is not JSON: %v", err)
	}
	return time.Unix(claims.Exp, 0)
}

// tokenFileReader reads a token file in a tight loop until stopped,
// keeping each distinct token in the order seen and when it was written
// (the file's modification time: when the reader came to see it depends on
// how busy the machine is); anything but a missing file or a whole JWT is a
// failure.
type tokenFileReader struct {
	mu      sync.Mutex
	tokens  []string
	seenAt  []time.Time // when each token was written
	partial string
	reads   int
	stop    chan struct{}
	done    chan struct{}
}

func readTokenFile(path string, limit time.Duration) *tokenFileReader {
	r := &tokenFileReader{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for end := time.Now().Add(limit); time.Now().Before(end); {
			select {
			case <-r.stop:
				return
			default:
			}
			data, written, err := readWritten(path)
			r.mu.Lock()
			r.reads++
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case len(r.tokens) == 0 && string(data) == "keep": // the planted link, before the first write
			case err != nil || !wholeJWT.Match(data):
				if r.partial == "" {
					r.partial = string(data) + " " + errString(err)
				}
			case len(r.tokens) == 0 || r.tokens[len(r.tokens)-1] != string(data):
				r.tokens = append(r.tokens, string(data))
				r.seenAt = append(r.seenAt, written)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// readWritten reads the file at path and when it was last written (both
// of the one file opened: a file renamed over it after is not mixed in).
func readWritten(path string) ([]byte, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return data, time.Time{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		return data, time.Time{}, err
	}
	return data, fi.ModTime(), nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (r *tokenFileReader) seen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tokens)
}

func (r *tokenFileReader) end() {
	close(r.stop)
	<-r.done
}

// serve --sink keeps a 5-second token fresh in its file: each token is
// replaced before it expires, a reader in a tight loop sees whole tokens
// only, a symbolic link planted at the path is replaced, not followed; a
// logout by another process removes the file, and a renewal that keeps
// failing leaves the last token until it expires, then removes it. exec
// --token-file gives its command such a file, removed when it ends.
func TestTokenFileKeptFresh(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)
	srv := authtest.NewServer(lcConfig(func(c *authtest.Config) { c.AccessTTL = 5 * time.Second }))
	t.Cleanup(srv.Close)
	c := newCLIRun(t, bin, 3*time.Minute)
	c.newKey(srv, "k")
	c.newKey(srv, "failing")

	// exec --token-file: the command reads its token from the file.
	out, stderr, code := c.run(nil, "exec", "--token-file", "k", "--", "sh", "-c",
		`echo "$SHIPKEY_TOKEN_FILE"; stat -c %a "$SHIPKEY_TOKEN_FILE"; [ "$(cat "$SHIPKEY_TOKEN_FILE")" = "$SHIPKEY_TOKEN" ] && echo same`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || lines[1] != "600" || lines[2] != "same" {
		t.Fatalf("exec --token-file: exit %d, stdout %q\n%s", code, out, stderr)
	}
	for _, p := range []string{lines[0], filepath.Dir(lines[0])} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the command ended (%v)", p, err)
		}
	}

	dir := filepath.Join(t.TempDir(), "sink")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path, failing := filepath.Join(dir, "token"), filepath.Join(dir, "failing.token")
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(c.ctx, bin, "serve", "--sink", path+":k", "--sink", failing+":failing")
	cmd.Env = c.env
	var errBuf syncBuffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	r := readTokenFile(path, patience(60*time.Second))
	if !eventually(30*time.Second, func() bool { return r.seen() >= 3 }) {
		r.end()
		t.Fatalf("the token file was not renewed twice; seen %d tokens in %d reads; stderr:\n%s", r.seen(), r.reads, errBuf.String())
	}
	r.end()
	if r.partial != "" {
		t.Fatalf("a reader saw %q in the token file", r.partial)
	}
	for i := 1; i < len(r.tokens); i++ {
		if exp := jwtExp(t, r.tokens[i-1]); !r.seenAt[i].Before(exp) {
			t.Errorf("token %d was replaced at %s, after it expired at %s", i, r.seenAt[i].Format(time.StampMilli), exp.Format(time.StampMilli))
		}
	}
	t.Logf("%d reads, %d tokens", r.reads, len(r.tokens))
	if data, err := os.ReadFile(victim); err != nil || string(data) != "keep" {
		t.Errorf("the symbolic link's target was written: %q, %v", data, err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file: %v, %v; want a regular file, mode 0600", fi.Mode(), err)
	}

	// Another process logs the key out: the file goes.
	if _, stderr, code := c.run(nil, "logout", "k"); code != 0 {
		t.Fatalf("logout: exit %d\n%s", code, stderr)
	}
	if !eventually(10*time.Second, func() bool { _, err := os.Lstat(path); return errors.Is(err, fs.ErrNotExist) }) {
		t.Fatalf("the token file is still there after the logout; stderr:\n%s", errBuf.String())
	}
	// The file goes first, then the line is said: wait for it.
	if !eventually(10*time.Second, func() bool {
		return strings.Contains(errBuf.String(), "token file "+path+": removed: key k was logged out")
	}) {
		t.Errorf("the removal is not said; stderr:\n%s", errBuf.String())
	}

	// The realm refuses every renewal now: the other key's token stays on
	// file until it expires, then the file goes, each said once.
	if _, err := os.Stat(failing); err != nil {
		t.Fatal(err)
	}
	srv.Inject(authtest.Fault{Endpoint: "token", Status: 503, Times: 1000, Body: `{"error":"temporarily_unavailable"}`})
	if !eventually(20*time.Second, func() bool { return strings.Contains(errBuf.String(), "renewing key failing's token failed") }) {
		t.Fatalf("no failed renewal said; stderr:\n%s", errBuf.String())
	}
	if now, err := os.ReadFile(failing); err == nil && !wholeJWT.Match(now) {
		t.Errorf("after the failed renewal the file holds %q", now)
	}
	if !eventually(20*time.Second, func() bool { _, err := os.Lstat(failing); return errors.Is(err, fs.ErrNotExist) }) {
		t.Fatalf("the token file is still there after its token expired; stderr:\n%s", errBuf.String())
	}
	// The file goes first, then the line is said: wait for it.
	eventually(10*time.Second, func() bool {
		return strings.Contains(errBuf.String(), "removed: key failing's token expired and could not be renewed")
	})
	said := errBuf.String()
	failed, removed := strings.Index(said, "renewing key failing's token failed"), strings.Index(said, "removed: key failing's token expired and could not be renewed")
	if removed < failed || !strings.Contains(said, "the token on file stays until it expires at") {
		t.Errorf("the failure, then the removal at expiry, are not said; stderr:\n%s", said)
	}
	t.Logf("stderr:\n%s", said)
	if n := strings.Count(errBuf.String(), "renewing key failing's token failed"); n != 1 {
		t.Errorf("the failure said %d times, want once; stderr:\n%s", n, errBuf.String())
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v; stderr:\n%s", err, errBuf.String())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "victim" {
		t.Errorf("left in the directory: %v", entries)
	}
}
