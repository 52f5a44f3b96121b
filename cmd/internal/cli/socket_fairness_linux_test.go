//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shipkey/shipkey/auth/authtest"
)

// hogConns is how many idle connections the hog holds: beyond a client's
// cap and the socket's old 256-connection queue.
const hogConns = 300

// TestSocketFairToOtherClients: while one client (another process) holds
// 300 kept-alive idle connections to the token socket, another client's
// token request is answered within 2 s (the bound; before, it
// waited in a queue behind them for their 30 s idle timeout), and the
// hog's own oldest connections were closed to make room: it keeps at most
// serveMaxPerClient. For serve and for exec --serve (which had no cap).
func TestSocketFairToOtherClients(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("shipkey")
	if err != nil {
		t.Fatal(err)
	}
	srv := authtest.NewServer(lcConfig(nil))
	t.Cleanup(srv.Close)

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		c := newCLIRun(t, bin, 2*time.Minute)
		c.newKey(srv, "k")
		sock := filepath.Join(t.TempDir(), "s", "token.sock")
		_, stderr, get := startServe(t, c, sock)
		if status, doc := get("/v1/token/k"); status != http.StatusOK {
			t.Fatalf("before the hog: %d %v\n%s", status, doc, stderr())
		}
		hog := exec.CommandContext(c.ctx, "sockethog", strconv.Itoa(hogConns), sock)
		fairToOthers(t, hog, "/v1/token/k")
	})
	t.Run("exec --serve", func(t *testing.T) {
		t.Parallel()
		c := newCLIRun(t, bin, 2*time.Minute)
		c.newKey(srv, "k")
		hog := exec.CommandContext(c.ctx, c.bin, "exec", "--serve", "k", "--", "sockethog", strconv.Itoa(hogConns))
		hog.Env = c.env
		fairToOthers(t, hog, "/v1/token")
	})
}

// fairToOthers starts hog (sockethog, itself or as exec --serve's
// command), waits until it holds its connections, asks the socket for a
// token at path from this process, and checks that the answer came within
// 2 s and that the server closed the hog's oldest connections.
func fairToOthers(t *testing.T, hog *exec.Cmd, path string) {
	t.Helper()
	stdin, err := hog.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := hog.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	hog.Stderr = stderr
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 2*hogConns)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the hog (and exec with it) ends
		for range lines {
		}
		_ = hog.Wait()
	})

	closed := map[int]bool{}
	// await reads the hog's lines (noting each connection closed) until
	// done holds for one, boundedly.
	await := func(what string, limit time.Duration, done func(line string) bool) {
		t.Helper()
		deadline := time.After(patience(limit))
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the hog ended before %s; stderr:\n%s", what, stderr.String())
				}
				if n, ok := strings.CutPrefix(line, "closed "); ok {
					i, _ := strconv.Atoi(n)
					closed[i] = true
				}
				if done(line) {
					return
				}
			case <-deadline:
				t.Fatalf("waited %v for %s (%d of the hog's connections closed); stderr:\n%s", patience(limit), what, len(closed), stderr.String())
			}
		}
	}
	var sock, held string
	await("its socket", 30*time.Second, func(line string) bool {
		s, ok := strings.CutPrefix(line, "socket: ")
		sock = s
		return ok
	})
	await("its connections", 30*time.Second, func(line string) bool {
		h, ok := strings.CutPrefix(line, "held ")
		held = h
		return ok
	})
	if !strings.HasPrefix(held, strconv.Itoa(hogConns)+" ") {
		t.Fatalf("the hog holds %s, want %d connections", held, hogConns)
	}

	// Another client, now: the bound is the deadline of its answer.
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	// 2 s on an idle machine, patience's more on a loaded one: still far
	// below the 30 s the request waited behind the hog before.
	ctx, cancel := context.WithTimeout(context.Background(), patience(2*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://shipkey"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Do(req); err != nil {
		t.Errorf("while one client holds %d idle connections (%s), another's token request had no answer within %v: %v", hogConns, held, patience(2*time.Second), err)
	} else {
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || doc["access_token"] == nil {
			t.Errorf("while one client holds %d idle connections: %d %v", hogConns, resp.StatusCode, doc)
		}
	}

	// The policy: the hog's own oldest connections were closed, as many as
	// it opened beyond its cap.
	if beyondCap := func(string) bool { return closed[0] && len(closed) >= hogConns-serveMaxPerClient }; !beyondCap("") {
		await("the server to close the hog's connections beyond its cap", 10*time.Second, beyondCap)
	}
}

// TestSocketFairPolicy: a client over its cap closes its own connection
// idle the longest (not one in flight: active, a request begun or one
// waiting in the socket); over the socket's cap, the connection idle the
// longest of any client is closed; when nothing is idle the new one is
// refused, saying which cap.
func TestSocketFairPolicy(t *testing.T) {
	t.Parallel()
	l := newFairListener(nil, socketServerOptions{MaxConns: 4, MaxPerClient: 3})
	type pair struct {
		c    *fairConn
		peer *net.UnixConn
	}
	conn := func(pid int) pair {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		end := func(fd int) *net.UnixConn {
			f := os.NewFile(uintptr(fd), "socketpair")
			defer f.Close()
			c, err := net.FileConn(f)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c.(*net.UnixConn)
		}
		return pair{c: &fairConn{UnixConn: end(fds[0]), pid: pid}, peer: end(fds[1])}
	}
	held := func(p pair) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		_, ok := l.conns[p.c]
		return ok
	}
	admit := func(p pair) {
		t.Helper()
		if busy := l.admit(p.c); busy != "" {
			t.Fatalf("pid %d refused: %s", p.c.pid, busy)
		}
	}
	// mustHold checks which are held; a closed one's peer reads EOF.
	mustHold := func(step string, open []pair, gone ...pair) {
		t.Helper()
		for _, p := range open {
			if !held(p) {
				t.Fatalf("%s: a connection of pid %d that should be held was dropped", step, p.c.pid)
			}
		}
		for _, p := range gone {
			_ = p.peer.SetReadDeadline(time.Now().Add(patience(time.Second)))
			if _, err := p.peer.Read(make([]byte, 1)); held(p) || !errors.Is(err, io.EOF) {
				t.Fatalf("%s: a connection of pid %d that should be closed is held (%v)", step, p.c.pid, err)
			}
		}
	}

	a1, a2, a3 := conn(1), conn(1), conn(1)
	admit(a1)
	admit(a2)
	admit(a3)
	l.connState(a2.c, http.StateActive) // in flight
	l.connState(a1.c, http.StateActive) // answered: idle since after a3
	l.connState(a1.c, http.StateIdle)
	a4 := conn(1)
	admit(a4)
	mustHold("pid 1 over its cap", []pair{a1, a2, a4}, a3)

	if _, err := a1.peer.Write([]byte("G")); err != nil { // a request waits in the socket
		t.Fatal(err)
	}
	a5 := conn(1)
	admit(a5)
	mustHold("pid 1 over its cap, a request waiting", []pair{a1, a2, a5}, a4)

	b1, c1 := conn(2), conn(3)
	admit(b1)
	admit(c1) // the socket's cap: a5 was idle longer than b1
	mustHold("the socket's cap", []pair{a1, a2, b1, c1}, a5)

	// b1's request begun (a byte read, still StateNew), c1 in flight:
	// nothing is idle.
	if _, err := b1.peer.Write([]byte("G")); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.c.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	l.connState(c1.c, http.StateActive)
	if busy := l.admit(conn(4).c); !strings.Contains(busy, "the socket holds 4 connections, none idle") {
		t.Errorf("nothing idle at the socket's cap: %q", busy)
	}
	mustHold("refused at the socket's cap", []pair{a1, a2, b1, c1})

	l.connState(b1.c, http.StateClosed)
	a6 := conn(1)
	admit(a6)
	l.connState(a6.c, http.StateActive)
	l.connState(c1.c, http.StateClosed)
	if busy := l.admit(conn(1).c); !strings.Contains(busy, "this process holds 3 connections to the socket, none idle") {
		t.Errorf("nothing idle at pid 1's cap: %q", busy)
	}
	mustHold("refused at pid 1's cap", []pair{a1, a2, a6})
	admit(conn(4)) // another client still gets in
}

// TestSocketAnswersBusy: on the real listener, a connection over the cap
// with nothing idle is answered 503 (busy, Retry-After) and closed, not
// queued; once the first is answered and idle, a new one closes it.
func TestSocketAnswersBusy(t *testing.T) {
	t.Parallel()
	ln, err := listenSocket(filepath.Join(t.TempDir(), "s", "token.sock"))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}, 2), make(chan struct{})
	idle := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	srv, fair := newSocketServer(h, ln, socketServerOptions{MaxConns: 1, MaxPerClient: 1,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateIdle {
				select {
				case idle <- struct{}{}:
				default:
				}
			}
		}})
	go func() { _ = srv.Serve(fair) }()
	t.Cleanup(func() { _ = srv.Close(); ln.remove() })

	ask := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("unix", ln.path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(patience(10 * time.Second)))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: shipkey\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	waitFor := func(what string, ch chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(patience(10 * time.Second)):
			t.Fatalf("waited %v for %s", patience(10*time.Second), what)
		}
	}
	status := func(br *bufio.Reader) (*http.Response, map[string]string) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		return resp, doc
	}

	_, first := ask()
	waitFor("the first request", entered)
	_, second := ask()
	resp, doc := status(second)
	if resp.StatusCode != http.StatusServiceUnavailable || doc["error"] != "busy" || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(doc["error_description"], "none idle") {
		t.Fatalf("over the cap, the first in flight: %d %v %v", resp.StatusCode, resp.Header, doc)
	}
	close(release)
	if resp, _ := status(first); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the first request: %d", resp.StatusCode)
	}
	waitFor("the first connection to be idle", idle)
	_, third := ask()
	if resp, _ := status(third); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("over the cap, the first idle: %d", resp.StatusCode)
	}
	if _, err := first.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("the idle connection was not closed to make room: %v", err)
	}
}
