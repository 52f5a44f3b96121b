package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/unlock"
)

// The session: where the file backend's unwrapped identity is kept between
// processes of the same user, so that the passphrase is asked once per
// session (as ssh-agent and gpg-agent do), not once per process.
//
//   - kernel: the Linux kernel's user keyring (keyctl). The entry is readable
//     by this user only, expires on its own, and is named after the key
//     file's path and content (store/unlock).
//   - agent: `shipkey agent`, a small process serving the identity on a unix
//     socket in a 0700 directory, checking the peer's uid where the platform
//     tells it, and exiting at the timeout or on `shipkey lock` (store/unlock).
//     Started on demand, detached, with an empty environment.
//   - none: nothing is kept; every process asks (or reads SHIPKEY_PASSPHRASE).
//
// "auto" (the default) uses the kernel keyring where keyctl answers and the
// agent elsewhere (macOS, containers whose seccomp profile refuses keyctl).
//
// The timeout is an idle timeout: each use extends it, but never beyond
// unlockMaxAge (or the idle timeout when that is longer) after the unlock.

// Environment variables of the session.
const (
	// EnvUnlockTimeout is the idle timeout of an unlock: a Go duration
	// ("15m") or seconds; 0 keeps the identity in the process only.
	EnvUnlockTimeout = "SHIPKEY_UNLOCK_TIMEOUT"
	// EnvUnlockMech chooses where an unlock is kept: auto, kernel, agent, none.
	EnvUnlockMech = "SHIPKEY_UNLOCK_MECH"
)

// Unlock mechanisms.
const (
	MechAuto   = "auto"
	MechKernel = "kernel"
	MechAgent  = "agent"
	MechNone   = "none"
)

const (
	// DefaultUnlockTimeout is how long an unlock lasts without use.
	DefaultUnlockTimeout = unlock.DefaultIdle
	// unlockMaxAge bounds an unlock however often it is used.
	unlockMaxAge = unlock.MaxAge
	// unlockLockWait bounds the wait for unlock.lock: derivations are
	// serialized, each about a second.
	unlockLockWait = 2 * time.Minute
)

// UnlockOptions configure how the file backend's unlock is kept for the
// session. Zero fields take defaults from the environment.
type UnlockOptions struct {
	// Passphrase is SHIPKEY_PASSPHRASE as the caller read it (shipkey drops
	// the variable from its environment at start); "" reads the environment.
	Passphrase string
	// Timeout is the idle timeout; 0 means SHIPKEY_UNLOCK_TIMEOUT, else
	// DefaultUnlockTimeout; negative keeps the identity in this process only.
	Timeout time.Duration
	// Mechanism is auto, kernel, agent or none; "" means SHIPKEY_UNLOCK_MECH,
	// else auto.
	Mechanism string
	// AgentExe is a shipkey binary whose `agent` command serves the agent;
	// "" means no agent can be started (one already running is still used).
	AgentExe string
}

// SessionState is what `shipkey unlock` and `shipkey lock` report.
type SessionState struct {
	Backend   string        // the secrets backend in use
	KeyFile   string        // the file backend's key file (display form)
	Exists    bool          // the key file exists
	Unlocked  bool          // the identity is available without a passphrase
	Mechanism string        // where an unlock is kept: kernel, agent or none
	Timeout   time.Duration // idle timeout of an unlock
	Why       string        // when Mechanism is none: why
}

// session is the file backend's view of the unlock session.
type session struct {
	stateDir string
	warn     io.Writer
	pass     string
	idle     time.Duration // <= 0: not kept across processes
	mech     string        // as configured: auto, kernel, agent, none
	agentExe string
	err      error // a bad SHIPKEY_UNLOCK_TIMEOUT or SHIPKEY_UNLOCK_MECH

	// fallbackWhy tells why auto fell back to the file ("" when the file
	// was chosen); markWarned says the fallback (once per store) before the
	// passphrase line.
	fallbackWhy func() string
	markWarned  func()

	mu      sync.Mutex
	said    bool   // sayWhy said its line
	lastErr string // why the last publish kept nothing
}

// newSession resolves opts for the file backend of s.
func newSession(s *Store, opts UnlockOptions) *session {
	sess := &session{
		stateDir: s.stateDir,
		warn:     s.warn,
		pass:     opts.Passphrase,
		idle:     opts.Timeout,
		mech:     opts.Mechanism,
		agentExe: opts.AgentExe,
		fallbackWhy: func() string {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.fallbackWhy
		},
		markWarned: s.warnFallback,
	}
	sess.resolve()
	return sess
}

func (sess *session) resolve() {
	if sess.warn == nil {
		sess.warn = os.Stderr
	}
	if sess.idle == 0 {
		sess.idle = DefaultUnlockTimeout
		if v := strings.TrimSpace(os.Getenv(EnvUnlockTimeout)); v != "" {
			d, err := parseTimeout(v)
			if err != nil {
				sess.err = text.Errorf("%s=%q is not a duration; use for example 15m, 1h or 0 (do not keep the unlock)", EnvUnlockTimeout, text.Sanitize(v))
			}
			sess.idle = d
			if d == 0 {
				sess.idle = -1
			}
		}
	}
	if sess.mech == "" {
		sess.mech = strings.TrimSpace(os.Getenv(EnvUnlockMech))
		if sess.mech == "" {
			sess.mech = MechAuto
		}
	}
	switch sess.mech {
	case MechAuto, MechAgent, MechNone:
	case MechKernel:
		if !unlock.KernelSupported {
			sess.err = fmt.Errorf("%s=kernel: the kernel keyring is Linux only; use auto on this system", EnvUnlockMech)
			sess.mech = MechNone
		}
	default:
		sess.err = text.Errorf("%s=%q is not an unlock mechanism; use auto, kernel, agent or none", EnvUnlockMech, text.Sanitize(sess.mech))
		sess.mech = MechNone
	}
	if sess.idle < 0 {
		sess.mech = MechNone
	}
}

func parseTimeout(v string) (time.Duration, error) {
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

// maxAge is how long an unlock may last however often it is used.
func (sess *session) maxAge() time.Duration { return max(unlockMaxAge, sess.idle) }

// sess returns the backend's session, a default one when the backend was
// built without (caller holds b.mu).
func (b *fileBackend) sess() *session {
	if b.session == nil {
		b.session = &session{stateDir: b.dir, fallbackWhy: func() string { return "" }, markWarned: func() {}}
		b.session.resolve()
	}
	return b.session
}

func (sess *session) envPassphrase() string {
	if sess.pass != "" {
		return sess.pass
	}
	return os.Getenv(EnvPassphrase)
}

// forHowLong is the " (it stays unlocked for 10m0s)" part of a message.
func (sess *session) forHowLong() string {
	if sess.mechanism() == MechNone {
		return ""
	}
	return " (it stays unlocked for " + FormatTimeout(sess.idle) + " of inactivity)"
}

// sayWhy says, once, before the first passphrase prompt, where secrets go
// and why a passphrase is asked: the keyring fallback with its reason, or
// the file chosen by configuration.
func (sess *session) sayWhy(fresh bool, dataPath string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.said {
		return
	}
	sess.said = true
	where := displayPath(dataPath)
	var line string
	// The keyring fallback is said by the one notice (Store.warnFallback),
	// once per store in one wording; this line says only the passphrase.
	sess.markWarned()
	line = fmt.Sprintf("secrets go to %s, encrypted with a passphrase", where)
	if !fresh {
		line += ", which unlocks them"
		if sess.mechanism() != MechNone {
			line += " for " + FormatTimeout(sess.idle) + " of inactivity (`shipkey lock` locks them again)"
		} else {
			line += " for this process only"
		}
	}
	fmt.Fprintf(sess.warn, "shipkey: %s\n", line)
}

// kernelProbe remembers whether keyctl answers in this process.
var kernelProbe = sync.OnceValue(unlock.KernelAvailable)

// mechanism is where an unlock is kept: kernel, agent or none.
func (sess *session) mechanism() string {
	switch sess.mech {
	case MechAuto:
		if kernelProbe() {
			return MechKernel
		}
		if unlock.AgentSupported {
			return MechAgent
		}
		return MechNone
	case MechAgent:
		if !unlock.AgentSupported {
			return MechNone
		}
	}
	return sess.mech
}

// load returns the identity published under desc, if any.
func (sess *session) load(desc string) (*age.X25519Identity, bool) {
	switch sess.mechanism() {
	case MechKernel:
		return unlock.KernelLoad(desc, sess.idle, sess.maxAge())
	case MechAgent:
		return unlock.AgentGet(sess.agentSocket(), sess.agentSecret(), desc)
	}
	return nil, false
}

// publish keeps id under desc for the session. A failure is remembered (for
// `shipkey unlock` to say) and costs nothing else: this process has the
// identity either way.
func (sess *session) publish(desc string, id *age.X25519Identity) {
	var err error
	switch sess.mechanism() {
	case MechKernel:
		err = unlock.KernelStore(desc, id, sess.idle)
	case MechAgent:
		if err = ensureDir(sess.stateDir); err == nil {
			err = unlock.AgentPut(sess.agentSocket(), sess.agentSecret(), sess.agentExe, desc, id, sess.idle, sess.maxAge())
		}
	default:
		return
	}
	sess.mu.Lock()
	sess.lastErr = ""
	if err != nil {
		sess.lastErr = err.Error()
	}
	sess.mu.Unlock()
}

// forget drops desc from every mechanism and reports whether one held it.
func (sess *session) forget(desc string) bool {
	held := unlock.KernelForget(desc)
	if unlock.AgentSupported && unlock.AgentForget(sess.agentSocket(), sess.agentSecret(), desc) {
		held = true
	}
	return held
}

// agentSocket is the agent's socket for this store, in a 0700 directory of
// the agent's own: $XDG_RUNTIME_DIR/shipkey-agent when $XDG_RUNTIME_DIR
// exists, else the state directory's agent/ (else, when that path is too
// long for a unix socket, shipkey-agent-UID in the temporary directory).
// Never $XDG_RUNTIME_DIR/shipkey, which people mount into containers for
// serve's socket: a same-uid container could replace the agent there.
func (sess *session) agentSocket() string {
	h := identityCacheDesc(sess.stateDir, nil)
	name := "agent-" + h[len(h)-12:] + ".sock"
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		if fi, err := os.Stat(rt); err == nil && fi.IsDir() {
			return filepath.Join(rt, AgentDirName, name)
		}
	}
	p := filepath.Join(sess.stateDir, "agent", name)
	if len(p) < 100 {
		return p
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d", AgentDirName, os.Getuid()), name)
}

// agentSecret is the file of the secret the agent and its clients prove
// they know (unlock.AgentSecret): in the state directory, which is 0700 and
// not where the socket is, so that a process that can replace the socket
// (a container given the runtime directory) cannot pass for the agent.
func (sess *session) agentSecret() string {
	return filepath.Join(sess.stateDir, AgentSecretName)
}

// AgentSecretName names the agent's secret file in the state directory.
const AgentSecretName = "agent.secret"

// AgentDirName names the agent's directory in $XDG_RUNTIME_DIR.
const AgentDirName = "shipkey-agent"

// keyFileDesc names the session entry of the store's key file; ok is false
// when there is no key file.
func (b *fileBackend) keyFileDesc() (string, bool, error) {
	wrapped, err := os.ReadFile(b.keyPath())
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fileError("read", b.keyPath(), err)
	}
	return identityCacheDesc(b.keyPath(), wrapped), true, nil
}

// Lock forgets the file backend's unlocked identity at once: in this
// process, in the kernel keyring and in the agent. It touches neither the OS
// keyring nor the passphrase, and reports whether the session held it.
func (s *Store) Lock() (bool, error) {
	b := s.fileBackend()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.identity = nil
	desc, ok, err := b.keyFileDesc()
	if err != nil || !ok {
		return false, err
	}
	return b.sess().forget(desc), nil
}

// Session tells whether the secrets backend in use needs unlocking and
// whether it is unlocked for the session (without asking anything; a found
// unlock is taken into this process and its idle timeout extended).
func (s *Store) Session() (SessionState, error) {
	be := s.backend()
	st := SessionState{Backend: be.Name()}
	if be != secretsBackend(s.fileBackend()) {
		return st, nil
	}
	b := s.fileBackend()
	b.mu.Lock()
	defer b.mu.Unlock()
	sess := b.sess()
	if sess.err != nil {
		return st, sess.err
	}
	st.KeyFile = displayPath(b.keyPath())
	st.Mechanism = sess.mechanism()
	st.Timeout = sess.idle
	if st.Mechanism == MechNone {
		st.Why = sess.noneWhy()
	}
	sess.mu.Lock()
	if sess.lastErr != "" {
		st.Why = sess.lastErr
	}
	sess.mu.Unlock()
	desc, ok, err := b.keyFileDesc()
	if err != nil {
		return st, err
	}
	st.Exists = ok
	if !ok {
		return st, nil
	}
	if b.identity != nil {
		// Unlocked in this process: is it still kept for the others?
		_, st.Unlocked = sess.load(desc)
		return st, nil
	}
	if id, found := sess.load(desc); found {
		b.identity = id
		st.Unlocked = true
	}
	return st, nil
}

// AgentSecret is the file of the secret the store's agent and its clients
// prove they know.
func (s *Store) AgentSecret() string {
	return filepath.Join(s.stateDir, AgentSecretName)
}

// AgentSocket is the socket the store's agent serves (SHIPKEY_UNLOCK_MECH
// agent, or auto without a kernel keyring).
func (s *Store) AgentSocket() string {
	s.fileBackend().mu.Lock()
	defer s.fileBackend().mu.Unlock()
	return s.fileBackend().sess().agentSocket()
}

// FormatTimeout words an unlock timeout: "10m", "1h30m", "45s".
func FormatTimeout(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
