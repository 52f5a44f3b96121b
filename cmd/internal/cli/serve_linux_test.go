//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
)

// TestServeSocket runs shipkey serve as a user would: the socket is 0600 in
// a 0700 directory; 100 clients asking at once after the token expired
// cause exactly one refresh at the server and all get the new token; keys
// not named are not served; curl --unix-socket works; a peer of another
// user is refused even when the file modes would let it in (when the test
// can switch uid); SIGTERM stops it and removes the socket.
func TestServeSocket(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("shipkey")
	if err != nil {
		t.Fatal(err)
	}
	var offset atomic.Int64
	// Backdated so that the token's exp lies 3 s ahead when it arrives:
	// within the lifecycle's margin, so due for a refresh at once.
	offset.Store(int64(-(10*time.Minute - 3*time.Second)))
	srv := authtest.NewServer(lcConfig(func(c *authtest.Config) {
		c.AccessTTL = 10 * time.Minute
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	}))
	t.Cleanup(srv.Close)
	c := newCLIRun(t, bin, 2*time.Minute)
	c.newKey(srv, "k")
	c.newKey(srv, "other")
	offset.Store(0)
	before := srv.Count("refresh_token")

	dir := filepath.Join(t.TempDir(), "sock")
	sock := filepath.Join(dir, "token.sock")
	cmd := exec.CommandContext(c.ctx, bin, "serve", "--socket", sock, "--key", "k")
	cmd.Env = c.env
	var stderrBuf syncBuffer
	cmd.Stderr = &stderrBuf
	stderr := stderrBuf.String
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if !eventually(10*time.Second, func() bool { return socketAnswers(sock) }) {
		t.Fatalf("the socket never answered; stderr:\n%s", stderr())
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, sock: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %04o", path, fi.Mode().Perm(), err, want)
		}
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 100,
	}}
	get := func(path string) (int, []byte) {
		resp, err := client.Get("http://shipkey" + path)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	const clients = 100
	tokens := make([]string, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Go(func() {
			<-start
			status, body := get("/v1/token/k?min_valid=60")
			var doc map[string]any
			if status != http.StatusOK || json.Unmarshal(body, &doc) != nil {
				t.Errorf("client %d: %d %s", i, status, body)
				return
			}
			for _, f := range []string{"access_token", "token_type", "expires_at", "key", "scope"} {
				if _, ok := doc[f]; !ok {
					t.Errorf("client %d: no %s in %s", i, f, body)
				}
			}
			tokens[i], _ = doc["access_token"].(string)
		})
	}
	close(start)
	wg.Wait()
	if n := srv.Count("refresh_token") - before; n != 1 {
		t.Errorf("%d refreshes at the server for %d clients after expiry, want 1", n, clients)
	}
	for i, tok := range tokens {
		if tok == "" || tok != tokens[0] {
			t.Fatalf("client %d got another token than client 0", i)
		}
	}

	if status, body := get("/v1/token/other"); status != http.StatusForbidden || !strings.Contains(string(body), "not served") {
		t.Errorf("a key not named: %d %s", status, body)
	}
	if status, _ := get("/v1/token/k?min_valid=soon"); status != http.StatusBadRequest {
		t.Errorf("a bad min_valid: %d", status)
	}

	// curl, as docs/handoff.md says.
	out, err := exec.CommandContext(c.ctx, "curl", "-sS", "--unix-socket", sock, "http://shipkey/v1/token/k").Output()
	if err != nil || !strings.Contains(string(out), `"access_token": "`+tokens[0]+`"`) {
		t.Errorf("curl --unix-socket: %v\n%s", err, out)
	}

	// Another user, let in by the file modes, is still refused by its uid.
	if os.Getuid() == 0 {
		// Every directory above the socket opened to others, as a careless
		// mount might.
		for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(sock, 0o666); err != nil {
			t.Fatal(err)
		}
		nobody := exec.CommandContext(c.ctx, "curl", "-sS", "--unix-socket", sock, "http://shipkey/v1/token/k")
		nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := nobody.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "serves only its owner") || strings.Contains(string(out), tokens[0]) {
			t.Errorf("uid 65534: %v\n%s", err, out)
		}
		// serve wrote the line before it answered, but the pipe's copy into
		// stderrBuf may lag behind: look again, boundedly.
		if !eventually(10*time.Second, func() bool { return strings.Contains(stderr(), "refused a connection from uid 65534") }) {
			t.Errorf("serve did not say it refused uid 65534:\n%s", stderr())
		}
	} else {
		t.Log("not root: the other-uid check needs to switch uid")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, stderr())
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after SIGTERM (%v)", err)
	}
	if strings.Contains(stderr(), tokens[0]) {
		t.Error("serve printed the token on stderr")
	}
}

// TestServeBounds: serve refuses a socket under a directory others can
// write; 50 clients asking for a min_valid beyond the token's life get the
// token on hand with a warning, not 50 renewals; 600 connections of one
// client that send nothing never make it hold more than that client's cap
// (serveMaxPerClient), and a real client is served after them.
func TestServeBounds(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("shipkey")
	if err != nil {
		t.Fatal(err)
	}
	srv := authtest.NewServer(lcConfig(func(c *authtest.Config) { c.AccessTTL = 2 * time.Minute }))
	t.Cleanup(srv.Close)
	c := newCLIRun(t, bin, 2*time.Minute)
	c.newKey(srv, "k")

	// A parent others can write: refused, one line.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	badCtx, cancel := context.WithTimeout(c.ctx, 30*time.Second) // a serve that starts is a failure, not a hang
	defer cancel()
	bad := exec.CommandContext(badCtx, bin, "serve", "--socket", filepath.Join(open, "sock", "token.sock"))
	bad.Env = c.env
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "other users can write") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("a socket under a world-writable parent: %v\n%s", err, out)
	}

	// The unlock agent's own directory, and one above it, are refused: the
	// socket's directory is what a container mounts.
	var run string
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok {
			run = v
		}
	}
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{filepath.Join(run, "shipkey-agent", "token.sock"), filepath.Join(run, "token.sock")} {
		_, stderr, code := c.run(nil, "serve", "--socket", s)
		if code != 1 || !strings.Contains(stderr, "the unlock agent's directory") {
			t.Errorf("serve --socket %s: exit %d\n%s", s, code, stderr)
		}
	}

	sock := filepath.Join(run, "shipkey", "token.sock") // docs/handoff.md's place
	cmd, _, get := startServe(t, c, sock)

	before := srv.Count("refresh_token")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			status, doc := get("/v1/token/k?min_valid=3600")
			warning, _ := doc["warning"].(string)
			if status != http.StatusOK || doc["access_token"] == nil || !strings.Contains(warning, "beyond this key's token life") {
				t.Errorf("client %d: %d %v", i, status, doc)
			}
		})
	}
	wg.Wait()
	if n := srv.Count("refresh_token") - before; n > 1 {
		t.Errorf("%d renewals for 50 clients asking min_valid beyond the token's life, want at most 1", n)
	}

	// Connections that send nothing, from this one process: serve holds at
	// most serveMaxPerClient of them, closing the oldest for each new one.
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range 600 {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			break // the backlog is full: what matters is what serve holds
		}
		held = append(held, conn)
	}
	if len(held) <= serveMaxPerClient {
		t.Fatalf("only %d connections made: nothing over the cap to test", len(held))
	}
	// Once serve has closed the last connection over the cap, it has taken
	// them all (the cap closes them in the order they came).
	beyond := held[len(held)-serveMaxPerClient-1]
	_ = beyond.SetReadDeadline(time.Now().Add(patience(10 * time.Second)))
	if _, err := beyond.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("serve did not close this client's oldest connections over its cap: %v", err)
	}
	most := 0
	for range 20 {
		most = max(most, fds())
		time.Sleep(10 * time.Millisecond)
	}
	if most > serveMaxPerClient+32 {
		t.Errorf("serve held %d files for %d silent connections of one client; its cap is %d", most, len(held), serveMaxPerClient)
	}
	// A real client is served at once: its oldest idle one makes room.
	if status, doc := get("/v1/token/k"); status != http.StatusOK || doc["access_token"] == nil {
		t.Errorf("a client after the silent connections: %d %v", status, doc)
	}
}

// TestServeClosesIdleConnections: a client that made a request and then
// keeps its connection open, silent, is closed by serve after the idle
// timeout (here shortened), so held connections cannot use up its files.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	conn := serveInProcess(t, &serveOptions{IdleTimeout: 200 * time.Millisecond})
	if _, err := io.WriteString(conn, "GET /v1/token/no-such-key HTTP/1.1\r\nHost: shipkey\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.Close {
		t.Fatal("serve closed the connection after the request: nothing idle to test")
	}
	// Then nothing: serve closes the idle connection (bounded wait).
	_ = conn.SetReadDeadline(time.Now().Add(patience(20 * time.Second)))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection was still open: %v", err)
	}
}

// TestServeClosesStuckWriters: a client that pipelines requests on one
// connection and never reads the answers fills the socket's buffers, so
// serve's write blocks; serve closes that connection after the write
// timeout (here shortened) instead of holding it, and its files, forever.
func TestServeClosesStuckWriters(t *testing.T) {
	t.Parallel()
	// A connection that made requests and was closed: not one of the wait's
	// probes, which send nothing.
	var mu sync.Mutex
	asked := map[net.Conn]bool{}
	closed := make(chan struct{}, 1)
	conn := serveInProcess(t, &serveOptions{WriteTimeout: 300 * time.Millisecond,
		ConnState: func(c net.Conn, s http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case s == http.StateActive:
				asked[c] = true
			case s == http.StateClosed && asked[c]:
				select {
				case closed <- struct{}{}:
				default:
				}
			}
		}})
	// Pipelined requests, never read: serve answers until the buffers are
	// full and its write blocks; then this write blocks too and times out.
	written := make(chan int, 1)
	go func() {
		req := strings.Repeat("GET /v1/token/no-such-key HTTP/1.1\r\nHost: shipkey\r\n\r\n", 100)
		n := 0
		for ; n < 2000; n++ { // 200,000 answers: far beyond any socket buffer
			_ = conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.WriteString(conn, req); err != nil {
				break
			}
		}
		written <- n * 100
	}()
	select {
	case <-closed:
	case <-time.After(patience(30 * time.Second)):
		t.Fatalf("serve still holds a connection whose answers nobody reads (waited %v)", patience(30*time.Second))
	}
	if n := <-written; n >= 200000 {
		t.Fatalf("all %d requests were taken: serve's writes never blocked, nothing tested", n)
	}
}

// serveInProcess runs serveRun with opts on the test store (a socket in a
// fresh directory) until the test ends, and returns a new connection to it
// (the probes of the wait send nothing and are closed).
func serveInProcess(t *testing.T, opts *serveOptions) net.Conn {
	t.Helper()
	st, _ := testStore(t, time.Now)
	opts.IO, _, _ = testIO("")
	opts.Store = func() (*store.Store, error) { return st, nil }
	opts.Socket = filepath.Join(t.TempDir(), "s", "token.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveRun(ctx, opts) }()
	t.Cleanup(func() { cancel(); <-done })
	if !eventually(10*time.Second, func() bool { return socketAnswers(opts.Socket) }) {
		t.Fatal("the socket never answered")
	}
	conn, err := net.Dial("unix", opts.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestServeFollowsTheUnlock: serve on the file backend ends its unlock with
// the session's, by shipkey lock (kernel keyring) and by the idle timeout
// (the agent, SHIPKEY_UNLOCK_TIMEOUT=3s): while locked it still hands out
// the token it handed out before, answers a renewal 503 store_locked, and
// says so in one line for the lock whatever the number of requests, though
// it was given SHIPKEY_PASSPHRASE; after shipkey unlock it renews again,
// without a restart.
func TestServeFollowsTheUnlock(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)
	srv, offset := realmWithClock(t, 10*time.Minute)
	c := newCLIRun(t, bin, 3*time.Minute)
	for i, kv := range c.env {
		if strings.HasPrefix(kv, "SHIPKEY_SECRETS=") {
			c.env[i] = "SHIPKEY_SECRETS=file"
		}
	}
	const passphrase = "serve follows the unlock"
	c.env = append(c.env, "SHIPKEY_PASSPHRASE="+passphrase)
	// k's token stays valid for 10 minutes; every token of "due" arrives
	// 3 s before its exp (the realm's clock is behind), so each request for
	// it with min_valid=60 is a renewal.
	c.newKey(srv, "k")
	offset.Store(int64(-(10*time.Minute - 3*time.Second)))
	c.newKey(srv, "due")
	t.Cleanup(func() { c.run([]string{"SHIPKEY_UNLOCK_MECH=agent"}, "lock") })

	run := ""
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok {
			run = v
		}
	}
	if err := os.MkdirAll(run, 0o700); err != nil { // where the agent's directory goes
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s", "token.sock")
	serve := func(env ...string) (*exec.Cmd, func() string, func(string) (int, map[string]any)) {
		cmd, stderr, get := startServe(t, c, sock, env...)
		return cmd, stderr, func(label string) (int, map[string]any) { return get("/v1/token/" + label) }
	}
	// lines waits (boundedly: the pipe's copy may lag) until stderr holds
	// want lines naming shipkey unlock, and fails on more.
	lines := func(stderr func() string, want int) {
		t.Helper()
		n := 0
		eventually(5*time.Second, func() bool { n = strings.Count(stderr(), "shipkey unlock"); return n >= want })
		if n != want {
			t.Fatalf("%d lines naming shipkey unlock on serve's stderr, want %d:\n%s", n, want, stderr())
		}
	}
	renewals := func() int { return srv.Count("refresh_token") }
	const due = "due?min_valid=60"
	// locked checks serve while locked: k's token handed out before is
	// handed out again, a renewal of "due" is refused, one line says so.
	locked := func(stderr func() string, get func(string) (int, map[string]any), tok string) {
		t.Helper()
		for range 3 {
			if status, doc := get("k"); status != http.StatusOK || doc["access_token"] != tok {
				t.Fatalf("locked, not the token handed out before: %d %v %v", status, doc["error"], doc["error_description"])
			}
		}
		before := renewals()
		for range 3 {
			status, doc := get(due)
			desc, _ := doc["error_description"].(string)
			if status != http.StatusServiceUnavailable || doc["error"] != "store_locked" || !strings.Contains(desc, "shipkey unlock") {
				t.Fatalf("locked, a renewal: %d %v %q (a token: %v)", status, doc["error"], desc, doc["access_token"] != nil)
			}
		}
		if n := renewals() - before; n != 0 {
			t.Fatalf("locked, %d renewals reached the server", n)
		}
		lines(stderr, 1)
	}
	unlockAgain := func(stderr func() string, get func(string) (int, map[string]any), env ...string) {
		t.Helper()
		if _, errOut, code := c.run(env, "unlock"); code != 0 {
			t.Fatalf("shipkey unlock: exit %d\n%s", code, errOut)
		}
		before := renewals()
		if status, doc := get(due); status != http.StatusOK || doc["access_token"] == nil {
			t.Fatalf("unlocked again, a renewal: %d %v %v", status, doc["error"], doc["error_description"])
		}
		if renewals() == before {
			t.Fatal("unlocked again, no renewal reached the server")
		}
		lines(stderr, 1)
	}

	// By shipkey lock, the kernel keyring keeping the unlock.
	cmd, stderr, get := serve()
	status, doc := get("k")
	tok, _ := doc["access_token"].(string)
	if status != http.StatusOK || tok == "" {
		t.Fatalf("k: %d %v", status, doc)
	}
	if status, doc := get(due); status != http.StatusOK {
		t.Fatalf("due, unlocked: %d %v", status, doc)
	}
	if _, errOut, code := c.run(nil, "lock"); code != 0 || !strings.Contains(errOut, "locked") {
		t.Fatalf("shipkey lock: exit %d\n%s", code, errOut)
	}
	locked(stderr, get, tok)
	unlockAgain(stderr, get)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if strings.Contains(stderr(), tok) || strings.Contains(stderr(), passphrase) {
		t.Fatalf("a secret on serve's stderr:\n%s", stderr())
	}

	// By the idle timeout, the agent keeping the unlock: it exits once its
	// unlock timed out (nothing used it), which a look at its directory
	// sees without using it.
	agent := []string{"SHIPKEY_UNLOCK_MECH=agent", "SHIPKEY_UNLOCK_TIMEOUT=3s"}
	cmd, stderr, get = serve(agent...)
	if status, doc := get("k"); status != http.StatusOK || doc["access_token"] != tok {
		t.Fatalf("k from the second serve: %d %v", status, doc)
	}
	agentSocks := func() []string {
		socks, _ := filepath.Glob(filepath.Join(run, "shipkey-agent", "*.sock"))
		return socks
	}
	if len(agentSocks()) != 1 {
		t.Fatalf("no agent keeps serve's unlock (%v); stderr:\n%s", agentSocks(), stderr())
	}
	if !eventually(30*time.Second, func() bool { return len(agentSocks()) == 0 }) {
		t.Fatalf("the agent still serves %v after a 3 s idle timeout: %v", patience(30*time.Second), agentSocks())
	}
	locked(stderr, get, tok)
	unlockAgain(stderr, get, "SHIPKEY_UNLOCK_MECH=agent")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
}

// startServe starts `shipkey serve --socket sock` with c's environment and
// env, stopped when the test ends, and waits until it answers. It returns
// the process, its stderr so far, and a GET of a path on the socket (a
// failed request is an error of the test: status 0).
func startServe(t *testing.T, c *cliRun, sock string, env ...string) (*exec.Cmd, func() string, func(path string) (int, map[string]any)) {
	t.Helper()
	cmd := exec.CommandContext(c.ctx, c.bin, "serve", "--socket", sock)
	cmd.Env = append(append([]string{}, c.env...), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !eventually(30*time.Second, func() bool { return socketAnswers(sock) }) {
		t.Fatalf("the socket never answered; stderr:\n%s", stderr.String())
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	get := func(path string) (int, map[string]any) {
		resp, err := client.Get("http://shipkey" + path)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		return resp.StatusCode, doc
	}
	return cmd, stderr.String, get
}

// socketAnswers reports whether something accepts a connection on sock.
func socketAnswers(sock string) bool {
	conn, err := net.Dial("unix", sock)
	if err == nil {
		conn.Close()
	}
	return err == nil
}
