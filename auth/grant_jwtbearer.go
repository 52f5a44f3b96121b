package auth

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
)

// jwtBearerGrantType is RFC 7523 §2.1's grant_type.
const jwtBearerGrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// opJWTBearer is the Op of the jwt-bearer grant's errors.
const opJWTBearer = "jwt-bearer"

// AssertionSource gives an assertion shipkey does not sign itself: a JWT of
// a trusted external issuer (a CI system's identity token, a Kubernetes
// service account token), for the jwt-bearer grant (Request.Assertion) or
// for the client_assertion method (ClientAuth.Assertion). Fetch is called
// for every request that carries it, so a renewal sends a fresh one (a file
// read again, a command run again).
type AssertionSource struct {
	// From says where the assertion comes from, for messages: "the file
	// /run/ci/token", "the command ci-token". Never the assertion.
	From string
	// Fetch returns the current assertion. Its error must not hold it.
	Fetch func(ctx context.Context) (string, error)
}

// fetch is the current assertion of s, trimmed, checked to be a compact
// JWT: an error of KindConfig naming the source otherwise. what names the
// assertion in messages ("assertion", "client assertion").
func (s *AssertionSource) fetch(ctx context.Context, op string, role assertionRole) (string, error) {
	what, flags := "assertion", "{{assertion-file FILE}} or {{assertion-cmd CMD}}"
	if role == clientAssertion {
		what, flags = "client assertion", "{{client-assertion-file FILE}} or {{client-assertion-cmd CMD}}"
	}
	if s == nil || s.Fetch == nil {
		return "", &Error{Kind: KindConfig, Op: op, Msg: "the key has no source for its " + what, Hint: "create the key again with " + flags, about: role}
	}
	a, err := s.Fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", &Error{Kind: KindUnknown, Op: op, Msg: "cancelled while reading the " + what + " from " + s.From, Hint: "run the command again", about: role}
		}
		return "", &Error{Kind: KindConfig, Op: op, Msg: "cannot read the " + what + " from " + s.From + ": " + text.Safe(err.Error()),
			Hint: "check that it gives a current assertion (the file is read, the command run, again at every renewal)", about: role}
	}
	a = strings.TrimSpace(a)
	if !compactJWT(a) {
		return "", &Error{Kind: KindConfig, Op: op, Msg: s.From + " did not give a JWT as the " + what + " (three base64url parts joined by dots)",
			Hint: "have it hold the external issuer's token alone, nothing around it", about: role}
	}
	return a, nil
}

// compactJWT reports whether s has a compact JWS's shape: three parts of
// base64url characters, the first two not empty.
func compactJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		if strings.IndexFunc(p, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			return false
		}
	}
	return true
}

// jwtBearerGrant is the JWT bearer grant (RFC 7523 §2.1): the key gets its
// tokens for an assertion a trusted external issuer signed (a CI job's
// identity token), read again at every run. It needs no person and keeps no
// secret of its own: when the realm sent no refresh token (Keycloak never
// does for this grant), renewal runs it again with a fresh assertion.
type jwtBearerGrant struct{}

func (jwtBearerGrant) Type() GrantType { return GrantJWTBearer }

func (jwtBearerGrant) Unattended(Kept) bool { return true }

func (jwtBearerGrant) Obtain(ctx context.Context, c *Client, r Request) (*TokenSet, error) {
	if err := r.Conn.Validate(); err != nil {
		return nil, withOp(err, opJWTBearer)
	}
	assertion, err := r.Assertion.fetch(ctx, opJWTBearer, grantAssertion)
	if err != nil {
		return nil, err
	}
	tokenURL, err := c.tokenEndpoint(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, opJWTBearer)
	}
	form := url.Values{"grant_type": {jwtBearerGrantType}, "assertion": {assertion}}
	setScope(form, r.Conn.Scopes)
	ts, err := c.token(ctx, r.Conn, r.ClientAuth, tokenCall{Op: opJWTBearer, Endpoint: tokenURL, Form: form, Secrets: []string{assertion}})
	if err != nil {
		return nil, nameSource(err, grantAssertion, r.Assertion.From)
	}
	return ts, nil
}

// sourcePlaceholders are how the refusal rows name where the grant's and
// the client's assertion came from.
var sourcePlaceholders = map[assertionRole]string{grantAssertion: "<assertion source>", clientAssertion: "<client assertion source>"}

// nameSource writes where the assertion of role came from into the line of
// a refusal that names it, and marks the error as about it.
func nameSource(err error, role assertionRole, from string) error {
	var ae *Error
	if errors.As(err, &ae) && strings.Contains(ae.Msg+ae.Hint, sourcePlaceholders[role]) {
		ae.Msg = strings.ReplaceAll(ae.Msg, sourcePlaceholders[role], from)
		ae.Hint = strings.ReplaceAll(ae.Hint, sourcePlaceholders[role], from)
		ae.about = role
	}
	return err
}
