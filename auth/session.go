package auth

import (
	"context"
	"net/http"
	"net/url"
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
// whatever the server offers:
//
//  1. the logout endpoint, with the refresh token: discovery's
//     end_session_endpoint, or Keycloak's .../protocol/openid-connect/logout
//     only when discovery did not answer. A 404 or 405 there (not Keycloak),
//     or a redirect or HTML page (a sign-out page for browsers), falls
//     through to revocation;
//  2. RFC 7009 revocation: discovery's revocation_endpoint, else Keycloak's
//     .../protocol/openid-connect/revoke (when the connection has an auth
//     URL); the refresh token first (which ends the session), then the access
//     token. A 404 or 405 at the guessed Keycloak path means the server offers
//     no revocation.
//
// It returns a zero EndResult and a nil error when the server offers no way
// to end a session; an error (*Error) only when the server refused or could
// not be reached. Callers drop their local tokens either way.
func (c *Client) EndSession(ctx context.Context, conn Connection, ca ClientAuth, ts *TokenSet) (EndResult, error) {
	const op = "logout"
	if ts == nil || (ts.RefreshToken == "" && ts.AccessToken == "") {
		return EndResult{}, nil
	}
	if err := conn.Validate(); err != nil {
		return EndResult{}, withOp(err, op)
	}
	ep, discovered, err := c.endpoints(ctx, conn)
	if err != nil {
		return EndResult{}, withOp(err, op)
	}
	if !discovered {
		ep.Logout = conn.KeycloakEndpoints().Logout
	}
	if ts.RefreshToken != "" && ep.Logout != "" {
		if res, ended, err := c.endAtLogout(ctx, conn, ca, ts, ep.Logout); ended || err != nil {
			return res, err
		}
	}
	revURL, guessed := revocationEndpoint(conn, ep, discovered)
	if revURL == "" {
		return EndResult{}, nil
	}
	return c.endByRevocation(ctx, conn, ca, ts, revURL, guessed)
}

// revocationEndpoint is discovery's revocation endpoint, else Keycloak's
// path when the connection has an auth URL; guessed when it is Keycloak's
// path. Without discovery every endpoint is Keycloak's path, a guess: a 404
// there means the server offers no revocation, not a refusal.
func revocationEndpoint(conn Connection, ep Endpoints, discovered bool) (revURL string, guessed bool) {
	revURL, guessed = ep.Revocation, !discovered
	if revURL == "" && conn.AuthURL != "" {
		revURL, guessed = conn.KeycloakEndpoints().Revocation, true
	}
	return revURL, guessed
}

// succeeded reports whether status is a plain success (200 or 204).
func succeeded(status int) bool { return status == http.StatusOK || status == http.StatusNoContent }

// absent reports whether status says nothing answers at the path (404 or
// 405).
func absent(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// endAtLogout sends ts's refresh token to the logout endpoint at logoutURL.
// ended: the answer is EndSession's (the session ended, had ended, or the
// server refused); otherwise revocation is tried next.
func (c *Client) endAtLogout(ctx context.Context, conn Connection, ca ClientAuth, ts *TokenSet, logoutURL string) (res EndResult, ended bool, err error) {
	const op = "logout"
	resp, err := c.send(ctx, conn, ca, formRequest{Op: op, Endpoint: logoutURL, Form: url.Values{"refresh_token": {ts.RefreshToken}}})
	switch status := resp.Status; {
	case err != nil:
		return EndResult{}, true, err
	case succeeded(status) && !isMarkup(resp.Body):
		return EndResult{Via: "logout"}, true, nil
	case absent(status):
		c.logger.Debug("no logout endpoint; trying revocation", "status", status)
		return EndResult{}, false, nil
	case status/100 == 3 || status == http.StatusOK:
		// A redirect or an HTML page: a sign-out page for browsers
		// (OpenID RP-initiated logout), not an API that ends the session.
		c.logger.Debug("the logout endpoint is a browser page; trying revocation", "status", status)
		return EndResult{}, false, nil
	}
	e := resp.refusal(op, ca.secrets(conn, ts.RefreshToken, ts.AccessToken))
	if e.Kind == KindLoginRequired {
		return EndResult{Via: "logout", AlreadyEnded: true}, true, nil
	}
	return EndResult{}, true, e
}

// endByRevocation revokes ts's tokens (RFC 7009) at revURL, the refresh
// token first (which ends the session), then the access token. guessed:
// revURL is Keycloak's path, not one the server named, so that nothing
// answering there means no revocation rather than a refusal.
func (c *Client) endByRevocation(ctx context.Context, conn Connection, ca ClientAuth, ts *TokenSet, revURL string, guessed bool) (EndResult, error) {
	const op = "revoke"
	var res EndResult
	for _, t := range []struct{ token, hint string }{{ts.RefreshToken, "refresh_token"}, {ts.AccessToken, "access_token"}} {
		if t.token == "" {
			continue
		}
		resp, err := c.send(ctx, conn, ca, formRequest{Op: op, Endpoint: revURL, Form: url.Values{"token": {t.token}, "token_type_hint": {t.hint}}})
		switch {
		case err != nil:
			return res, err
		case succeeded(resp.Status):
			res.Via = "revocation"
		case guessed && res.Via == "" && absent(resp.Status):
			return EndResult{}, nil // no revocation at Keycloak's path either
		case res.Via != "" && resp.serverError().Code == "unsupported_token_type":
			// RFC 7009 §2.2.1: the server does not revoke access tokens; the
			// refresh token (and with it the session) is revoked.
		default:
			return res, resp.refusal(op, ca.secrets(conn, ts.RefreshToken, ts.AccessToken))
		}
	}
	return res, nil
}

// Logout ends the session of refreshToken at the realm's logout endpoint
// (discovery's end_session_endpoint, or Keycloak's path when discovery did
// not answer). A refusal is returned as *Error; a session that had already
// ended is KindLoginRequired; a server without a logout endpoint is an
// *Error wrapping ErrNotSupported. EndSession is what callers want: it falls
// back to revocation.
func (c *Client) Logout(ctx context.Context, conn Connection, ca ClientAuth, refreshToken string) error {
	const op = "logout"
	if err := conn.Validate(); err != nil {
		return withOp(err, op)
	}
	ep, discovered, err := c.endpoints(ctx, conn)
	if err != nil {
		return withOp(err, op)
	}
	if !discovered {
		ep.Logout = conn.KeycloakEndpoints().Logout
	}
	if ep.Logout == "" {
		return &Error{Kind: KindConfig, Op: op, Msg: "the server offers no logout endpoint", Hint: "the session ends when the refresh token expires", Err: ErrNotSupported}
	}
	resp, err := c.send(ctx, conn, ca, formRequest{Op: op, Endpoint: ep.Logout, Form: url.Values{"refresh_token": {refreshToken}}})
	if err != nil {
		return err
	}
	if succeeded(resp.Status) {
		return nil
	}
	return resp.refusal(op, ca.secrets(conn, refreshToken))
}

// Revoke revokes token by RFC 7009 where the server advertises a revocation
// endpoint (or, when discovery did not answer, at Keycloak's path); hint is
// "access_token" or "refresh_token". It returns ErrNotSupported when there is
// no such endpoint.
func (c *Client) Revoke(ctx context.Context, conn Connection, ca ClientAuth, token, hint string) error {
	const op = "revoke"
	if err := conn.Validate(); err != nil {
		return withOp(err, op)
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return withOp(err, op)
	}
	if ep.Revocation == "" {
		return ErrNotSupported
	}
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	resp, err := c.send(ctx, conn, ca, formRequest{Op: op, Endpoint: ep.Revocation, Form: form})
	if err != nil {
		return err
	}
	if succeeded(resp.Status) {
		return nil
	}
	return resp.refusal(op, ca.secrets(conn, token))
}
