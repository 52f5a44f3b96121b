package auth

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// MaxBodySize caps every response body auth reads.
const MaxBodySize = 1 << 20

// Options configure a Client. The zero value is usable.
type Options struct {
	// HTTPClient replaces the transport auth builds (tests). When nil, auth
	// builds one with the timeouts below, TLS verification on, CAFile added to
	// the system roots, HTTPS_PROXY/NO_PROXY honoured, and redirects refused.
	HTTPClient *http.Client
	// CAFile is a PEM bundle of extra roots for private CAs.
	CAFile string
	// DialTimeout bounds connecting (default 10 s); Timeout bounds a whole
	// request including the body (default 30 s).
	DialTimeout time.Duration
	Timeout     time.Duration
	// Now is the clock for ObtainedAt and expiries (default time.Now).
	Now func() time.Time
	// Logger receives debug lines; secrets never reach it. Nil discards.
	Logger *slog.Logger
}

// Client performs the token protocol against any number of connections.
// It is safe for concurrent use.
type Client struct {
	// filled in by NewClient
	http   *http.Client
	now    func() time.Time
	logger *slog.Logger
}

// NewClient builds a Client. It fails only when CAFile cannot be read.
func NewClient(opts Options) (*Client, error) {
	panic("unimplemented")
}

// Now is the client's clock.
func (c *Client) Now() time.Time { return c.now() }

// Endpoints resolves the connection's endpoints: from OIDC discovery
// ({issuer}/.well-known/openid-configuration, where issuer is Issuer or the
// Keycloak realm URL) when the server offers it, else Keycloak's fixed paths;
// TokenURL always wins for the token endpoint. Results are cached per issuer.
func (c *Client) Endpoints(ctx context.Context, conn Connection) (Endpoints, error) {
	panic("unimplemented")
}

// Login runs the password grant exactly as the spec: a form POST with
// client_id, client_secret, grant_type=password, username, password (and scope
// when conn.Scopes is set). Client credentials go in the body unless
// conn.BasicAuth.
func (c *Client) Login(ctx context.Context, conn Connection, clientSecret, username, password string) (*TokenSet, error) {
	panic("unimplemented")
}

// Refresh redeems prev.RefreshToken with grant_type=refresh_token and the
// client credentials. When the answer carries no refresh token, the old one
// and its expiry are kept. A refresh token that is expired, revoked or whose
// session ended yields KindLoginRequired.
func (c *Client) Refresh(ctx context.Context, conn Connection, clientSecret string, prev *TokenSet) (*TokenSet, error) {
	panic("unimplemented")
}

// Logout ends the session at the realm's logout endpoint (form client_id,
// client_secret, refresh_token). A refusal is returned as *Error; callers drop
// their local tokens either way.
func (c *Client) Logout(ctx context.Context, conn Connection, clientSecret, refreshToken string) error {
	panic("unimplemented")
}

// Revoke revokes token by RFC 7009 where the server advertises a revocation
// endpoint; hint is "access_token" or "refresh_token". It returns
// ErrNotSupported when there is no such endpoint.
func (c *Client) Revoke(ctx context.Context, conn Connection, clientSecret, token, hint string) error {
	panic("unimplemented")
}

// LiveState is what the server says of a token that looks valid locally.
type LiveState int

const (
	LiveUnknown  LiveState = iota // cannot tell (no endpoint, network failure)
	LiveActive                    // the server accepts it
	LiveInactive                  // the server no longer accepts it (session ended)
)

func (s LiveState) String() string {
	return [...]string{"cannot tell", "active", "not active"}[s]
}

// Liveness is the answer of Client.Liveness.
type Liveness struct {
	State  LiveState
	Via    string // "introspection" or "userinfo"
	Reason string // sanitized, for LiveUnknown and LiveInactive
}

// Liveness asks the realm whether it still accepts accessToken: token
// introspection with the client's credentials, else userinfo. It never
// returns an error; failures are LiveUnknown with a reason.
func (c *Client) Liveness(ctx context.Context, conn Connection, clientSecret, accessToken string) Liveness {
	panic("unimplemented")
}
