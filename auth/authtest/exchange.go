package authtest

import (
	"net/http"
	"net/url"
	"slices"
)

// RFC 8693's grant and token type identifiers.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// tokenExchangeGrant is Keycloak's standard token exchange (26.2 and later,
// RFC 8693): a confidential client trades a live access token issued to it
// (subject_token) for one whose aud is another client of the realm
// (audience), in the same session (it dies with it), with no refresh token.
// Only access tokens are asked for and issued.
func (s *Server) tokenExchangeGrant(form url.Values, client Client, issuer string) (tokenResponse, *oauthError) {
	if !client.isConfidential() {
		return tokenResponse{}, errf(http.StatusUnauthorized, "unauthorized_client", "Public client is not allowed to exchange token")
	}
	if e := checkExchangeParams(form); e != nil {
		return tokenResponse{}, e
	}
	audience := form.Get("audience")
	s.mu.Lock()
	_, known := s.clients[audience]
	s.mu.Unlock()
	if audience == "" || !known {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Audience not found")
	}
	u, copied, e := s.exchangedSession(form.Get("subject_token"), client)
	if e != nil {
		return tokenResponse{}, e
	}
	copied.clientID, copied.audience, copied.bind = client.ID, audience, binding{}
	resp, err := s.issue(issuer, u, copied, s.now().Unix())
	if err != nil {
		return tokenResponse{}, errf(http.StatusInternalServerError, "server_error", "could not sign the token")
	}
	zero := int64(0)
	resp.RefreshToken, resp.RefreshExpiresIn, resp.IDToken = "", &zero, ""
	resp.IssuedTokenType = tokenTypeAccess
	return resp, nil
}

// checkExchangeParams checks an exchange's subject_token (present, an
// access token) and requested_token_type (an access token).
func checkExchangeParams(form url.Values) *oauthError {
	switch {
	case form.Get("subject_token") == "":
		return errf(http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' missing")
	case form.Get("subject_token_type") != "" && form.Get("subject_token_type") != tokenTypeAccess:
		return errf(http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' supports access tokens only")
	case form.Get("requested_token_type") != "" && form.Get("requested_token_type") != tokenTypeAccess:
		return errf(http.StatusBadRequest, "invalid_request", "requested_token_type unsupported")
	}
	return nil
}

// exchangedSession is the user and a copy of the session of subject, a live
// access token issued to client (its azp or one of its audiences).
func (s *Server) exchangedSession(subject string, client Client) (userRecord, session, *oauthError) {
	p, u, ok := s.liveToken(subject)
	if !ok || p.Typ != "Bearer" && p.Typ != "DPoP" {
		return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_request", "Invalid token")
	}
	if p.Azp != client.ID && !slices.Contains(audiences(p.raw["aud"]), client.ID) {
		return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_request", "Client is not within the token audience")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, alive := s.sessions[p.Sid]
	if !alive {
		return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_request", "Invalid token")
	}
	return *u, *ss, nil
}

// audiences reads an aud claim: one string or a list.
func audiences(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, e := range a {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
