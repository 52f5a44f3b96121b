package auth

import (
	"context"
	"net/url"
)

// clientCredentialsGrant is the client credentials grant (RFC 6749 §4.4): a
// machine's key, no person and no user. It runs again whenever its token
// expires (a refresh token is used only when the server sent one).
type clientCredentialsGrant struct{}

func (clientCredentialsGrant) Type() GrantType { return GrantClientCredentials }

func (clientCredentialsGrant) Unattended(Kept) bool { return true }

func (clientCredentialsGrant) Obtain(ctx context.Context, c *Client, r Request) (*TokenSet, error) {
	const op = "client-credentials"
	if err := r.Conn.Validate(); err != nil {
		return nil, withOp(err, op)
	}
	switch m := r.ClientAuth.method(r.Conn); {
	case m.Needs().Public:
		return nil, &Error{Kind: KindInvalidClient, Op: op, Msg: "a public client cannot use the client credentials grant", Hint: "choose a client authentication ({{client-auth}}) the realm has set for the client"}
	case m.UsesSecret() && r.ClientAuth.Secret == "":
		return nil, &Error{Kind: KindInvalidClient, Op: op, Msg: "the client secret is empty", Hint: "the client credentials grant needs the client's secret (SHIPKEY_CLIENT_SECRET or --client-secret-stdin)"}
	}
	tokenURL, err := c.tokenEndpoint(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	setScope(form, r.Conn.Scopes)
	return c.token(ctx, r.Conn, r.ClientAuth, tokenCall{Op: op, Endpoint: tokenURL, Form: form})
}
