//go:build unix

package unlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/internal/text"
)

// The agent mechanism of the session (see store/session.go): `shipkey agent`
// keeps unwrapped identities in its memory and serves them on a unix socket
// in a 0700 directory owned by the user. On Linux it checks each peer's uid
// (SO_PEERCRED) and refuses to be traced or dumped; elsewhere the directory's
// permissions are the fence. It forgets an entry after the idle timeout
// (each use extends it) or the maximum age, and exits when it holds nothing
// (at the latest agentGrace after it started) or on `shipkey lock`.
//
// Both ends prove they know the agent's secret (a random file, 0600, in the
// store's state directory, which containers are not given) before anything
// else is said, so that a process of the same user that planted its own
// socket in the agent's directory neither receives an identity nor hands out
// one, and a client without the secret is told nothing.
//
// Protocol: a handshake, then one request line per connection, one answer line.
//
//	client: hello <nc>                  (nc: 16 random bytes, hex)
//	agent:  <na> <mac("agent", nc, na)> (mac: HMAC-SHA256 under the secret, hex)
//	client: <mac("client", nc, na)> <request>
//	agent:  <answer>
//
// Requests and answers:
//
//	get <desc>             ok <identity> | no
//	put <desc> <identity>  ok
//	forget <desc>          ok | no

const AgentSupported = true

const (
	agentDialTimeout = 2 * time.Second
	agentIOTimeout   = 5 * time.Second
	agentStartWait   = 10 * time.Second
	// agentGrace is how long an agent that never got an entry waits.
	agentGrace = 30 * time.Second
)

// AgentConfig configures ServeAgent.
type AgentConfig struct {
	Socket string        // the socket path; its directory is made 0700
	Secret string        // the secret file both ends prove they know (AgentSecret)
	Idle   time.Duration // an entry is forgotten after this long unused
	MaxAge time.Duration // and this long after it was put, however used
	Ready  func()        // called once the socket listens (may be nil)
}

// ErrAgentRunning: another agent already answers on the socket.
var ErrAgentRunning = errors.New("an agent already answers on this socket")

type agentEntry struct {
	id              string
	created, usedAt time.Time
}

// ServeAgent runs the agent until ctx ends, it holds nothing any more, or
// nothing was ever put into it for agentGrace.
func ServeAgent(ctx context.Context, cfg AgentConfig) error {
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.MaxAge < cfg.Idle {
		cfg.MaxAge = max(MaxAge, cfg.Idle)
	}
	if err := AgentSecret(cfg.Secret); err != nil {
		return err
	}
	secret, err := readAgentSecret(cfg.Secret)
	if err != nil {
		return err
	}
	if err := ensureAgentDir(filepath.Dir(cfg.Socket)); err != nil {
		return err
	}
	if c, err := net.DialTimeout("unix", cfg.Socket, agentDialTimeout); err == nil {
		c.Close()
		return fmt.Errorf("%s: %w", text.Path(cfg.Socket), ErrAgentRunning)
	}
	_ = os.Remove(cfg.Socket) // a stale socket of an agent that died
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Socket, Net: "unix"})
	if err != nil {
		return fmt.Errorf("listen on %s: %w", text.Path(cfg.Socket), err)
	}
	defer ln.Close() // removes the socket file
	if err := os.Chmod(cfg.Socket, 0o600); err != nil {
		return text.FileError("chmod", cfg.Socket, err)
	}
	hardenAgent()
	if cfg.Ready != nil {
		cfg.Ready()
	}

	var (
		mu      sync.Mutex
		entries = map[string]*agentEntry{}
		had     bool
		done    = make(chan struct{})
		once    sync.Once
	)
	stop := func() { once.Do(func() { close(done) }) }
	start := time.Now()
	expire := func(now time.Time) {
		for k, e := range entries {
			if now.Sub(e.usedAt) >= cfg.Idle || now.Sub(e.created) >= cfg.MaxAge {
				delete(entries, k)
			}
		}
		if len(entries) == 0 && (had || now.Sub(start) >= agentGrace) {
			stop()
		}
	}
	handle := func(c *net.UnixConn) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(agentIOTimeout))
		if uid, known, err := PeerUID(c); err != nil || (known && uid != os.Getuid()) {
			return
		}
		rd := bufio.NewReaderSize(c, 1024)
		req, ok := agentAccept(c, rd, secret)
		if !ok {
			return
		}
		f := strings.Fields(req)
		answer := "no"
		mu.Lock()
		now := time.Now()
		expire(now)
		switch {
		case len(f) == 2 && f[0] == "get":
			if e, ok := entries[f[1]]; ok {
				e.usedAt = now
				answer = "ok " + e.id
			}
		case len(f) == 3 && f[0] == "put":
			if _, err := age.ParseX25519Identity(f[2]); err == nil {
				entries[f[1]] = &agentEntry{id: f[2], created: now, usedAt: now}
				had = true
				answer = "ok"
			}
		case len(f) == 2 && f[0] == "forget":
			if _, ok := entries[f[1]]; ok {
				delete(entries, f[1])
				answer = "ok"
			}
			if len(entries) == 0 {
				defer stop()
			}
		}
		mu.Unlock()
		_, _ = c.Write([]byte(answer + "\n"))
	}
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				stop()
				return
			}
			go handle(c)
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			return nil
		case now := <-tick.C:
			mu.Lock()
			expire(now)
			mu.Unlock()
		}
	}
}

// ensureAgentDir makes dir (0700) and checks that it is a directory of this
// user that nobody else can enter.
func ensureAgentDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return text.FileError("create", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return text.FileError("check", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is not a directory of this user; the agent will not use it", text.Path(dir))
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return text.FileError("chmod", dir, err)
		}
	}
	return nil
}

// agentRequest sends one request to the agent on sock and returns its answer.
// ErrNotTheAgent: what answers on the socket does not know the agent's
// secret (it was planted there by another program); nothing was sent to it.
var ErrNotTheAgent = errors.New("what answers on the agent's socket is not shipkey's agent (it does not know the agent's secret); nothing was sent to it")

func agentRequest(sock, secretFile, req string) (string, error) {
	secret, err := readAgentSecret(secretFile)
	if err != nil {
		return "", err
	}
	c, err := net.DialTimeout("unix", sock, agentDialTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	if uid, known, err := PeerUID(uc); err != nil || (known && uid != os.Getuid()) {
		return "", errors.New("the agent's socket belongs to another user")
	}
	_ = c.SetDeadline(time.Now().Add(agentIOTimeout))
	rd := bufio.NewReaderSize(c, 1024)
	if err := agentDial(c, rd, secret, req); err != nil {
		return "", err
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// AgentGet asks the agent on sock (knowing the secret in secretFile) for the
// identity kept under desc.
func AgentGet(sock, secretFile, desc string) (*age.X25519Identity, bool) {
	ans, err := agentRequest(sock, secretFile, "get "+desc)
	if err != nil {
		return nil, false
	}
	s, ok := strings.CutPrefix(ans, "ok ")
	if !ok {
		return nil, false
	}
	id, err := age.ParseX25519Identity(s)
	return id, err == nil
}

// AgentForget has the agent on sock drop desc.
func AgentForget(sock, secretFile, desc string) bool {
	ans, err := agentRequest(sock, secretFile, "forget "+desc)
	return err == nil && ans == "ok"
}

// AgentPut gives id to the agent on sock, starting one (exe agent) when
// none answers; exe empty: none can be started. The secret file is made
// when there is none yet (the agent started reads it).
func AgentPut(sock, secretFile, exe, desc string, id *age.X25519Identity, idle, maxAge time.Duration) error {
	if err := AgentSecret(secretFile); err != nil {
		return err
	}
	req := "put " + desc + " " + id.String()
	ans, err := agentRequest(sock, secretFile, req)
	if errors.Is(err, ErrNotTheAgent) {
		return err
	}
	if err != nil {
		if exe == "" {
			return errors.New("no agent answers and this program cannot start one")
		}
		if err := startAgent(exe, sock, secretFile, idle, maxAge); err != nil {
			return err
		}
		if ans, err = agentRequest(sock, secretFile, req); err != nil {
			return fmt.Errorf("the agent does not answer: %w", err)
		}
	}
	if ans != "ok" {
		return errors.New("the agent refused the key")
	}
	return nil
}

// startAgent starts `exe agent` detached (its own session, no terminal, an
// empty environment, working directory /) and waits until it listens.
func startAgent(exe, sock, secretFile string, idle, maxAge time.Duration) error {
	if strings.HasSuffix(filepath.Base(exe), ".test") {
		return errors.New("a test binary cannot serve the agent")
	}
	if err := ensureAgentDir(filepath.Dir(sock)); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, "agent", "--socket", sock, "--secret-file", secretFile, "--idle", idle.String(), "--max", maxAge.String(), "--ready-fd", "3")
	cmd.Env = agentEnv()
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start the agent: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it should it end while this process runs
	_ = r.SetReadDeadline(time.Now().Add(agentStartWait))
	line, _ := bufio.NewReaderSize(r, 64).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		return errors.New("the agent did not start")
	}
	return nil
}

// agentEnv is the agent's whole environment: nothing of shipkey's (no
// secret can be inherited), only what coverage runs need.
func agentEnv() []string {
	env := []string{}
	if v, ok := os.LookupEnv("GOCOVERDIR"); ok {
		env = append(env, "GOCOVERDIR="+v)
	}
	return env
}
