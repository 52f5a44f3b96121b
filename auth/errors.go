package auth

import (
	"errors"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
)

// ErrorKind says what went wrong, in terms of what the person must do next.
type ErrorKind int

// The kinds of failure auth reports. Match them with errors.As and (*Error).Kind,
// never with message text.
const (
	KindUnknown             ErrorKind = iota
	KindConfig                        // the connection itself is unusable (bad URL, plain http to a remote host)
	KindInvalidCredentials            // wrong username or password
	KindInvalidClient                 // wrong client id or client secret
	KindAccountDisabled               // the user is disabled
	KindAccountNotSetUp               // required actions pending in the account
	KindDirectGrantDisabled           // the client does not allow the password grant
	KindInvalidScope                  // a requested scope is not allowed
	KindLoginRequired                 // refresh token expired, revoked or its session ended: log in again
	KindServer                        // the server failed or answered with an unexpected status
	KindNetwork                       // the server could not be reached
	KindTimeout                       // no answer in time
	KindTLS                           // the TLS handshake or certificate check failed
	KindMalformedResponse             // the answer was not a token response (bad JSON, missing fields, too big)
	// KindCredentialsRefused: a server that does not say which (no OAuth
	// error code: an empty, plain-text or HTML 401/403) refused the password
	// grant; the username/password or the client credentials are wrong.
	KindCredentialsRefused
	// KindGrantNotAllowed: the client may not use this grant
	// (unauthorized_client or unsupported_grant_type for a grant other than
	// the password grant, which has KindDirectGrantDisabled).
	KindGrantNotAllowed
	// KindInteractionRequired: the grant needs a person (a browser, a device
	// code to enter) and none is there to ask.
	KindInteractionRequired
	// KindAccessDenied: the person denied the request (access_denied at the
	// device or browser page).
	KindAccessDenied
	// KindExpired: the person did not answer in time (expired_token for a
	// device code, or no browser came back before the wait ended).
	KindExpired
	// KindAssertionRefused: the realm refused an assertion shipkey did not
	// sign but read from a file or a command (the jwt-bearer grant's, or
	// the client_assertion method's): expired, an issuer it does not trust,
	// another audience. A fresh assertion or the realm's settings fix it,
	// never a login.
	KindAssertionRefused
)

var kindNames = [...]string{
	KindUnknown:             "unknown",
	KindConfig:              "config",
	KindInvalidCredentials:  "invalid_credentials",
	KindInvalidClient:       "invalid_client",
	KindAccountDisabled:     "account_disabled",
	KindAccountNotSetUp:     "account_not_set_up",
	KindDirectGrantDisabled: "direct_grant_disabled",
	KindInvalidScope:        "invalid_scope",
	KindLoginRequired:       "login_required",
	KindServer:              "server",
	KindNetwork:             "network",
	KindTimeout:             "timeout",
	KindTLS:                 "tls",
	KindMalformedResponse:   "malformed_response",
	KindCredentialsRefused:  "credentials_refused",
	KindGrantNotAllowed:     "grant_not_allowed",
	KindInteractionRequired: "interaction_required",
	KindAccessDenied:        "access_denied",
	KindExpired:             "expired",
	KindAssertionRefused:    "assertion_refused",
}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Error is every failure auth returns. Its message is one line: what happened
// and what to do, cleaned as a whole by Render (so Msg and Hint name a URL or
// a realm as given, and are never printed but through Render or Error). Code and Description are the server's "error" and
// "error_description", verbatim but sanitized of control characters; Excerpt is
// a short sanitized piece of an unexpected body. None of its fields ever holds
// a password, client secret or token. As golang.org/x/oauth2's RetrieveError
// does, a refusal keeps what the server said (Status, Code, Description)
// beside shipkey's own line (Kind, Msg, Hint: refusals.go's tables), so a
// caller may decide by the server's code (errors.As) rather than by words.
type Error struct {
	Kind        ErrorKind
	Op          string // "login", "refresh", "logout", "revoke", "discovery", "introspect", "userinfo", "jwks"
	Status      int    // HTTP status, 0 when no answer came
	Code        string // server's "error", sanitized
	Description string // server's "error_description", sanitized
	Excerpt     string // start of an unexpected body, sanitized
	Msg         string // what happened, in words (may name untrusted text: Render cleans the line)
	Hint        string // what to do (as Msg)
	Err         error  // the cause (transport errors; never holds a secret)
	// final: the server's answer is one that sending the same request
	// again cannot change (IsFinalRefusal).
	final bool
	// about is the external assertion the error is about (AssertionFault).
	about assertionRole
}

// assertionRole names which external assertion an error is about.
type assertionRole int8

const (
	notAssertion    assertionRole = iota
	grantAssertion                // the jwt-bearer grant's
	clientAssertion               // the client_assertion method's
)

// AssertionFault reports whether err is about an external assertion (its
// file or command failed, or the realm refused it), and whether it is the
// client's (client_assertion) rather than the jwt-bearer grant's: the
// setting to change.
func AssertionFault(err error) (about, client bool) {
	var e *Error
	if !errors.As(err, &e) || e.about == notAssertion {
		return false, false
	}
	return true, e.about == clientAssertion
}

func (e *Error) Error() string { return e.Render(FlagName) }

// Render is the error's line with each setting its hint names written by
// name. A hint names a setting as {{flag}}, {{flag value}} or
// {{flag=value}}, by the command line's flag; Error writes it as that flag
// (FlagName), the app as its form field.
func (e *Error) Render(name func(flag, value string) string) string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if said := e.said(); !said.IsEmpty() {
		b.WriteString(" (server said: " + said.String() + ")")
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(renderSettings(e.Hint, name))
	}
	return text.Safe(b.String())
}

// FlagName writes a setting a hint names as the command line's flag:
// --flag, --flag value, --flag=value.
func FlagName(flag, value string) string {
	switch {
	case value == "":
		return "--" + flag
	case strings.HasPrefix(value, "="):
		return "--" + flag + value
	}
	return "--" + flag + " " + value
}

// RenderError is err's line with the settings the hint of its *Error names
// written by name (the app's form fields); err's own line when it holds
// no *Error.
func RenderError(err error, name func(flag, value string) string) string {
	var e *Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	return strings.Replace(err.Error(), e.Error(), e.Render(name), 1)
}

// renderSettings writes each {{flag value}} of hint by name; text that is
// not such a setting stays as it is.
func renderSettings(hint string, name func(flag, value string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(hint, "{{")
		j := strings.Index(hint[max(i, 0):], "}}")
		if i < 0 || j < 0 {
			b.WriteString(hint)
			return b.String()
		}
		inner := hint[i+2 : i+j]
		flag, value := inner, ""
		if k := strings.IndexAny(inner, " ="); k >= 0 {
			flag, value = inner[:k], strings.TrimPrefix(inner[k:], " ")
		}
		b.WriteString(hint[:i])
		b.WriteString(name(flag, value))
		hint = hint[i+j+2:]
	}
}

func (e *Error) Unwrap() error { return e.Err }

// said is the server's own words in e (its error code and description, else
// an excerpt of its answer), sanitized; empty when it said nothing.
func (e *Error) said() text.Clean {
	words := e.Code
	if e.Description != "" {
		if words != "" {
			words += ": "
		}
		words += e.Description
	}
	if words == "" {
		words = e.Excerpt
	}
	return text.Sanitize(words)
}

// Said is what the server said (its error code and description, else an
// excerpt of its answer), clean to print; empty when it said nothing. Code
// stays raw beside it, for decisions.
func (e *Error) Said() text.Clean { return e.said() }

// KindOf returns the kind of err's *Error, or KindUnknown.
func KindOf(err error) ErrorKind {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Kind
	}
	return KindUnknown
}

// IsLoginRequired reports whether only a new login (password grant) can help.
func IsLoginRequired(err error) bool { return KindOf(err) == KindLoginRequired }

// IsFinalRefusal reports whether err is a refusal that retrying cannot
// change: a revocation endpoint that will not revoke the key's token (not
// issued for this client, a request it will not take) though the client's
// authentication is not what it refused. A caller that was ending a session
// ends it locally and says the server's session may stay live.
func IsFinalRefusal(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.final
}

func configError(msg, hint string) *Error {
	return &Error{Kind: KindConfig, Msg: msg, Hint: hint}
}
