package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/shipkey/shipkey/internal/text"
)

// ErrNotSupported is returned when the server offers no endpoint for the
// operation asked (Revoke without a revocation endpoint).
var ErrNotSupported = errors.New("the server does not offer this operation")

// host is the host:port of a URL, for messages.
func host(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "the server"
}

// serverError is the JSON error body of RFC 6749 §5.2 (also used by Keycloak
// on logout, userinfo, introspection and revocation).
type serverError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func parseServerError(body []byte) serverError {
	var se serverError
	if json.Unmarshal(body, &se) != nil {
		return serverError{}
	}
	return se
}

// mapStatus builds the *Error for a non-success answer of an auth endpoint,
// from its status and the RFC 6749 error code; the description is used only
// to tell apart the invalid_grant answers of the password grant.
// timeoutHint names the settings that raise the timeout.
const timeoutHint = "try again; if the server is slow, raise {{timeout}} (or SHIPKEY_TIMEOUT, or timeout in config.toml)"

// loginCauses names the likely causes of a login refused without an OAuth
// error, with the settings that fix them; basicCause is its second half,
// all that is left when the key sends a scope already (withoutScopeCause).
const (
	loginCauses = "the server may require a scope ({{scope openid}}) or the client secret by HTTP Basic ({{basic-auth}})"
	basicCause  = "the server may require the client secret by HTTP Basic ({{basic-auth}})"
)

// scopeCause is loginCauses' first half, for the grants that send no user.
const scopeCause = "the server may require a scope ({{scope}})"

// withoutScopeCause drops the guess that a scope is missing from e's hint:
// the request carried one.
func (e *Error) withoutScopeCause() {
	e.Hint = strings.Replace(e.Hint, loginCauses, basicCause, 1)
	e.Hint = strings.Replace(e.Hint, "; "+scopeCause, "", 1)
}

func mapStatus(op string, status int, code, desc string, body []byte, secrets []string) *Error {
	e := &Error{
		Op:          op,
		Status:      status,
		Code:        scrub(code, secrets),
		Description: scrub(desc, secrets),
	}
	lowDesc := strings.ToLower(desc)
	switch {
	case scopeMissing(code, desc):
		e.Kind = KindInvalidScope
		e.Msg = "the server requires a scope and none was requested"
		e.Hint = scopeHint
	case status >= 300 && status < 400:
		e.Kind = KindServer
		e.Msg = fmt.Sprintf("the server redirected (status %d)", status)
		e.Hint = "check the auth URL (redirects are never followed when credentials are sent)"
	case status >= 500:
		e.Kind = KindServer
		e.Msg = fmt.Sprintf("the server failed (status %d)", status)
		e.Hint = "try again later; if it persists, tell the realm's administrators"
	case op == "login" && (status == 401 || status == 403) && !knownCode(code):
		// Not Keycloak's JSON: an empty, plain-text or HTML refusal that does
		// not say whether the user or the client was refused.
		e.Kind = KindCredentialsRefused
		e.Msg, _ = kindText(e.Kind, op)
		e.Hint = "check the username, password, client id and secret; " + loginCauses
	case op == "login" && status == 400 && code == "":
		// An empty or non-JSON 400: servers that require a scope, or the
		// client secret in another place, answer this way.
		e.Kind = KindServer
		e.Msg = "the server refused the login (status 400) without saying why"
		e.Hint = loginCauses
	case grantOps[op] != "" && (status == 401 || status == 403) && !knownCode(code):
		// A grant that authenticates only the client: the client was refused,
		// or (an empty or non-OAuth 403, as servers that require a scope
		// answer a request without one) the request was.
		e.Kind = KindInvalidClient
		e.Msg, e.Hint = kindText(e.Kind, op)
		if op == "client-credentials" {
			e.Hint += "; " + scopeCause
		}
	case op == opExchange && code == "unsupported_grant_type":
		// The grant type itself is unknown there (Keycloak before 26.2,
		// most servers): no client setting can help.
		e.Kind = KindGrantNotAllowed
		e.Msg = "this server does not offer token exchange"
		e.Hint = "ask the realm's administrators how to get a token for that audience (Keycloak offers token exchange from 26.2)"
	case op == opExchange && (code == "invalid_target" || code == "invalid_request" || code == "access_denied"):
		// RFC 8693 §2.2.2: an audience or resource the server will not
		// issue for, or a subject it will not exchange; its own words say which.
		e.Kind = KindServer
		e.Msg = "the server refused the token exchange"
		e.Hint = "check --audience/--resource (the other service's client id at the realm) and that the client may exchange tokens for it"
	case grantOps[op] != "" && code == "unauthorized_client" && strings.Contains(lowDesc, "invalid client"):
		// Keycloak answers a wrong client secret with unauthorized_client
		// "Invalid client or Invalid client credentials".
		e.Kind = KindInvalidClient
	case grantOps[op] != "" && (code == "unauthorized_client" || code == "unsupported_grant_type"):
		e.Kind = KindGrantNotAllowed
	case grantOps[op] != "" && code == "access_denied":
		e.Kind = KindAccessDenied
	case grantOps[op] != "" && code == "expired_token":
		e.Kind = KindExpired
	case grantOps[op] != "" && code == "invalid_grant":
		e.Kind = KindServer
		e.Msg = "the server refused the " + grantOps[op] + " grant"
		e.Hint = "run the command again; if it repeats, check the client's settings in the realm"
	case op == "refresh" && (status == 400 || status == 401) && code == "":
		// A refusal without an OAuth error body: the refresh token is no
		// longer accepted; only a login can help.
		e.Kind = KindLoginRequired
	case code == "invalid_grant" && op == "login":
		switch {
		case strings.Contains(lowDesc, "disabled"):
			e.Kind = KindAccountDisabled
		case strings.Contains(lowDesc, "not fully set up"):
			e.Kind = KindAccountNotSetUp
		default: // 401 "Invalid user credentials"; 400 for unknown users and brute-force lockouts
			e.Kind = KindInvalidCredentials
		}
	case code == "invalid_grant":
		e.Kind = KindLoginRequired
	case code == "invalid_client":
		e.Kind = KindInvalidClient
	case code == "unauthorized_client":
		if strings.Contains(lowDesc, "direct access grant") || (op == "login" && status == 400) {
			e.Kind = KindDirectGrantDisabled
		} else {
			e.Kind = KindInvalidClient
		}
	case code == "unsupported_grant_type" && op == "login":
		// Not a client setting (Keycloak says unauthorized_client for that):
		// this server has no password grant at all.
		e.Kind = KindDirectGrantDisabled
		e.Msg = "the server does not offer the password grant"
		e.Hint = "sign in with another grant: {{grant device-code}}, or {{grant authcode}} with a browser"
	case code == "invalid_scope":
		e.Kind = KindInvalidScope
	case code == "invalid_token" && op == "logout":
		e.Kind = KindLoginRequired
	default:
		e.Kind = KindServer
		e.Msg = fmt.Sprintf("the server refused the request (status %d)", status)
		e.Hint = "check the connection settings; if they are right, try again later"
	}
	if e.Msg == "" {
		e.Msg, e.Hint = kindText(e.Kind, op)
	}
	if e.Code == "" && len(body) > 0 {
		e.Excerpt = bodyExcerpt(body, secrets)
	}
	return e
}

// scopeHint says where a scope is set, on the command line and in the app.
const scopeHint = "request a scope, for example openid ({{scope openid}})"

// scopeMissing reports a server's answer that a request needs a scope
// ("The scope of your request is missing", "scope is required").
func scopeMissing(code, desc string) bool {
	d := strings.ToLower(desc)
	return (code == "invalid_request" || code == "invalid_scope") && strings.Contains(d, "scope") &&
		(strings.Contains(d, "missing") || strings.Contains(d, "required"))
}

// knownCode reports whether code is an RFC 6749 §5.2 error code mapStatus
// tells apart.
func knownCode(code string) bool {
	switch code {
	case "invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_request":
		return true
	}
	return false
}

// grantOps names, by the Op of their errors, the grants other than the
// password grant ("login").
var grantOps = map[string]string{
	"client-credentials": "client credentials",
	"device-code":        "device code",
	"authcode":           "authorization code",
	opExchange:           "token exchange",
}

// grantHints say where a realm administrator allows a grant for a client.
var grantHints = map[string]string{
	"client-credentials": "ask a realm administrator to turn on the client's service account (Keycloak: Clients → the client → Capability config → Service accounts roles)",
	"device-code":        "ask a realm administrator to turn on the device grant for the client (Keycloak: Clients → the client → Capability config → OAuth 2.0 Device Authorization Grant)",
	"authcode":           "ask a realm administrator to turn on browser sign-in for the client (Keycloak: Clients → the client → Capability config → Standard flow)",
	opExchange:           "ask a realm administrator to turn on token exchange for the client (Keycloak 26.2 and later: Clients → the client → Capability config → Standard Token Exchange)",
}

// kindText is the message and hint of the kinds that come from the server's
// error code.
func kindText(k ErrorKind, op string) (msg, hint string) {
	switch k {
	case KindInvalidCredentials:
		return "wrong username or password", "check them and try again"
	case KindInvalidClient:
		return "the client id or client secret was refused", "check the client id and the client secret registered in the realm"
	case KindAccountDisabled:
		return "the user account is disabled", "ask a realm administrator to enable it"
	case KindAccountNotSetUp:
		return "the user account is not fully set up (required actions pending)", "log in once in the developer portal to finish the setup, then try again"
	case KindDirectGrantDisabled:
		return "the client does not allow the password grant", "ask a realm administrator to enable Direct Access Grants for the client"
	case KindInvalidScope:
		return "a requested scope is not allowed for this client", "check the scopes of the connection"
	case KindGrantNotAllowed:
		return "the client may not use the " + grantOps[op] + " grant", grantHints[op]
	case KindAccessDenied:
		return "the sign-in was denied", "run the command again and approve the request"
	case KindExpired:
		return "the device code expired before it was approved", "run the command again and approve the request within its time"
	case KindCredentialsRefused:
		return "the server refused the username/password or the client credentials", "check both the username and password and the client id and client secret"
	case KindLoginRequired:
		if op == "logout" {
			return "the session had already ended", "nothing to do; log in again with `shipkey login` when needed"
		}
		return "the refresh token has expired or its session ended", "log in again with `shipkey login`"
	}
	return "the request failed", "try again"
}

func tooLarge(op string) *Error {
	return &Error{Kind: KindMalformedResponse, Op: op, Msg: fmt.Sprintf("the answer was larger than %d MiB", MaxBodySize>>20), Hint: "check that the auth URL points at the realm, not another service", Err: errBodyTooLarge}
}

// mapTransportError classifies a failure to get an answer at all: refused
// before sending (KindConfig), body too large, timeout, TLS, network.
func mapTransportError(ctx context.Context, op, endpoint string, err error) *Error {
	h := host(endpoint)
	e := &Error{Op: op, Err: err}
	var (
		netErr     net.Error
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		verifyErr  *tls.CertificateVerificationError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		dnsErr     *net.DNSError
		opErr      *net.OpError
	)
	switch {
	case errors.Is(err, errInsecureURL):
		e.Kind, e.Msg, e.Hint = KindConfig, "refusing to send credentials over plain http to "+h, "use an https:// URL (http:// is allowed only for localhost)"
	case errors.Is(err, errBodyTooLarge):
		return tooLarge(op)
	case errors.Is(err, context.Canceled):
		e.Kind, e.Msg, e.Hint = KindUnknown, "cancelled before "+h+" answered", "run the command again"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout(), ctx.Err() == context.DeadlineExceeded:
		e.Kind, e.Msg, e.Hint = KindTimeout, "no answer from "+h+" in time", timeoutHint
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr), errors.As(err, &verifyErr),
		errors.As(err, &recordErr), errors.As(err, &alertErr):
		e.Kind = KindTLS
		e.Msg = "the TLS check of " + h + " failed: " + text.Safe(tlsCause(err))
		e.Hint = "check the auth URL; for a private CA, pass its PEM bundle as the CA file"
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		e.Kind = KindTLS
		e.Msg = "the TLS check of " + h + " failed: the server does not speak TLS"
		e.Hint = "check the auth URL (http:// or https://)"
	case errors.As(err, &dnsErr):
		e.Kind, e.Msg, e.Hint = KindNetwork, "cannot resolve "+h, "check the auth URL and your DNS or proxy settings"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind, e.Msg, e.Hint = KindNetwork, "cannot reach "+h+": connection refused", "check the auth URL and that the server is running"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		e.Kind, e.Msg, e.Hint = KindNetwork, "the connection to "+h+" closed before an answer came", "try again; check your network or proxy"
	case errors.As(err, &opErr):
		e.Kind, e.Msg, e.Hint = KindNetwork, "cannot reach "+h+": "+text.Safe(opErr.Err.Error()), "check the auth URL and your network or proxy settings"
	default:
		e.Kind, e.Msg, e.Hint = KindNetwork, "the request to "+h+" failed", "check the auth URL and your network or proxy settings"
	}
	return e
}

// tlsCause is a short description of a TLS failure (never holds a secret).
func tlsCause(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "certificate signed by an unknown authority"
	case errors.As(err, &hostErr):
		return "certificate is not valid for this host name"
	case errors.As(err, &invalid):
		return "certificate is not valid (" + invalid.Error() + ")"
	case errors.As(err, &recordErr):
		return "the server does not speak TLS"
	}
	return "handshake failed"
}
