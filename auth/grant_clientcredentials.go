package auth

import (
	"context"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
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
	if r.ClientSecret == "" {
		return nil, &Error{Kind: KindInvalidClient, Op: op, Msg: "the client secret is empty", Hint: "the client credentials grant needs the client's secret (SHIPKEY_CLIENT_SECRET or --client-secret-stdin)"}
	}
	tokenURL, err := c.tokenEndpoint(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	oc := oauthConfig(r.Conn, r.ClientSecret, tokenURL)
	cc := &clientcredentials.Config{
		ClientID:     oc.ClientID,
		ClientSecret: oc.ClientSecret,
		TokenURL:     tokenURL,
		Scopes:       oc.Scopes,
		AuthStyle:    oc.Endpoint.AuthStyle,
	}
	ctx, tr := withTracker(context.WithValue(ctx, oauth2.HTTPClient, c.http))
	tok, err := cc.Token(ctx)
	if err != nil {
		return nil, mapTokenError(ctx, op, tokenURL, err, tr, secretsOf(r.Conn, r.ClientSecret))
	}
	return c.tokenSet(op, tok)
}
