// Package auth speaks the Shipping Service's token protocol: OAuth 2.0 password
// and refresh grants against a Keycloak realm (or any OAuth 2.0 server that
// follows RFC 6749), logout and revocation, liveness checks, and the decoding
// and verification of JWT claims.
//
// It is built on golang.org/x/oauth2 for the grants. Everything it returns is
// plain data (TokenSet, Claims, Liveness, Verification) or a typed *Error whose
// message is one line a person can act on.
//
// What it must never do: touch files, the keyring or the terminal; follow a
// redirect on a POST that carries credentials; fetch a URL named by an
// untrusted token; or put a password, client secret or token into an error,
// a log line or a panic. Text that came from a server or a token is passed
// through Sanitize before it is returned for display.
package auth
