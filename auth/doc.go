// Package auth speaks the Shipping Service's token protocol: the OAuth 2.0
// grants (password, client credentials, device code, authorization code with
// PKCE) and the refresh grant against a Keycloak realm (or any OAuth 2.0
// server that follows RFC 6749), logout and revocation, liveness checks, and
// the decoding and verification of JWT claims.
//
// # Grants
//
// A grant is a value (GrantType) stored with each key. Each lives in one
// file, grant_<name>.go, as a type implementing Grant: Obtain runs it once
// and returns a TokenSet; Unattended says whether it can run with no person
// (then the store's renewal runs it again when the refresh token is gone).
// Interactive grants tell the caller what the person must do through
// Request.Prompt (a Prompt with a user code and verification URIs, or an
// authorization URL) and wait until the person is done or the context is
// cancelled; they never print or open anything themselves.
//
// To add a grant: write grant_<name>.go with its type and a GrantType
// constant; add one row to grantTable in grant.go (the order is the order a
// form offers them); if it fails in its own ways, give its errors an Op and
// add the Op to grantOps and grantHints in refusals.go (and a row to
// statusRefusals for an answer of its own, with its case in
// errors_table_test.go's refusalCases); if it needs a
// setting of its own, add the field to Request and to the key's definition
// (store's keyEntry: its reflection test says which encodings must learn
// it); and add its fields to the app's Get API Key form.
//
// Every request to the server is shipkey's own code: each token request
// (every grant and the refresh), the device authorization and pushed
// authorization requests, revocation, introspection and logout is one form
// POST through Client.send (request.go), the one place where the client's
// authentication is applied (with a DPoP proof on each attempt for a DPoP
// key), and each token response is checked before it becomes a TokenSet
// (response.go). golang.org/x/oauth2
// supplies types and helpers only: oauth2.Token (TokenSet.OAuth2, for the
// store's token source), the PKCE verifier and S256 challenge, and the query
// of the authorization URL. Everything it returns is plain data (TokenSet,
// Claims, Liveness, Verification) or a typed *Error whose message is one line
// a person can act on.
//
// # Client authentication
//
// How the client proves who it is (ClientAuthMethod) is one row of
// clientAuthTable in clientauth.go: the method and what it needs
// (ClientAuthNeeds: the secret, a key, a certificate, or nothing). Every
// check and form asks m.Needs() and never names a method. To add a method:
// its constant and row, and its case in applyClientAuth.
//
// What it must never do: touch files, the keyring or the terminal; follow a
// redirect on a POST that carries credentials; fetch a URL named by an
// untrusted token; or put a password, client secret or token into an error,
// a log line or a panic. Text that came from a server or a token is passed
// through Sanitize before it is returned for display.
package auth
