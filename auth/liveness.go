package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// LiveState is what the server says of a token that looks valid locally.
type LiveState int

const (
	// LiveUnknown: cannot tell (no endpoint, a refusal that does not say the
	// session ended, a network failure). Never a reason to stop using the
	// token or to skip a refresh.
	LiveUnknown LiveState = iota
	// LiveActive: the server accepts the token.
	LiveActive
	// LiveInactive: the server said it no longer accepts the token
	// (introspection "active": false): the session ended or it was revoked.
	LiveInactive
)

func (s LiveState) String() string {
	return [...]string{"cannot tell", "active", "not active"}[s]
}

// Liveness is the answer of Client.Liveness.
type Liveness struct {
	State  LiveState
	Via    string // "introspection" or "userinfo"
	Reason string // sanitized, for LiveUnknown and LiveInactive
}

// Liveness asks the realm whether it still accepts accessToken: token
// introspection with the client's credentials where the server offers it
// (discovery's introspection_endpoint, or Keycloak's path when discovery did
// not answer), else userinfo (also when introspection answers 401, 403 or
// 404).
//
// Only introspection's "active": false is LiveInactive: the one answer in
// which the server says the token is no longer accepted. A userinfo 401 or
// 403 is LiveUnknown: userinfo refuses a live token that lacks the openid
// scope (and servers differ in what else they demand), so its refusal does
// not say the session ended. Liveness never returns an error; failures are
// LiveUnknown with a reason.
func (c *Client) Liveness(ctx context.Context, conn Connection, clientSecret, accessToken string) Liveness {
	secrets := secretsOf(conn, clientSecret, accessToken)
	if err := conn.Validate(); err != nil {
		return Liveness{State: LiveUnknown, Reason: err.Error()}
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return Liveness{State: LiveUnknown, Reason: err.Error()}
	}
	if ep.Introspection != "" {
		const via = "introspection"
		status, body, err := c.postForm(ctx, conn, clientSecret, ep.Introspection,
			url.Values{"token": {accessToken}, "token_type_hint": {"access_token"}})
		switch {
		case err != nil:
			return Liveness{State: LiveUnknown, Via: via, Reason: mapTransportError(ctx, "introspect", ep.Introspection, err).Error()}
		case status == http.StatusOK:
			var ans struct {
				Active *bool `json:"active"`
			}
			if json.Unmarshal(body, &ans) != nil || ans.Active == nil {
				return Liveness{State: LiveUnknown, Via: via, Reason: "the introspection answer is not valid JSON with \"active\""}
			}
			if *ans.Active {
				return Liveness{State: LiveActive, Via: via}
			}
			return Liveness{State: LiveInactive, Via: via, Reason: "the server no longer accepts the token (session ended or token revoked)"}
		case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
			c.logger.Debug("introspection unavailable; trying userinfo", "status", status)
		default:
			se := parseServerError(body)
			return Liveness{State: LiveUnknown, Via: via, Reason: mapStatus("introspect", status, se.Code, se.Description, body, secrets).Error()}
		}
	}
	if ep.Userinfo == "" {
		return Liveness{State: LiveUnknown, Reason: "the server offers neither token introspection nor userinfo"}
	}
	const via = "userinfo"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.Userinfo, nil)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: "the userinfo URL is not valid"}
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: mapTransportError(ctx, "userinfo", ep.Userinfo, err).Error()}
	}
	body, err := readBody(resp)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: mapTransportError(ctx, "userinfo", ep.Userinfo, err).Error()}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return Liveness{State: LiveActive, Via: via}
	case http.StatusUnauthorized, http.StatusForbidden:
		reason := fmt.Sprintf("userinfo refused the token (status %d), which does not tell whether the session ended "+
			"(the token may lack the openid scope)", resp.StatusCode)
		if se := parseServerError(body); se.Code != "" || se.Description != "" {
			reason += " (server said: " + scrub(se.Code+" "+se.Description, secrets) + ")"
		}
		return Liveness{State: LiveUnknown, Via: via, Reason: reason}
	}
	se := parseServerError(body)
	return Liveness{State: LiveUnknown, Via: via, Reason: mapStatus("userinfo", resp.StatusCode, se.Code, se.Description, body, secrets).Error()}
}
