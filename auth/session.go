package auth

import (
	"context"
	"errors"
)

// EndResult says how EndSession ended a session at the server.
type EndResult struct {
	// Via is "logout" (the realm's end-session endpoint) or "revocation"
	// (RFC 7009); empty when the server offers no way to end a session.
	Via string
	// AlreadyEnded is true when the server said the session had ended before.
	AlreadyEnded bool
}

// Ended reports whether the server ended (or had already ended) the session.
func (r EndResult) Ended() bool { return r.Via != "" }

// EndSession ends the session that ts belongs to, at the server, with
// whatever the server offers: Keycloak's logout endpoint, else the advertised
// revocation_endpoint, else Keycloak's revoke path; with revocation the
// refresh token is revoked first, then the access token.
//
// It returns a zero EndResult and a nil error when the server offers no way
// to end a session; an error only when the server refused or could not be
// reached. Callers drop their local tokens either way.
func (c *Client) EndSession(ctx context.Context, conn Connection, clientSecret string, ts *TokenSet) (EndResult, error) {
	if ts == nil || (ts.RefreshToken == "" && ts.AccessToken == "") {
		return EndResult{}, nil
	}
	if ts.RefreshToken != "" {
		err := c.Logout(ctx, conn, clientSecret, ts.RefreshToken)
		switch {
		case err == nil:
			return EndResult{Via: "logout"}, nil
		case IsLoginRequired(err):
			return EndResult{Via: "logout", AlreadyEnded: true}, nil
		case !errors.Is(err, ErrNotSupported):
			return EndResult{}, err
		}
	}
	var res EndResult
	for _, t := range []struct{ token, hint string }{{ts.RefreshToken, "refresh_token"}, {ts.AccessToken, "access_token"}} {
		if t.token == "" {
			continue
		}
		err := c.Revoke(ctx, conn, clientSecret, t.token, t.hint)
		switch {
		case errors.Is(err, ErrNotSupported):
			return res, nil
		case err != nil:
			return res, err
		}
		res.Via = "revocation"
	}
	return res, nil
}
