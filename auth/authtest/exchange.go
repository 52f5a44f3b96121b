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
	subject := form.Get("subject_token")
	if subject == "" {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' missing")
	}
	if t := form.Get("subject_token_type"); t != "" && t != tokenTypeAccess {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' supports access tokens only")
	}
	if t := form.Get("requested_token_type"); t != "" && t != tokenTypeAccess {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "requested_token_type unsupported")
	}
	audience := form.Get("audience")
	s.mu.Lock()
	_, known := s.clients[audience]
	s.mu.Unlock()
	if audience == "" || !known {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Audience not found")
	}
	p, u, ok := s.liveToken(subject)
	if !ok || p.Typ != "Bearer" && p.Typ != "DPoP" {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Invalid token")
	}
	if p.Azp != client.ID && !slices.Contains(audiences(p.raw["aud"]), client.ID) {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Client is not within the token audience")
	}
	s.mu.Lock()
	ss, alive := s.sessions[p.Sid]
	var copied session
	if alive {
		copied = *ss
	}
	s.mu.Unlock()
	if !alive {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Invalid token")
	}
	copied.clientID, copied.audience, copied.bind = client.ID, audience, binding{}
	resp, err := s.issue(issuer, *u, copied, s.now().Unix())
	if err != nil {
		return tokenResponse{}, errf(http.StatusInternalServerError, "server_error", "could not sign the token")
	}
	zero := int64(0)
	resp.RefreshToken, resp.RefreshExpiresIn, resp.IDToken = "", &zero, ""
	resp.IssuedTokenType = tokenTypeAccess
	return resp, nil
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
