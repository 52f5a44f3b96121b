package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/shipkey/shipkey/internal/text"
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
	Via    text.Clean // "introspection" or "userinfo"
	Reason text.Clean // one short clause, for LiveUnknown and LiveInactive
	// Said is the server's own words (its error code and description, or
	// an excerpt of its answer), sanitized; empty when it said nothing.
	Said text.Clean
}

// Detail is the reason with the server's words after a colon: one flat
// sentence for a verdict line, without nested parentheses.
func (l Liveness) Detail() text.Clean {
	if l.Said.IsEmpty() {
		return l.Reason
	}
	return text.Concat(l.Reason, text.Trusted("; the server said: "), l.Said)
}

// unknownFrom is LiveUnknown for err: its message is the reason (without the
// hint), the server's words go in Said.
func unknownFrom(via text.Clean, err error) Liveness {
	var e *Error
	if !errors.As(err, &e) {
		return Liveness{State: LiveUnknown, Via: via, Reason: text.Sanitize(err.Error())}
	}
	reason := e.Msg
	if e.Op != "" {
		reason = e.Op + ": " + reason
	}
	return Liveness{State: LiveUnknown, Via: via, Reason: text.Sanitize(reason), Said: e.said()}
}

// Liveness asks the realm whether it still accepts accessToken: token
// introspection with the client's credentials where the server offers it
// (discovery's introspection_endpoint, or Keycloak's path when discovery did
// not answer or named none and the connection has an auth URL), else userinfo (also when introspection answers 401, 403 or
// 404).
//
// Only introspection's "active": false is LiveInactive: the one answer in
// which the server says the token is no longer accepted. A userinfo 401 or
// 403 is LiveUnknown: userinfo refuses a live token that lacks the openid
// scope (and servers differ in what else they demand), so its refusal does
// not say the session ended. Liveness never returns an error; failures are
// LiveUnknown with a reason.
func (c *Client) Liveness(ctx context.Context, conn Connection, ca ClientAuth, accessToken string) Liveness {
	secrets := ca.secrets(conn, accessToken)
	if err := conn.Validate(); err != nil {
		return unknownFrom(text.Clean{}, err)
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return unknownFrom(text.Clean{}, err)
	}
	if ep.Introspection == "" && conn.AuthURL != "" {
		// Discovery named none: Keycloak's path is asked, and a 404 there
		// falls through to userinfo as below.
		ep.Introspection = conn.KeycloakEndpoints().Introspection
	}
	if ep.Introspection != "" {
		if l, answered := c.introspect(ctx, conn, ca, ep.Introspection, accessToken, secrets); answered {
			return l
		}
	}
	if ep.Userinfo == "" {
		return Liveness{State: LiveUnknown, Reason: text.Trusted("the server offers neither token introspection nor userinfo")}
	}
	return c.userinfoLiveness(ctx, ep.Userinfo, accessToken, secrets)
}

// introspect asks the introspection endpoint at endpoint about
// accessToken; answered is false when it is not available to this client
// (401, 403 or 404), and userinfo is to be asked instead.
func (c *Client) introspect(ctx context.Context, conn Connection, ca ClientAuth, endpoint, accessToken string, secrets []string) (_ Liveness, answered bool) {
	via := text.Trusted("introspection")
	resp, err := c.send(ctx, conn, ca, formRequest{Op: "introspect", Endpoint: endpoint,
		Form: url.Values{"token": {accessToken}, "token_type_hint": {"access_token"}}})
	switch status := resp.Status; {
	case err != nil:
		return unknownFrom(via, err), true
	case status == http.StatusOK:
		var ans struct {
			Active *bool `json:"active"`
		}
		if json.Unmarshal(resp.Body, &ans) != nil || ans.Active == nil {
			return Liveness{State: LiveUnknown, Via: via, Reason: text.Trusted("the introspection answer is not valid JSON with \"active\"")}, true
		}
		if *ans.Active {
			return Liveness{State: LiveActive, Via: via}, true
		}
		return Liveness{State: LiveInactive, Via: via, Reason: text.Trusted("session ended or token revoked")}, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
		c.logger.Debug("introspection unavailable; trying userinfo", "status", status)
		return Liveness{}, false
	}
	return unknownFrom(via, resp.refusal("introspect", secrets)), true
}

// userinfoLiveness asks the userinfo endpoint at endpoint with
// accessToken: a 200 is LiveActive, anything else LiveUnknown.
func (c *Client) userinfoLiveness(ctx context.Context, endpoint, accessToken string, secrets []string) Liveness {
	via := text.Trusted("userinfo")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: text.Trusted("the userinfo URL is not valid")}
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return unknownFrom(via, mapTransportError(ctx, "userinfo", endpoint, err))
	}
	body, err := readBody(resp)
	if err != nil {
		return unknownFrom(via, mapTransportError(ctx, "userinfo", endpoint, err))
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return Liveness{State: LiveActive, Via: via}
	case http.StatusUnauthorized, http.StatusForbidden:
		// A refusal here does not tell whether the session ended, and its
		// description is the same generic sentence whatever the cause
		// ("expired, revoked, malformed, or invalid"): quoted, it reads as
		// a verdict. Only the error code is kept.
		reason := text.Cleanf("userinfo refused the token with status %d, perhaps for want of the openid scope", resp.StatusCode)
		se := parseServerError(body)
		return Liveness{State: LiveUnknown, Via: via, Reason: reason, Said: text.Sanitize(scrub(se.Code, secrets))}
	}
	se := parseServerError(body)
	return unknownFrom(via, mapStatus("userinfo", resp.StatusCode, se.Code, se.Description, body, secrets))
}
