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
	ln, err := listenAgent(cfg.Socket)
	if err != nil {
		return err
	}
	defer ln.Close() // removes the socket file
	hardenAgent()
	if cfg.Ready != nil {
		cfg.Ready()
	}
	a := &agent{cfg: cfg, secret: secret, entries: map[string]*agentEntry{}, done: make(chan struct{}), start: time.Now()}
	go a.accept(ln)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.done:
			return nil
		case now := <-tick.C:
			a.mu.Lock()
			a.expire(now)
			a.mu.Unlock()
		}
	}
}

// listenAgent listens on socket (0600) in its own directory (0700), unless
// another agent answers there already.
func listenAgent(socket string) (*net.UnixListener, error) {
	if err := ensureAgentDir(filepath.Dir(socket)); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", socket, agentDialTimeout); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", text.Path(socket), ErrAgentRunning)
	}
	_ = os.Remove(socket) // a stale socket of an agent that died
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", text.Path(socket), err)
	}
	if err := os.Chmod(socket, 0o600); err != nil {
		ln.Close()
		return nil, text.FileError("chmod", socket, err)
	}
	return ln, nil
}

// agent is a running agent's memory: its entries (under mu), whether it ever
// had one, and done, closed (once) when it stops.
type agent struct {
	cfg    AgentConfig
	secret []byte
	start  time.Time

	mu      sync.Mutex
	entries map[string]*agentEntry
	had     bool

	done chan struct{}
	once sync.Once
}

func (a *agent) stop() { a.once.Do(func() { close(a.done) }) }

// expire forgets the entries past their idle time or maximum age, and stops
// the agent when it holds nothing (once it had something or its grace ran
// out). The caller holds mu.
func (a *agent) expire(now time.Time) {
	for k, e := range a.entries {
		if now.Sub(e.usedAt) >= a.cfg.Idle || now.Sub(e.created) >= a.cfg.MaxAge {
			delete(a.entries, k)
		}
	}
	if len(a.entries) == 0 && (a.had || now.Sub(a.start) >= agentGrace) {
		a.stop()
	}
}

// accept serves each connection on ln until it fails (closed), then stops
// the agent.
func (a *agent) accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			a.stop()
			return
		}
		go a.serve(c)
	}
}

// serve answers one connection: a peer of this user that proves it knows the
// secret gets its request answered; any other is told nothing.
func (a *agent) serve(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(agentIOTimeout))
	if uid, known, err := PeerUID(c); err != nil || (known && uid != os.Getuid()) {
		return
	}
	req, ok := agentAccept(c, bufio.NewReaderSize(c, 1024), a.secret)
	if !ok {
		return
	}
	answer, stop := a.answer(strings.Fields(req))
	_, _ = c.Write([]byte(answer + "\n"))
	if stop {
		a.stop()
	}
}

// answer answers a request's fields; stop: the agent holds nothing any more
// and stops once the answer is sent.
func (a *agent) answer(f []string) (answer string, stop bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	a.expire(now)
	if len(f) == 0 {
		return "no", false
	}
	r, ok := agentRequests[f[0]]
	if !ok || len(f) != r.fields {
		return "no", false
	}
	return r.do(a, f[1:], now)
}

// agentRequests are the requests the agent answers, by verb: how many fields
// each has (the verb included) and what it does, under mu, with the other
// fields.
var agentRequests = map[string]struct {
	fields int
	do     func(a *agent, args []string, now time.Time) (answer string, stop bool)
}{
	"get":    {2, (*agent).get},
	"put":    {3, (*agent).put},
	"forget": {2, (*agent).forget},
}

// get: the identity kept under desc, its use extending its idle time.
func (a *agent) get(args []string, now time.Time) (string, bool) {
	e, ok := a.entries[args[0]]
	if !ok {
		return "no", false
	}
	e.usedAt = now
	return "ok " + e.id, false
}

// put keeps an identity (one age parses) under desc.
func (a *agent) put(args []string, now time.Time) (string, bool) {
	if _, err := age.ParseX25519Identity(args[1]); err != nil {
		return "no", false
	}
	a.entries[args[0]] = &agentEntry{id: args[1], created: now, usedAt: now}
	a.had = true
	return "ok", false
}

// forget drops desc's entry; an agent left with nothing stops.
func (a *agent) forget(args []string, _ time.Time) (string, bool) {
	answer := "no"
	if _, ok := a.entries[args[0]]; ok {
		delete(a.entries, args[0])
		answer = "ok"
	}
	return answer, len(a.entries) == 0
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
