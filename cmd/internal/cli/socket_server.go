package cli

// The token socket's HTTP server, one set-up for shipkey serve and exec
// --serve: timeouts for each stage of a connection's life, and a listener
// that shares the connections fairly among the clients (processes) of the
// socket's owner instead of queueing them. Accept never waits on a client.

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// serveMaxConns caps the connections one token socket holds at once.
	// A held connection costs a goroutine, its buffers and a file: about
	// 40 KB (a child holding 3,011 came to 118 MB), so 256 bound that near
	// 10 MB, and a quarter of the 1,024 files a process is first allowed
	// leaves room for the store's files and the connections to the auth
	// server. At the cap a new connection closes the one idle the longest.
	serveMaxConns = 256
	// serveMaxPerClient caps the connections of one client (one process,
	// by the pid SO_PEERCRED gives): half of serveMaxConns, so one process
	// never holds more than half of the socket, while a pool asking a
	// hundred tokens at once still fits (Go's transport keeps 2 idle
	// connections per host, curl one). Over it, a new connection closes
	// that client's own connection idle the longest.
	serveMaxPerClient = serveMaxConns / 2
	// maxRefusing caps the connections being answered 403 or 503 at once
	// (each for at most refuseDeadline); beyond it one is closed without
	// an answer, so a flood of refused connections holds no more files.
	maxRefusing = 64
	// refuseDeadline bounds the answer to a refused connection: it is a
	// few hundred bytes, written to a local socket.
	refuseDeadline = time.Second

	// socketReadHeaderTimeout: a local client sends its request at once;
	// 10 s is slack for a loaded machine, and closes a connection that
	// sends nothing (or half a request) long before its file matters.
	socketReadHeaderTimeout = 10 * time.Second
	// socketReadTimeout: the bodies are small (a proof request is a few
	// hundred bytes of JSON), so the whole request within 15 s.
	socketReadTimeout = 15 * time.Second
	// socketWriteTimeout: an answer may wait for a renewal (or a token
	// exchange) at the auth server, whose requests time out after 30 s
	// each; 3 min leaves room for a few, and closes a client that stops
	// reading its answers.
	socketWriteTimeout = 3 * time.Minute
	// socketIdleTimeout: a client's pool reuses a kept-alive connection
	// within seconds; 30 s between requests keeps that and frees the file
	// of one that went away (Go's transport drops its own after 90 s).
	socketIdleTimeout = 30 * time.Second
)

// socketServerOptions are a token socket's knobs; zero values take the
// defaults above.
type socketServerOptions struct {
	IdleTimeout  time.Duration
	WriteTimeout time.Duration
	// ConnState, when set, is told each connection's changes of state too.
	ConnState func(net.Conn, http.ConnState)
	// Refused is told the uid of each peer of another user (-1: unknown),
	// which is answered 403 and closed.
	Refused func(uid int)
	// MaxConns and MaxPerClient: serveMaxConns and serveMaxPerClient.
	MaxConns, MaxPerClient int
}

// newSocketServer serves handler on ln: run srv.Serve(fair).
func newSocketServer(handler http.Handler, ln *socketListener, o socketServerOptions) (srv *http.Server, fair net.Listener) {
	fl := newFairListener(ln, o)
	srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: socketReadHeaderTimeout,
		ReadTimeout:       socketReadTimeout,
		WriteTimeout:      cmp.Or(o.WriteTimeout, socketWriteTimeout),
		IdleTimeout:       cmp.Or(o.IdleTimeout, socketIdleTimeout),
		MaxHeaderBytes:    16 << 10,
		// Each request knows its peer process (the audit trail's
		// receiver).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if fc, ok := c.(*fairConn); ok {
				return withPeer(ctx, fc.pid)
			}
			return ctx
		},
		ConnState: func(c net.Conn, s http.ConnState) {
			fl.connState(c, s)
			if o.ConnState != nil {
				o.ConnState(c, s)
			}
		},
	}
	return srv, fl
}

// fairListener accepts the connections of the socket owner's processes,
// at most maxPerClient per process and maxConns in all. A connection over
// either cap closes the connection idle the longest (of its own process
// when over the process's cap), or, when none is idle, is answered 503 and
// closed. Peers of another user are answered 403 and closed.
//
// Idle means waiting for a request with none begun: http.StateNew or
// StateIdle, nothing read since, nothing waiting in the socket. A request
// the server already buffered behind another (HTTP pipelining) is not
// seen; its client finds the connection closed before an answer, which Go's
// transport retries on a kept-alive connection.
type fairListener struct {
	ln           *socketListener
	refused      func(uid int)
	maxConns     int
	maxPerClient int
	refusing     chan struct{} // a slot per refusal being answered

	mu      sync.Mutex
	conns   map[*fairConn]struct{} // the connections held
	clients map[int]int            // connections held per pid
	ticks   uint64                 // orders the moments connections became idle
}

// fairConn is a held connection: its client and whether it is idle.
type fairConn struct {
	*net.UnixConn
	pid int

	// Under the listener's mu:
	idle      bool   // StateNew or StateIdle
	idleSince uint64 // the listener's tick when it became idle

	read atomic.Bool // a byte was read since it became idle: a request begun
}

func newFairListener(ln *socketListener, o socketServerOptions) *fairListener {
	return &fairListener{
		ln:           ln,
		refused:      o.Refused,
		maxConns:     cmp.Or(o.MaxConns, serveMaxConns),
		maxPerClient: cmp.Or(o.MaxPerClient, serveMaxPerClient),
		refusing:     make(chan struct{}, maxRefusing),
		conns:        map[*fairConn]struct{}{},
		clients:      map[int]int{},
	}
}

func (c *fairConn) Read(p []byte) (int, error) {
	n, err := c.UnixConn.Read(p)
	if n > 0 {
		c.read.Store(true)
	}
	return n, err
}

func (l *fairListener) Accept() (net.Conn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, pid, err := peerCred(c)
		if err != nil || uid != l.ln.uid {
			if err != nil {
				uid = -1
			}
			if l.refused != nil {
				l.refused(uid)
			}
			l.refuse(c, http.StatusForbidden, "forbidden", "this socket serves only its owner's processes")
			continue
		}
		fc := &fairConn{UnixConn: c, pid: pid}
		busy := l.admit(fc)
		if busy == "" {
			return fc, nil
		}
		l.refuse(c, http.StatusServiceUnavailable, "busy", busy)
	}
}

func (l *fairListener) Close() error   { return l.ln.Close() }
func (l *fairListener) Addr() net.Addr { return l.ln.Addr() }

// admit holds c, closing the connection idle the longest when a cap is
// reached. It returns why c is refused instead ("" when held): nothing
// under the cap was idle.
func (l *fairListener) admit(c *fairConn) (busy string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var victim *fairConn
	switch {
	case l.clients[c.pid] >= l.maxPerClient:
		if victim = l.oldestIdle(c.pid); victim == nil {
			return "this process holds " + strconv.Itoa(l.maxPerClient) + " connections to the socket, none idle: reuse one, or retry once an answer has come"
		}
	case len(l.conns) >= l.maxConns:
		if victim = l.oldestIdle(-1); victim == nil {
			return "the socket holds " + strconv.Itoa(l.maxConns) + " connections, none idle: retry shortly"
		}
	}
	if victim != nil {
		l.forget(victim)
		_ = victim.Close() // the server's read ends; it drops the connection
	}
	l.conns[c] = struct{}{}
	l.clients[c.pid]++
	l.ticks++
	c.idle, c.idleSince = true, l.ticks
	return ""
}

// oldestIdle is the held connection of pid (any pid: -1) idle the longest,
// or nil. Under mu; it looks at each candidate's socket once.
func (l *fairListener) oldestIdle(pid int) *fairConn {
	var idle []*fairConn
	for c := range l.conns {
		if c.idle && (pid < 0 || c.pid == pid) {
			idle = append(idle, c)
		}
	}
	slices.SortFunc(idle, func(a, b *fairConn) int { return cmp.Compare(a.idleSince, b.idleSince) })
	for _, c := range idle {
		if !c.read.Load() && pendingBytes(c.UnixConn) == 0 {
			return c
		}
	}
	return nil
}

// connState follows the server's view of each held connection.
func (l *fairListener) connState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*fairConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, held := l.conns[c]; !held {
		return // closed to make room: nothing more to follow
	}
	switch s {
	case http.StateActive:
		c.idle = false
	case http.StateIdle:
		l.ticks++
		c.idle, c.idleSince = true, l.ticks
		c.read.Store(false)
	case http.StateHijacked, http.StateClosed:
		l.forget(c)
	}
}

// forget stops counting c. Under mu.
func (l *fairListener) forget(c *fairConn) {
	delete(l.conns, c)
	if l.clients[c.pid]--; l.clients[c.pid] <= 0 {
		delete(l.clients, c.pid)
	}
}

// refuse answers status to a connection not served and closes it, off
// Accept's path; when maxRefusing answers are under way it closes it at
// once, unanswered.
func (l *fairListener) refuse(c *net.UnixConn, status int, code, desc string) {
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		answerAndClose(c, status, code, desc)
	}()
}

// answerAndClose writes a short HTTP answer with the JSON error body and
// closes, after reading what the peer sent (closing on unread data would
// reset the connection before the peer reads the answer). Nothing it sent
// is looked at.
func answerAndClose(c *net.UnixConn, status int, code, desc string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseDeadline))
	var body bytes.Buffer
	_ = writeJSON(&body, map[string]string{"error": code, "error_description": desc})
	head := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\n"
	if status == http.StatusServiceUnavailable {
		head += "Retry-After: 1\r\n"
	}
	_, _ = io.WriteString(c, head+"Content-Length: "+strconv.Itoa(body.Len())+"\r\n\r\n"+body.String())
	_ = c.CloseWrite()
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}
