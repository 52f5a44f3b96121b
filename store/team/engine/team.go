package engine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Dialer connects a team's driver (etcdteam.Dial). It does not wait for a
// connection: every driver call is bounded by its context.
type Dialer func(tc store.TeamConn, password string) (team.Driver, error)

// Engine is the team store: one per process, teams opened on demand.
type Engine struct {
	opts Options
	dial Dialer
}

// New returns an engine over the driver dial connects; nothing is opened
// until a team is used.
func New(opts Options, dial Dialer) team.Engine { return newEngine(opts, dial) }

func newEngine(opts Options, dial Dialer) *Engine {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Warn == nil {
		opts.Warn = os.Stderr
	}
	if opts.LockTTL <= 0 {
		opts.LockTTL = DefaultLockTTL
	}
	return &Engine{opts: opts, dial: dial}
}

func prefix(t string) string { return team.Prefix(t) }

func rosterKey(team string) string           { return prefix(team) + "roster" }
func keyKey(team, id string) string          { return prefix(team) + "keys/" + id }
func tokenKey(t, id string) string           { return team.TokenKey(t, id) }
func lockPrefix(team, id string) string      { return prefix(team) + "locks/" + id }
func keysPrefix(team string) string          { return prefix(team) + "keys/" }
func tokensPrefix(team string) string        { return prefix(team) + "tokens/" }
func idOf(etcdKey, itemPrefix string) string { return strings.TrimPrefix(etcdKey, itemPrefix) }

// handle is one team opened: its connection, this member's identity, and a
// driver dialled on first use.
type handle struct {
	e        *Engine
	tc       store.TeamConn
	id       *age.X25519Identity
	signer   ed25519.PrivateKey // derived from id (team.SigningKey)
	password string
	timeout  time.Duration
	drv      team.Driver
	// seen and seenDirty: the highest sequence number accepted per item
	// (read once), and whether this handle raised one (saveSeen).
	seen      map[string]int64
	seenDirty bool
}

func (e *Engine) open(name string) (*handle, error) {
	if e.opts.Store == nil {
		return nil, errors.New("team: no store")
	}
	tc, err := e.opts.Store.Team(name)
	if err != nil {
		return nil, err
	}
	sec, err := e.opts.Store.TeamSecrets(name)
	if err != nil {
		return nil, err
	}
	id, err := age.ParseX25519Identity(sec.Identity)
	if err != nil {
		return nil, fmt.Errorf("team %s: the stored member identity is damaged; join again", name)
	}
	signer, err := team.SigningKey(sec.Identity)
	if err != nil {
		return nil, err
	}
	h := &handle{e: e, tc: tc, id: id, signer: signer, password: sec.EtcdPassword, timeout: e.opts.Timeout}
	if h.timeout == 0 && tc.Timeout != "" {
		if d, err := time.ParseDuration(tc.Timeout); err == nil && d > 0 {
			h.timeout = d
		}
	}
	if h.timeout == 0 {
		h.timeout = DefaultTimeout
	}
	return h, nil
}

func (h *handle) name() string { return h.tc.Name }

// signingKey is this member's public signing key as the roster holds it.
func (h *handle) signingKey() string {
	return team.EncodeSigningKey(h.signer.Public().(ed25519.PublicKey))
}

// me is this machine as a roster member (name and time aside).
func (h *handle) me() Member {
	return Member{Recipient: h.id.Recipient().String(), SigningKey: h.signingKey()}
}

func (h *handle) client() (team.Driver, error) {
	if h.drv == nil {
		drv, err := h.e.dial(h.tc, h.password)
		if err != nil {
			return nil, err
		}
		h.drv = drv
	}
	return h.drv, nil
}

func (h *handle) close() {
	if h.drv != nil {
		_ = h.drv.Close()
	}
}

// bound is ctx limited to the team's timeout.
func (h *handle) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.timeout)
}

// etcdErr turns a driver's failure into one line; unavailability (the
// driver's, or the bound running out) wraps ErrUnavailable.
func (h *handle) etcdErr(err error) error {
	if err == nil {
		return nil
	}
	var known interface{ teamError() }
	if errors.As(err, &known) || errors.Is(err, ErrNotMember) || errors.Is(err, ErrNoTeam) {
		return err
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &Error{Team: h.name(), Msg: fmt.Sprintf("etcd at %s did not answer within %s (unreachable or no quorum)", strings.Join(h.tc.Endpoints, ","), h.timeout), Kind: ErrUnavailable}
	}
	return &Error{Team: h.name(), Msg: "etcd: " + text.Safe(err.Error())}
}

// notMember is the error for an item this identity cannot open, or a
// roster without this machine. A machine that read the team as a member
// before (its cache holds what it read then) was removed, and is told so:
// not as if it had never been added.
func (h *handle) notMember() error {
	if c := h.readCache(); !c.SyncedAt.IsZero() || len(c.Keys) > 0 {
		return &Error{Team: h.name(), Kind: ErrNotMember, Msg: fmt.Sprintf("this machine was removed from the team and can no longer read its keys or tokens; to use them again, run `shipkey team join %s --etcd …` here and ask a member to add the line it prints (shipkey team add), else forget the team here: shipkey team leave %s", h.name(), h.name())}
	}
	return &Error{Team: h.name(), Msg: fmt.Sprintf("not a member of %s: ask a member to run `shipkey team add %s %s`", h.name(), h.name(), h.id.Recipient()), Kind: ErrNotMember}
}
