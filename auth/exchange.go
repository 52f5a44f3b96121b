package auth

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
)

// RFC 8693's identifiers.
const (
	// GrantTokenExchange is the token exchange grant type.
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeAccess is the token type of an access token, the subject of
	// every exchange shipkey makes and the default it asks for.
	TokenTypeAccess = "urn:ietf:params:oauth:token-type:access_token"
	// TokenTypeNotApplicable is the token_type a server answers when the
	// issued token is not an access token (RFC 8693 §2.2.1).
	TokenTypeNotApplicable = "N_A"
)

// opExchange names a token exchange in errors.
const opExchange = "token-exchange"

// Exchange is what an RFC 8693 token exchange asks for: a token for another
// audience (a service's client id at the realm), or another resource (a
// URI), with scopes and a token type. The subject is always the key's own
// access token. The zero value asks for nothing: IsZero.
type Exchange struct {
	Audience string `json:"audience,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Scopes, when given, are the scopes asked for (the server may grant
	// fewer).
	Scopes []string `json:"scopes,omitempty"`
	// RequestedTokenType is a token type URN ("" asks for none: the server
	// issues an access token).
	RequestedTokenType string `json:"requested_token_type,omitempty"`
}

// IsZero reports an Exchange that asks for nothing: the key's own token.
func (x Exchange) IsZero() bool {
	return x.Audience == "" && x.Resource == "" && len(x.Scopes) == 0 && x.RequestedTokenType == ""
}

// Check refuses an Exchange a server could not read: an audience, resource
// or token type with control characters or spaces, a resource that is not an
// absolute URI, and one that asks for no audience or resource at all.
func (x Exchange) Check() error {
	if x.Audience == "" && x.Resource == "" {
		return configError("a token exchange needs an audience or a resource", "pass --audience (the other service's client id) or --resource URI")
	}
	for _, f := range []struct{ name, v string }{{"audience", x.Audience}, {"resource", x.Resource}, {"requested token type", x.RequestedTokenType}} {
		if f.v != "" && !visibleASCII(f.v) {
			return configError("the "+f.name+" holds spaces, control characters or non-ASCII bytes", "pass it as the realm names it")
		}
	}
	if x.Resource != "" {
		if u, err := url.Parse(x.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			return configError("the resource "+text.ShellQuote(x.Resource)+" is not an absolute URI without a fragment (RFC 8707)", "pass the API's URI, such as https://api.example.com")
		}
	}
	for _, s := range x.Scopes {
		if !visibleASCII(s) {
			return configError("a scope holds spaces, control characters or non-ASCII bytes", "pass each scope as the realm names it")
		}
	}
	return nil
}

// CacheKey names what x asks for, the same for the same request whatever
// the order of its scopes: tokens are cached under it.
func (x Exchange) CacheKey() string {
	scopes := slices.Clone(x.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	return strings.Join([]string{x.Audience, x.Resource, strings.Join(scopes, " "), x.RequestedTokenType}, "\x00")
}

// Exchange trades subject, an access token of conn's client, for a token as
// x asks (RFC 8693), with the client authentication ca applies (and a DPoP
// proof when ca has a DPoP key), on the one request path every token request
// takes. The answer is checked as every token response is; a token whose
// token_type is N_A (not an access token) keeps that type. A server without
// token exchange (unsupported_grant_type) is an error of KindGrantNotAllowed
// that says so; its other refusals are the server's words.
func (c *Client) Exchange(ctx context.Context, conn Connection, ca ClientAuth, subject string, x Exchange) (*TokenSet, error) {
	if err := conn.Validate(); err != nil {
		return nil, withOp(err, opExchange)
	}
	if err := x.Check(); err != nil {
		return nil, withOp(err, opExchange)
	}
	if subject == "" {
		return nil, &Error{Kind: KindLoginRequired, Op: opExchange, Msg: "the key has no access token to exchange", Hint: "log in again with `shipkey login`"}
	}
	tokenURL, err := c.tokenEndpoint(ctx, conn)
	if err != nil {
		return nil, withOp(err, opExchange)
	}
	form := url.Values{
		"grant_type":         {GrantTokenExchange},
		"subject_token":      {subject},
		"subject_token_type": {TokenTypeAccess},
	}
	if x.Audience != "" {
		form.Set("audience", x.Audience)
	}
	if x.Resource != "" {
		form.Set("resource", x.Resource)
	}
	setScope(form, x.Scopes)
	if x.RequestedTokenType != "" {
		form.Set("requested_token_type", x.RequestedTokenType)
	}
	return c.token(ctx, conn, ca, tokenCall{Op: opExchange, Endpoint: tokenURL, Form: form, Secrets: []string{subject}, NotAccessToken: true})
}
