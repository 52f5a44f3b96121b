package auth

import "context"

// passwordGrant is the resource owner password grant (RFC 6749 §4.3): the
// Shipping Service's documented grant. It runs unattended only with a
// remembered password.
type passwordGrant struct{}

func (passwordGrant) Type() GrantType { return GrantPassword }

func (passwordGrant) Unattended(kept Kept) bool { return kept.Password }

func (passwordGrant) Obtain(ctx context.Context, c *Client, r Request) (*TokenSet, error) {
	return c.Login(ctx, r.Conn, r.ClientAuth, r.Username, r.Password)
}
