package team

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// Engine is the team store: one per process, teams opened on demand. Its
// implementation is package engine over a Driver (on etcd: etcdteam.New);
// this package holds only what callers name, so that a program that never
// opens a team links no etcd client (the shipkey binary: see
// cmd/shipkey-team).
type Engine interface {
	// Teams lists the teams this machine joined.
	Teams() ([]store.TeamConn, error)
	// Init creates a team with this machine as its only member; Join
	// records a team another member created and returns this machine's
	// recipient for a member to add.
	Init(ctx context.Context, opts JoinOptions) (Member, error)
	Join(ctx context.Context, opts JoinOptions) (string, error)
	Members(ctx context.Context, team string) ([]Member, error)
	AddMember(ctx context.Context, team, recipient, name string) (Member, error)
	RemoveMember(ctx context.Context, team, who string) (Member, error)
	// Leave forgets a team on this machine: connection, member identity,
	// cache and pinned roster. Another member removes it from the roster.
	Leave(ctx context.Context, team string) error

	// Keys reads a team's keys from etcd; CachedKeys from this machine's
	// cache, without a round trip.
	Keys(ctx context.Context, team string) ([]Key, error)
	CachedKeys(team string) ([]Key, error)
	CreateKey(ctx context.Context, team string, nk NewKey) (Key, error)
	RemoveKey(ctx context.Context, team, label string) error
	RenameKey(ctx context.Context, team, label, newLabel string) error
	// SetClientSecret replaces a team key's client secret for every member
	// (re-encrypted and signed for the roster).
	SetClientSecret(ctx context.Context, team, label, secret string) error

	// Token hands out a key's access token, renewing it once for the whole
	// team when due; CachedToken is the cached one with the key, no round
	// trip.
	Token(ctx context.Context, team, label string, opts TokenOptions) (*auth.TokenSet, error)
	CachedToken(team, label string) (*Key, string, error)
	Login(ctx context.Context, team, label string, opts LoginOptions) (Key, *auth.TokenSet, error)
	Logout(ctx context.Context, team, label string) (LogoutResult, error)
	// Watch calls changed whenever a team's keys or tokens change, until
	// ctx ends.
	Watch(ctx context.Context, team string, changed func()) error
}

// DefaultTimeout bounds a command's etcd work when the team's config sets
// none.
const DefaultTimeout = 5 * time.Second

// DefaultLockTTL is the lease of the fleet lock: a holder that dies frees it
// within this many seconds.
const DefaultLockTTL = 5

// Errors callers branch on with errors.Is.
var (
	// ErrUnavailable: etcd did not answer within the bound (unreachable, no
	// quorum). The CLI gives it its own exit code.
	ErrUnavailable = errors.New("etcd unavailable")
	// ErrNotMember: the items are not encrypted to this machine's identity.
	ErrNotMember = errors.New("not a member")
	// ErrNoTeam: the prefix holds no team.
	ErrNoTeam = errors.New("no such team")
	// ErrUnsigned: the team was made by a shipkey without signatures; its
	// founder signs it again (team init), the others join again.
	ErrUnsigned = errors.New("unsigned team")
)

// Options configure an Engine.
type Options struct {
	Store *store.Store // required: team connections, local secrets, state dir
	Auth  *auth.Client // required for token renewal
	Now   func() time.Time
	Warn  io.Writer // warnings (cached token served while etcd is down); nil = os.Stderr
	// Timeout overrides every team's bound on etcd work (0: the team's
	// config, else DefaultTimeout).
	Timeout time.Duration
	LockTTL int // seconds; 0 = DefaultLockTTL
}

// SplitAddress splits "T/LABEL" into team and label; ok is false for a
// plain label.
func SplitAddress(addr string) (team, label string, ok bool) {
	team, label, ok = strings.Cut(addr, "/")
	if !ok || team == "" || label == "" || !store.ValidTeamName(team) {
		return "", addr, false
	}
	return team, label, true
}

// PlainRemote lists the endpoints that are plain http:// to a host other
// than loopback: the etcd password and every request would cross the
// network in the clear.
func PlainRemote(endpoints []string) []string {
	var out []string
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil || !strings.EqualFold(u.Scheme, "http") {
			continue
		}
		h := u.Hostname()
		if ip := net.ParseIP(h); (ip != nil && ip.IsLoopback()) || strings.EqualFold(h, "localhost") {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Address is "T/LABEL".
func Address(team, label string) string { return team + "/" + label }

// Error is a team failure, one line; it matches its Kind with errors.Is.
type Error struct {
	Team string
	Msg  string
	Kind error
}

func (e *Error) Error() string { return "team " + e.Team + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Definition is a team key as its members share it, encrypted in etcd: its
// id and label, the key's store.Definition (embedded whole, so a field
// added there reaches etcd with no change here), when it was made, and the
// key's secrets.
type Definition struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	store.Definition
	CreatedAt time.Time `json:"created_at"`

	ClientSecret string `json:"client_secret,omitempty"`
	Password     string `json:"password,omitempty"`
}

// definitionJSON is a Definition as etcd holds it: its fields by their
// json names and, besides, the connection as the object "conn" that
// records had before the definition was declared once (members on an older
// shipkey read that; a record with only "conn" is read here).
type definitionJSON struct {
	plainDefinition
	Conn *auth.Connection `json:"conn,omitempty"`
}

type plainDefinition Definition // without the methods: no recursion

// MarshalJSON writes the record with "conn" as well (see definitionJSON).
func (d Definition) MarshalJSON() ([]byte, error) {
	c := d.Connection
	return json.Marshal(definitionJSON{plainDefinition(d), &c})
}

// UnmarshalJSON reads a record of either shape.
func (d *Definition) UnmarshalJSON(b []byte) error {
	var v definitionJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Definition(v.plainDefinition)
	if v.Conn != nil && d.Connection.ClientID == "" {
		d.Connection = *v.Conn
	}
	return nil
}

// Key is a team key as listed: no secret.
type Key struct {
	Team      string
	Label     string
	ID        string
	Grant     auth.GrantType
	Conn      auth.Connection
	Username  string
	CreatedAt time.Time
	Token     auth.TokenSet // redacted; zero ObtainedAt: no token yet
	Masked    string
	// HasRefreshToken: the shared token set carries a refresh token.
	HasRefreshToken bool
	// Removed: this machine is no longer a member of the team (as last seen).
	Removed bool
}

// Address is the key's "T/LABEL".
func (k Key) Address() string { return Address(k.Team, k.Label) }

// NewKey is what `keys new --team` takes. Each grant reads only its own
// fields, as store.NewKey's.
type NewKey struct {
	Label string
	// Definition is the key's definition (RememberPassword is implied: a
	// team key keeps its password when it has one).
	store.Definition
	ClientSecret string
	Password     string // kept (encrypted to the team) so any member renews unattended
	// Prompt is told what a person must do for an interactive grant.
	Prompt auth.Prompter
}

// ErrKeyNotFound: no team key has the label.
var ErrKeyNotFound = errors.New("no such key")

// Member is one recipient of a team's items and one of its signers.
type Member struct {
	Name       string    `json:"name"`
	Recipient  string    `json:"recipient"`             // age X25519 recipient, age1…
	SigningKey string    `json:"signing_key,omitempty"` // Ed25519 public key (EncodeSigningKey)
	AddedAt    time.Time `json:"added_at"`
	// EtcdUser is the etcd user the member said it connects as (its member
	// card), for `team remove` to name; empty when not known.
	EtcdUser string `json:"etcd_user,omitempty"`
}

// JoinOptions create or join a team on this machine.
type JoinOptions struct {
	Conn         store.TeamConn // Name and Endpoints required
	EtcdPassword string
	Name         string // this member's name in the roster (init)
	// Confirm, when set, is shown the members of the roster Join read,
	// after its signatures were checked and before it is pinned: an error
	// pins nothing, forgets the team when this Join recorded it, and is
	// Join's error. Nil pins it (trust on first use unchecked). Join only.
	Confirm func(members []Member) error
}

// LogoutResult says what Logout did.
type LogoutResult struct {
	End auth.EndResult
	// HadToken is false when the team held no token set for the key (logged
	// out already): no session was ended.
	HadToken bool
}

// LoginOptions are what Login takes.
type LoginOptions struct {
	// Password, when set, is used for the password grant instead of the kept
	// one, and replaces the kept one for the team once it works.
	Password string
}

// TokenOptions say what a caller of Token needs.
type TokenOptions struct {
	// MinValid asks for a token valid at least this long (token --min-valid).
	MinValid time.Duration
	// Force renews even when the shared token would do (refresh now).
	Force bool
}

// Request is what the key's grant needs.
func (d Definition) Request() auth.Request {
	return auth.Request{Conn: d.Connection, ClientAuth: d.ClientAuth(), Username: d.Username, Password: d.Password, CallbackPort: d.CallbackPort}
}

// ClientAuth is the key's client authentication.
func (d Definition) ClientAuth() auth.ClientAuth { return auth.AuthFor(d.Connection, d.ClientSecret) }
