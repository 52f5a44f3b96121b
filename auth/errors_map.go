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

// timeoutHint names the settings that raise the timeout.
const timeoutHint = "try again; if the server is slow, raise {{timeout}} (or SHIPKEY_TIMEOUT, or timeout in config.toml)"

// caFileHint says how to trust a private CA: its PEM bundle by the
// environment or by the flag.
const caFileHint = "check the auth URL; for a private CA, pass its PEM bundle with SHIPKEY_CA_FILE=PATH or {{ca-file PATH}}"

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
		e.Msg = "the TLS check of " + h + " failed: " + tlsCause(err)
		e.Hint = caFileHint
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
		e.Kind, e.Msg, e.Hint = KindNetwork, "cannot reach "+h+": "+opErr.Err.Error(), "check the auth URL and your network or proxy settings"
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
