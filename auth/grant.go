package auth

import (
	"context"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// GrantType names how a key obtains tokens. It is stored with the key
// (config.toml's grant = "..."); the names are kubelogin's. The empty value
// is the password grant: every key written before grants existed is one.
type GrantType string

// The grants shipkey speaks.
const (
	GrantPassword          GrantType = "password"
	GrantClientCredentials GrantType = "client-credentials"
	// GrantJWTBearer is RFC 7523's JWT bearer grant: an assertion of a
	// trusted external issuer (Request.Assertion) for the key's tokens.
	GrantJWTBearer GrantType = "jwt-bearer"
)

// Or returns t, or GrantPassword when t is empty.
func (t GrantType) Or() GrantType {
	if t == "" {
		return GrantPassword
	}
	return t
}

func (t GrantType) String() string { return string(t.Or()) }

// Grant is one way of obtaining a token set. Each lives in its own file
// (grant_*.go) and has one row in grantTable.
type Grant interface {
	// Type is the grant's name as stored with a key.
	Type() GrantType
	// Unattended reports whether the grant can run with no person present,
	// given the secrets a key keeps: then renewal may run it again unasked
	// when the refresh token is gone or dead.
	Unattended(kept Kept) bool
	// Obtain runs the grant once and returns a fresh token set.
	Obtain(ctx context.Context, c *Client, r Request) (*TokenSet, error)
}

// Kept says which secrets a key keeps, without the secrets.
type Kept struct {
	Password bool // a remembered password
}

// Request is what a grant may use. Each grant reads only its own fields.
type Request struct {
	Conn Connection
	// ClientAuth is how the client authenticates (AuthFor(Conn, secret)
	// for a key's stored method and secret).
	ClientAuth ClientAuth
	// Username is the password grant's user; for the interactive grants
	// (device code, authorization code) the person who must sign in: when
	// set, a sign-in by anyone else is refused (see SignedInAs).
	Username string
	Password string // password grant
	// Assertion gives the jwt-bearer grant's assertion, fresh at every run.
	Assertion *AssertionSource
	// CallbackPort is the authorization code grant's loopback port (0: an
	// ephemeral one).
	CallbackPort int
	// Wait bounds how long the authorization code grant waits for the
	// browser (0: DefaultBrowserWait). The device code grant waits as long
	// as its code lives.
	Wait time.Duration
	// Prompt is told what a person must do for an interactive grant (a
	// device code to enter, a URL to open). Nil: no person is there, and an
	// interactive grant fails at once with KindInteractionRequired.
	Prompt Prompter
}

// Prompter receives what an interactive grant asks of the person: called
// once per run, from the goroutine running the grant, before the grant
// starts waiting; it must not block for long. The grant waits for the
// person on its own (polling, or a loopback callback); cancelling the
// grant's context stops the wait, and nothing is stored.
type Prompter func(Prompt)

// Prompt is what an interactive grant asks a person to do. Its text fields
// came from the server and are sanitized (text.Safe).
type Prompt struct {
	Grant GrantType

	// Device code (RFC 8628): enter UserCode at VerificationURI, or open
	// VerificationURIComplete (empty when the server sent none), before
	// ExpiresAt. The grant polls every Interval.
	UserCode                string
	VerificationURI         string
	VerificationURIComplete string
	ExpiresAt               time.Time
	Interval                time.Duration

	// Authorization code: open AuthURL in a browser; the browser comes back
	// to RedirectURI (a loopback listener) before ExpiresAt. StartURL is a
	// one-time loopback URL that redirects to AuthURL: it is what a browser
	// is handed on its command line (world-readable in /proc), so another
	// local user who reads it learns no state, PKCE challenge or nonce, and
	// a second fetch of it aborts the sign-in. A device code whose server
	// sent a complete verification URI gets a StartURL to it too.
	AuthURL     string
	RedirectURI string
	StartURL    string
	// PortFixed: the callback port was asked for (Request.CallbackPort),
	// not an ephemeral one.
	PortFixed bool
}

// BrowserURL is the URL to hand a browser program (its argv is readable
// by every local user): the one-time StartURL (to the authorization URL, or
// to a device code's complete verification URI), else the plain
// verification URI; never a URL that carries state, a PKCE challenge, a
// nonce or a user code.
func (p Prompt) BrowserURL() string {
	switch {
	case p.StartURL != "":
		return p.StartURL
	case p.AuthURL != "":
		return p.AuthURL
	}
	return p.VerificationURI
}

// OpenURL is the URL a browser should open for the prompt: the complete
// verification URI (or the plain one) of a device code, or the
// authorization URL.
func (p Prompt) OpenURL() string {
	switch {
	case p.AuthURL != "":
		return p.AuthURL
	case p.VerificationURIComplete != "":
		return p.VerificationURIComplete
	}
	return p.VerificationURI
}

// grantTable is every grant shipkey speaks, in the order a form offers them.
// Adding a grant is one file with its Grant and one row here.
var grantTable = []Grant{
	passwordGrant{},
	clientCredentialsGrant{},
	deviceCodeGrant{},
	authCodeGrant{},
	jwtBearerGrant{},
}

// Grants lists the grants in the order a form offers them.
func Grants() []GrantType {
	out := make([]GrantType, len(grantTable))
	for i, g := range grantTable {
		out[i] = g.Type()
	}
	return out
}

// GrantFor returns the grant named t (empty: the password grant). An
// unknown name is an error of KindConfig naming the known ones.
func GrantFor(t GrantType) (Grant, error) {
	t = t.Or()
	for _, g := range grantTable {
		if g.Type() == t {
			return g, nil
		}
	}
	names := make([]string, len(grantTable))
	for i, g := range grantTable {
		names[i] = string(g.Type())
	}
	return nil, configError(text.Cleanf("grant %q is not one shipkey knows", text.Sanitize(string(t))).String(),
		"use one of "+strings.Join(names, ", "))
}

// Obtain runs the grant t (empty: password) for r.
func (c *Client) Obtain(ctx context.Context, t GrantType, r Request) (*TokenSet, error) {
	g, err := GrantFor(t)
	if err != nil {
		return nil, err
	}
	return g.Obtain(ctx, c, r)
}
