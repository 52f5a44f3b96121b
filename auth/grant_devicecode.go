package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
	"golang.org/x/oauth2"
)

// deviceCodeGrant is the device authorization grant (RFC 8628): the person
// approves a user code on another device while shipkey polls. The device
// authorization request is sent here, with client authentication (form or
// Basic, as the connection says): x/oauth2's DeviceAuth sends no client
// secret (golang/oauth2#685). Polling is x/oauth2's DeviceAccessToken, which
// honours interval and slow_down.
type deviceCodeGrant struct{}

// GrantDeviceCode names the device authorization grant.
const GrantDeviceCode GrantType = "device-code"

func (deviceCodeGrant) Type() GrantType { return GrantDeviceCode }

func (deviceCodeGrant) Unattended(Kept) bool { return false }

// deviceAuthResponse is RFC 8628 §3.2 (verification_url: Google's name).
type deviceAuthResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURL         string `json:"verification_url"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               any    `json:"expires_in"`
	Interval                any    `json:"interval"`
}

// maxDeviceWait bounds a device code's life whatever the server says.
const maxDeviceWait = 30 * time.Minute

// maxDeviceInterval bounds the wait between polls whatever the server says:
// an interval of 1e18 seconds would overflow a time.Duration (a negative
// ticker period panics) and one beyond the code's life would never poll.
const maxDeviceInterval = time.Minute

func (deviceCodeGrant) Obtain(ctx context.Context, c *Client, r Request) (*TokenSet, error) {
	const op = "device-code"
	ep, discovered, err := c.interactiveEndpoints(ctx, r, op, "the device code grant needs a person to approve it",
		"device authorization", func(e *Endpoints) *string { return &e.DeviceAuthorization })
	if err != nil {
		return nil, err
	}
	d, err := c.authorizeDevice(ctx, r, ep, discovered)
	if err != nil {
		return nil, err
	}
	// A browser is handed a one-time loopback link to the complete URI,
	// never the URI itself: it carries the user code.
	var start *startLink
	startURL := ""
	if d.VerificationURIComplete != "" {
		start = newStartLink(op, d.VerificationURIComplete)
		var stop func()
		startURL, stop = listenStartLink(start)
		defer stop()
	}
	r.Prompt(Prompt{
		Grant:                   GrantDeviceCode,
		UserCode:                d.UserCode,
		VerificationURI:         d.VerificationURI,
		VerificationURIComplete: d.VerificationURIComplete,
		ExpiresAt:               c.now().Add(d.wait),
		Interval:                d.interval,
		StartURL:                startURL,
	})
	ts, err := c.awaitDevice(ctx, r, d, start)
	if err != nil {
		return nil, err
	}
	if err := c.checkSignedIn(ctx, r, ts, op); err != nil {
		return nil, err
	}
	return ts, nil
}

// interactiveEndpoints is what a grant that needs a person checks first: the
// connection is valid, a person is there to prompt (else noPerson is said),
// and the server has the endpoint field picks (what names it), discovered or
// Keycloak's. discovered: the endpoints came from discovery.
func (c *Client) interactiveEndpoints(ctx context.Context, r Request, op, noPerson, what string, field func(*Endpoints) *string) (Endpoints, bool, error) {
	if err := r.Conn.Validate(); err != nil {
		return Endpoints{}, false, withOp(err, op)
	}
	if r.Prompt == nil {
		return Endpoints{}, false, &Error{Kind: KindInteractionRequired, Op: op, Msg: noPerson, Hint: "run the command in a terminal"}
	}
	ep, discovered, err := c.endpoints(ctx, r.Conn)
	if err != nil {
		return Endpoints{}, false, withOp(err, op)
	}
	if u := field(&ep); *u == "" {
		kc := r.Conn.KeycloakEndpoints()
		*u = *field(&kc)
	}
	if *field(&ep) == "" {
		return Endpoints{}, false, &Error{Kind: KindConfig, Op: op, Msg: "the server offers no " + what + " endpoint", Hint: "use another grant, or set the auth URL of a Keycloak realm"}
	}
	return ep, discovered, nil
}

// deviceAuthorization is a device authorization the server granted, checked,
// with what polling for its tokens needs.
type deviceAuthorization struct {
	deviceAuthResponse
	verifier string        // the PKCE verifier sent with it
	secrets  []string      // what no error may show
	wait     time.Duration // how long the code lives (bounded)
	interval time.Duration // between polls (bounded)
}

// authorizeDevice sends the device authorization request (RFC 8628 §3.1)
// and checks the answer.
func (c *Client) authorizeDevice(ctx context.Context, r Request, ep Endpoints, discovered bool) (*deviceAuthorization, error) {
	const op = "device-code"
	// PKCE (RFC 7636) on the device grant too: a realm that sets a PKCE
	// method for the client refuses a device request without it
	// (keycloak#9710); a server that does not know it ignores it.
	verifier := oauth2.GenerateVerifier()
	form := url.Values{"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	setScope(form, grantScopes(r.Conn, ep, discovered))
	secrets := r.ClientAuth.secrets(r.Conn, verifier)
	resp, err := c.send(ctx, r.Conn, r.ClientAuth, formRequest{Op: op, Endpoint: ep.DeviceAuthorization, Form: form})
	if err != nil {
		return nil, err
	}
	switch status := resp.Status; status {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		// Nothing answers there (an HTML 404 page, most often): the server
		// has no device grant, or not at the path guessed for Keycloak.
		return nil, &Error{Kind: KindConfig, Op: op, Status: status,
			Msg:  fmt.Sprintf("no device authorization endpoint at %s (status %d); this server may not support the device grant", ep.DeviceAuthorization, status),
			Hint: "use another grant (--grant authcode, password or client-credentials), or check the auth URL"}
	default:
		return nil, c.nameTheSwitch(ctx, r.Conn, r.ClientAuth, resp.refusal(op, secrets))
	}
	var da deviceAuthResponse
	if json.Unmarshal(resp.Body, &da) != nil {
		return nil, malformed(op, "the device authorization answer is not JSON")
	}
	if err := da.check(); err != nil {
		return nil, err
	}
	wait, interval := da.timing()
	return &deviceAuthorization{deviceAuthResponse: da, verifier: verifier, secrets: secrets, wait: wait, interval: interval}, nil
}

// check checks the answer's codes and URIs, taking verification_url for a
// missing verification_uri and dropping a complete URI that fails the check
// (the plain URI and the code still work).
func (da *deviceAuthResponse) check() error {
	const op = "device-code"
	if da.VerificationURI == "" {
		da.VerificationURI = da.VerificationURL
	}
	switch {
	case !visibleASCII(da.DeviceCode):
		return malformed(op, "the device authorization answer has no usable device_code")
	case strings.TrimSpace(da.UserCode) == "" || !text.IsClean(da.UserCode) || len(da.UserCode) > 64:
		return malformed(op, "the device authorization answer has no usable user_code")
	case checkPageURL(da.VerificationURI) != nil:
		return malformed(op, "the device authorization answer has no usable verification_uri")
	}
	if da.VerificationURIComplete != "" && checkPageURL(da.VerificationURIComplete) != nil {
		da.VerificationURIComplete = ""
	}
	return nil
}

// timing is how long the code lives (at most maxDeviceWait) and the wait
// between polls (five seconds when unsaid, RFC 8628 §3.2; at most
// maxDeviceInterval).
func (da *deviceAuthResponse) timing() (wait, interval time.Duration) {
	wait = time.Duration(toInt(da.ExpiresIn)) * time.Second
	if wait <= 0 || wait > maxDeviceWait {
		wait = maxDeviceWait
	}
	secs := toInt(da.Interval)
	if secs <= 0 {
		secs = 5
	}
	secs = min(secs, int64(maxDeviceInterval/time.Second))
	return wait, time.Duration(secs) * time.Second
}

// awaitDevice polls for d's tokens until the code's life ends, ctx ends, or
// start (when not nil) is aborted.
func (c *Client) awaitDevice(ctx context.Context, r Request, d *deviceAuthorization, start *startLink) (*TokenSet, error) {
	const op = "device-code"
	tokenURL, err := c.tokenEndpoint(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	waitCtx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	if start != nil {
		var stop func()
		waitCtx, stop = start.abortable(waitCtx)
		defer stop()
	}
	ts, err := c.pollDevice(waitCtx, r, tokenURL, d.DeviceCode, d.verifier, d.interval, d.secrets)
	switch {
	case start != nil && start.is(context.Cause(waitCtx)):
		return nil, context.Cause(waitCtx)
	case err != nil && ctx.Err() == nil && waitCtx.Err() != nil:
		return nil, &Error{Kind: KindExpired, Op: op, Msg: "the device code expired before it was approved", Hint: "run the command again and approve the request within its time"}
	case err != nil:
		return nil, err
	}
	return ts, nil
}

// pollDevice asks the token endpoint for the device code's tokens every
// interval (RFC 8628 §3.4), five seconds more after each slow_down, until
// the server answers anything but authorization_pending or ctx ends.
func (c *Client) pollDevice(ctx context.Context, r Request, tokenURL, deviceCode, verifier string, interval time.Duration, secrets []string) (*TokenSet, error) {
	const op = "device-code"
	call := tokenCall{Op: op, Endpoint: tokenURL, Secrets: append(secrets, deviceCode), Form: url.Values{
		"grant_type":    {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code":   {deviceCode},
		"code_verifier": {verifier},
	}}
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, mapTransportError(ctx, op, tokenURL, ctx.Err())
		case <-timer.C:
		}
		ts, err := c.token(ctx, r.Conn, r.ClientAuth, call)
		var e *Error
		if err == nil || !errors.As(err, &e) {
			return ts, err
		}
		switch e.Code {
		case "slow_down":
			interval += 5 * time.Second
		case "authorization_pending":
		default:
			return nil, err
		}
		timer.Reset(interval)
	}
}

// grantScopes is the scope an interactive grant asks for: the connection's,
// else openid when discovery lists it in scopes_supported (a server that
// requires a scope refuses a request with none, and openid is the one every
// OpenID provider knows).
func grantScopes(conn Connection, ep Endpoints, discovered bool) []string {
	if len(conn.Scopes) > 0 {
		return conn.Scopes
	}
	if discovered && ep.ScopesSupported.Has("openid") {
		return []string{"openid"}
	}
	return nil
}

// checkPageURL reports whether raw is a URL a person may be sent to: an
// absolute https URL, or http to a loopback host.
func checkPageURL(raw string) error {
	if !text.IsClean(raw) {
		return errors.New("holds control characters")
	}
	return CheckURL(raw)
}
