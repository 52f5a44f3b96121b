package auth

import (
	"crypto/tls"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// saidCase is what a server answered to an operation (the Op of the error).
type saidCase struct {
	op     string
	status int
	code   string
	desc   string
}

// hardenedAttempt is what a request of a key tried that a hardened realm's
// switches look at: its client authentication (and whether it holds a
// client key and certificate), DPoP, PAR and a scope, and whether the realm
// takes DPoP proofs.
type hardenedAttempt struct {
	method      ClientAuthMethod
	secret      bool
	dpop        bool
	key         bool
	cert        bool
	noPAR       bool
	scoped      bool
	dpopCapable bool
	// realmMethods is the realm's token_endpoint_auth_methods_supported.
	realmMethods []string
}

// refusalCase is one answer of a server and the line shipkey makes of it.
// hardened: the answer came to a request of the token, device or PAR
// endpoint (the switches of a hardened realm are named); callback: the
// browser brought it back to the authorization code grant.
type refusalCase struct {
	name      string
	said      saidCase
	hardened  *hardenedAttempt
	callback  bool
	kind      ErrorKind
	msg, hint string
	final     bool // IsFinalRefusal
}

// refusalCases pins the message, hint and kind of every server answer
// shipkey tells apart. A new server dialect is a row of the refusal tables
// and a row here.
var refusalCases = []refusalCase{
	{name: "scope missing (Keycloak)", said: saidCase{"authcode", 400, "invalid_request", "The scope of your request is missing"},
		kind: KindInvalidScope, msg: "the server requires a scope and none was requested",
		hint: "request a scope, for example openid ({{scope openid}})"},
	{name: "scope required", said: saidCase{"login", 400, "invalid_scope", "scope is required"},
		kind: KindInvalidScope, msg: "the server requires a scope and none was requested",
		hint: "request a scope, for example openid ({{scope openid}})"},
	{name: "redirect", said: saidCase{"login", 302, "", ""},
		kind: KindServer, msg: "the server redirected (status 302)",
		hint: "check the auth URL (redirects are never followed when credentials are sent)"},
	{name: "server failed", said: saidCase{"refresh", 503, "", ""},
		kind: KindServer, msg: "the server failed (status 503)",
		hint: "try again later; if it persists, tell the realm's administrators"},
	{name: "server failed with a code", said: saidCase{"login", 500, "invalid_grant", "boom"},
		kind: KindServer, msg: "the server failed (status 500)",
		hint: "try again later; if it persists, tell the realm's administrators"},
	{name: "login refused without a code", said: saidCase{"login", 401, "", ""},
		kind: KindCredentialsRefused, msg: "the server refused the username/password or the client credentials",
		hint: "check the username, password, client id and secret; the server may require a scope ({{scope openid}}) or the client secret by HTTP Basic ({{basic-auth}})"},
	{name: "login refused with an unknown code", said: saidCase{"login", 403, "access_denied", "nope"},
		kind: KindCredentialsRefused, msg: "the server refused the username/password or the client credentials",
		hint: "check the username, password, client id and secret; the server may require a scope ({{scope openid}}) or the client secret by HTTP Basic ({{basic-auth}})"},
	{name: "login 400 without a code", said: saidCase{"login", 400, "", ""},
		kind: KindServer, msg: "the server refused the login (status 400) without saying why",
		hint: "the server may require a scope ({{scope openid}}) or the client secret by HTTP Basic ({{basic-auth}})"},
	{name: "client credentials refused without a code", said: saidCase{"client-credentials", 401, "", ""},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm; the server may require a scope ({{scope}})"},
	{name: "device code refused without a code", said: saidCase{"device-code", 403, "", ""},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "authcode refused with an unknown code", said: saidCase{"authcode", 401, "server_error", ""},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "exchange not offered", said: saidCase{"token-exchange", 400, "unsupported_grant_type", ""},
		kind: KindGrantNotAllowed, msg: "this server does not offer token exchange",
		hint: "ask the realm's administrators how to get a token for that audience (Keycloak offers token exchange from 26.2)"},
	{name: "exchange target refused", said: saidCase{"token-exchange", 400, "invalid_target", "no"},
		kind: KindServer, msg: "the server refused the token exchange",
		hint: "check --audience/--resource (the other service's client id at the realm) and that the client may exchange tokens for it"},
	{name: "exchange request refused", said: saidCase{"token-exchange", 400, "invalid_request", "bad subject"},
		kind: KindServer, msg: "the server refused the token exchange",
		hint: "check --audience/--resource (the other service's client id at the realm) and that the client may exchange tokens for it"},
	{name: "exchange denied", said: saidCase{"token-exchange", 403, "access_denied", ""},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "exchange not allowed", said: saidCase{"token-exchange", 400, "unauthorized_client", "Client not allowed to exchange"},
		kind: KindGrantNotAllowed, msg: "the client may not use the token exchange grant",
		hint: "ask a realm administrator to turn on token exchange for the client (Keycloak 26.2 and later: Clients → the client → Capability config → Standard Token Exchange)"},
	{name: "exchange invalid grant", said: saidCase{"token-exchange", 400, "invalid_grant", "subject token invalid"},
		kind: KindServer, msg: "the server refused the token exchange grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm"},
	{name: "client credentials wrong secret (Keycloak)", said: saidCase{"client-credentials", 401, "unauthorized_client", "Invalid client or Invalid client credentials"},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "client credentials not allowed", said: saidCase{"client-credentials", 400, "unauthorized_client", "Client not enabled to retrieve service account"},
		kind: KindGrantNotAllowed, msg: "the client may not use the client credentials grant",
		hint: "ask a realm administrator to turn on the client's service account (Keycloak: Clients → the client → Capability config → Service accounts roles)"},
	{name: "device code grant type unsupported", said: saidCase{"device-code", 400, "unsupported_grant_type", ""},
		kind: KindGrantNotAllowed, msg: "the client may not use the device code grant",
		hint: "ask a realm administrator to turn on the device grant for the client (Keycloak: Clients → the client → Capability config → OAuth 2.0 Device Authorization Grant)"},
	{name: "authcode not allowed", said: saidCase{"authcode", 400, "unauthorized_client", ""},
		kind: KindGrantNotAllowed, msg: "the client may not use the authorization code grant",
		hint: "ask a realm administrator to turn on browser sign-in for the client (Keycloak: Clients → the client → Capability config → Standard flow)"},
	{name: "device code denied", said: saidCase{"device-code", 400, "access_denied", ""},
		kind: KindAccessDenied, msg: "the sign-in was denied",
		hint: "run the command again and approve the request"},
	{name: "device code expired", said: saidCase{"device-code", 400, "expired_token", ""},
		kind: KindExpired, msg: "the device code expired before it was approved",
		hint: "run the command again and approve the request within its time"},
	{name: "authcode invalid grant", said: saidCase{"authcode", 400, "invalid_grant", "Code not valid"},
		kind: KindServer, msg: "the server refused the authorization code grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm"},
	{name: "client credentials invalid grant", said: saidCase{"client-credentials", 400, "invalid_grant", ""},
		kind: KindServer, msg: "the server refused the client credentials grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm"},
	{name: "refresh 400 without a code", said: saidCase{"refresh", 400, "", ""},
		kind: KindLoginRequired, msg: "the refresh token has expired or its session ended",
		hint: "log in again with `shipkey login`"},
	{name: "refresh 401 without a code", said: saidCase{"refresh", 401, "", ""},
		kind: KindLoginRequired, msg: "the refresh token has expired or its session ended",
		hint: "log in again with `shipkey login`"},
	{name: "refresh 403 without a code", said: saidCase{"refresh", 403, "", ""},
		kind: KindServer, msg: "the server refused the request (status 403)",
		hint: "check the connection settings; if they are right, try again later"},
	{name: "account disabled", said: saidCase{"login", 400, "invalid_grant", "Account disabled"},
		kind: KindAccountDisabled, msg: "the user account is disabled",
		hint: "ask a realm administrator to enable it"},
	{name: "account not set up", said: saidCase{"login", 400, "invalid_grant", "Account is not fully set up"},
		kind: KindAccountNotSetUp, msg: "the user account is not fully set up (required actions pending)",
		hint: "log in once in the developer portal to finish the setup, then try again"},
	{name: "wrong password", said: saidCase{"login", 401, "invalid_grant", "Invalid user credentials"},
		kind: KindInvalidCredentials, msg: "wrong username or password",
		hint: "check them and try again"},
	{name: "refresh token dead", said: saidCase{"refresh", 400, "invalid_grant", "Token is not active"},
		kind: KindLoginRequired, msg: "the refresh token has expired or its session ended",
		hint: "log in again with `shipkey login`"},
	{name: "logout session gone", said: saidCase{"logout", 400, "invalid_grant", "Session not active"},
		kind: KindLoginRequired, msg: "the session had already ended",
		hint: "nothing to do; log in again with `shipkey login` when needed"},
	{name: "invalid client at refresh", said: saidCase{"refresh", 401, "invalid_client", "Invalid client credentials"},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "invalid client at login", said: saidCase{"login", 401, "invalid_client", "Invalid client or Invalid client credentials"},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "direct grant disabled (Keycloak)", said: saidCase{"login", 400, "unauthorized_client", "Client not allowed for direct access grants"},
		kind: KindDirectGrantDisabled, msg: "the client does not allow the password grant",
		hint: "ask a realm administrator to enable Direct Access Grants for the client"},
	{name: "direct grant disabled at refresh", said: saidCase{"refresh", 400, "unauthorized_client", "client not allowed for DIRECT ACCESS GRANTS"},
		kind: KindDirectGrantDisabled, msg: "the client does not allow the password grant",
		hint: "ask a realm administrator to enable Direct Access Grants for the client"},
	{name: "login 400 unauthorized client", said: saidCase{"login", 400, "unauthorized_client", ""},
		kind: KindDirectGrantDisabled, msg: "the client does not allow the password grant",
		hint: "ask a realm administrator to enable Direct Access Grants for the client"},
	{name: "login 401 unauthorized client", said: saidCase{"login", 401, "unauthorized_client", "Invalid client"},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "refresh unauthorized client", said: saidCase{"refresh", 400, "unauthorized_client", ""},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "password grant not offered", said: saidCase{"login", 400, "unsupported_grant_type", ""},
		kind: KindDirectGrantDisabled, msg: "the server does not offer the password grant",
		hint: "sign in with another grant: {{grant device-code}}, or {{grant authcode}} with a browser"},
	{name: "refresh grant type unsupported", said: saidCase{"refresh", 400, "unsupported_grant_type", ""},
		kind: KindServer, msg: "the server refused the request (status 400)",
		hint: "check the connection settings; if they are right, try again later"},
	{name: "invalid scope", said: saidCase{"login", 400, "invalid_scope", "Invalid scopes: write"},
		kind: KindInvalidScope, msg: "a requested scope is not allowed for this client",
		hint: "check the scopes of the connection"},
	{name: "invalid scope of a grant", said: saidCase{"client-credentials", 400, "invalid_scope", "Invalid scopes: write"},
		kind: KindInvalidScope, msg: "a requested scope is not allowed for this client",
		hint: "check the scopes of the connection"},
	{name: "logout invalid token", said: saidCase{"logout", 401, "invalid_token", "Token is not active"},
		kind: KindLoginRequired, msg: "the session had already ended",
		hint: "nothing to do; log in again with `shipkey login` when needed"},
	{name: "refresh invalid token", said: saidCase{"refresh", 401, "invalid_token", ""},
		kind: KindServer, msg: "the server refused the request (status 401)",
		hint: "check the connection settings; if they are right, try again later"},
	{name: "revoke unsupported token type", said: saidCase{"revoke", 400, "unsupported_token_type", ""},
		kind: KindServer, msg: "the server refused the request (status 400)",
		hint: "check the connection settings; if they are right, try again later"},
	{name: "revocation of a token not issued for this client", said: saidCase{"revoke", 400, "unauthorized_client", "token was not issued for this client"},
		kind: KindServer, msg: "the server refused to revoke the key's token", final: true,
		hint: "sending it again will not change that answer; the session stays live at the server until its tokens expire, unless the realm's administrators end it"},
	{name: "revocation of a request the server will not take", said: saidCase{"revoke", 400, "invalid_request", "invalid token"},
		kind: KindServer, msg: "the server refused to revoke the key's token", final: true,
		hint: "sending it again will not change that answer; the session stays live at the server until its tokens expire, unless the realm's administrators end it"},
	{name: "revocation of an invalid token", said: saidCase{"revoke", 401, "invalid_token", ""},
		kind: KindServer, msg: "the server refused to revoke the key's token", final: true,
		hint: "sending it again will not change that answer; the session stays live at the server until its tokens expire, unless the realm's administrators end it"},
	{name: "revocation with a wrong secret (Keycloak)", said: saidCase{"revoke", 401, "unauthorized_client", "Invalid client or Invalid client credentials"},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "introspect invalid request", said: saidCase{"introspect", 400, "invalid_request", "Missing (token)"},
		kind: KindServer, msg: "the server refused the request (status 400)",
		hint: "check the connection settings; if they are right, try again later"},
	{name: "not found", said: saidCase{"refresh", 404, "", ""},
		kind: KindServer, msg: "the server refused the request (status 404)",
		hint: "check the connection settings; if they are right, try again later"},
	{name: "invalid request at login", said: saidCase{"login", 400, "invalid_request", "Missing form parameter: grant_type"},
		kind: KindServer, msg: "the server refused the request (status 400)",
		hint: "check the connection settings; if they are right, try again later"},
	// The jwt-bearer grant's assertion refused (Keycloak's
	// JWTAuthorizationGrantType and its validator's words).
	{name: "jwt-bearer audience", said: saidCase{"jwt-bearer", 400, "invalid_grant", "Invalid token audience"},
		kind: KindAssertionRefused, msg: "the realm refused the audience (aud) of the assertion from <assertion source>", hint: audienceHint},
	{name: "jwt-bearer expired", said: saidCase{"jwt-bearer", 400, "invalid_grant", "Token is not active"},
		kind: KindAssertionRefused, msg: "the assertion from <assertion source> has expired (or is not valid yet)", hint: freshAssertionHint},
	{name: "jwt-bearer untrusted issuer", said: saidCase{"jwt-bearer", 400, "invalid_grant", "No Identity Provider for provided issuer"},
		kind: KindAssertionRefused, msg: "the realm does not trust the issuer of the assertion from <assertion source>", hint: untrustedIssuerHint},
	{name: "jwt-bearer issuer not for the client", said: saidCase{"jwt-bearer", 400, "invalid_grant", "Identity Provider is not allowed for the client"},
		kind: KindAssertionRefused, msg: "the realm trusts the issuer of the assertion from <assertion source>, but not for this client",
		hint: "ask a realm administrator to allow that identity provider for the client's JWT authorization grant (Keycloak: Clients → the client → Advanced → JWT Authorization Grant → Allowed identity providers)"},
	{name: "jwt-bearer reuse", said: saidCase{"jwt-bearer", 400, "invalid_grant", "Token reuse detected"},
		kind: KindAssertionRefused, msg: "the realm had seen the assertion from <assertion source> before (each may be used once)",
		hint: "have it give a new assertion for every request (a command run again, a file rewritten)"},
	{name: "jwt-bearer no user", said: saidCase{"jwt-bearer", 400, "invalid_grant", "User not found"},
		kind: KindAssertionRefused, msg: "the realm knows no user for the subject (sub) of the assertion from <assertion source>",
		hint: "ask a realm administrator to link that subject to a user (Keycloak: Users → the user → Identity provider links)"},
	{name: "jwt-bearer other", said: saidCase{"jwt-bearer", 400, "invalid_grant", "Invalid signature algorithm"},
		kind: KindAssertionRefused, msg: "the realm refused the assertion from <assertion source>", hint: assertionCheckHint},
	// An external client assertion refused (Keycloak's federated client
	// authentication; oidc-provider says only that it failed).
	{name: "client assertion audience", said: saidCase{"client-credentials", 400, "invalid_client", "Client authentication with signed JWT failed: Invalid token audience"},
		hardened: &hardenedAttempt{method: ClientAssertion, realmMethods: []string{"private_key_jwt"}},
		kind:     KindAssertionRefused, msg: "the realm refused the audience (aud) of the client assertion from <client assertion source>", hint: audienceHint},
	{name: "client assertion expired", said: saidCase{"client-credentials", 400, "invalid_client", "Client authentication with signed JWT failed: Token is not active"},
		hardened: &hardenedAttempt{method: ClientAssertion, realmMethods: []string{"private_key_jwt"}},
		kind:     KindAssertionRefused, msg: "the client assertion from <client assertion source> has expired (or is not valid yet)", hint: freshAssertionHint},
	{name: "client assertion untrusted issuer", said: saidCase{"jwt-bearer", 400, "invalid_client", "Client authentication with signed JWT failed: No Identity Provider for provided issuer"},
		hardened: &hardenedAttempt{method: ClientAssertion},
		kind:     KindAssertionRefused, msg: "the realm does not trust the issuer of the client assertion from <client assertion source>", hint: untrustedIssuerHint},
	{name: "client assertion refused (oidc-provider)", said: saidCase{"client-credentials", 401, "invalid_client", "client authentication failed"},
		hardened: &hardenedAttempt{method: ClientAssertion, realmMethods: []string{"private_key_jwt", "client_secret_post"}},
		kind:     KindAssertionRefused, msg: "the realm refused the client assertion from <client assertion source>",
		hint: assertionCheckHint + "; the client's authenticator must accept it (Keycloak: Credentials → Client Authenticator \"Signed JWT - Federated\", with the identity provider and the assertion's subject)"},
	{name: "DPoP proof missing", said: saidCase{"client-credentials", 400, "invalid_request", "DPoP proof is missing"}, hardened: &hardenedAttempt{},
		kind: KindConfig, msg: "the realm requires DPoP-bound tokens for this client (Keycloak: Require DPoP bound tokens)",
		hint: "create the key again with {{dpop}}"},
	{name: "DPoP required", said: saidCase{"authcode", 400, "invalid_request", "DPoP bound tokens are required for this client"}, hardened: &hardenedAttempt{},
		kind: KindConfig, msg: "the realm requires DPoP-bound tokens for this client (Keycloak: Require DPoP bound tokens)",
		hint: "create the key again with {{dpop}}"},
	{name: "DPoP proof missing with a DPoP key", said: saidCase{"client-credentials", 400, "invalid_dpop_proof", "DPoP proof is missing"}, hardened: &hardenedAttempt{dpop: true},
		kind: KindConfig, msg: "the realm refused the key's DPoP proof",
		hint: "check this machine's clock; if it persists, create the key again with {{dpop}}"},
	{name: "generic invalid_grant of a DPoP realm", said: saidCase{"authcode", 400, "invalid_grant", ""}, hardened: &hardenedAttempt{dpopCapable: true},
		kind: KindServer, msg: "the server refused the authorization code grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm; if the client requires DPoP-bound tokens (the realm takes DPoP proofs), create the key again with {{dpop}}"},
	{name: "generic invalid_grant wording of a DPoP realm", said: saidCase{"device-code", 400, "invalid_grant", "grant request is invalid"}, hardened: &hardenedAttempt{dpopCapable: true},
		kind: KindServer, msg: "the server refused the device code grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm; if the client requires DPoP-bound tokens (the realm takes DPoP proofs), create the key again with {{dpop}}"},
	{name: "invalid_grant of a DPoP realm with a DPoP key", said: saidCase{"authcode", 400, "invalid_grant", ""}, hardened: &hardenedAttempt{dpopCapable: true, dpop: true},
		kind: KindServer, msg: "the server refused the authorization code grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm"},
	{name: "other invalid_grant of a DPoP realm", said: saidCase{"authcode", 400, "invalid_grant", "Code not valid"}, hardened: &hardenedAttempt{dpopCapable: true, scoped: true},
		kind: KindServer, msg: "the server refused the authorization code grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm"},
	{name: "DPoP proof refused", said: saidCase{"client-credentials", 400, "invalid_dpop_proof", "invalid proof"}, hardened: &hardenedAttempt{dpop: true},
		kind: KindConfig, msg: "the realm refused the key's DPoP proof",
		hint: "check this machine's clock; if it persists, create the key again with {{dpop}}"},
	{name: "DPoP nonce", said: saidCase{"client-credentials", 400, "use_dpop_nonce", ""}, hardened: &hardenedAttempt{dpop: true},
		kind: KindConfig, msg: "the realm refused the key's DPoP proof",
		hint: "check this machine's clock; if it persists, create the key again with {{dpop}}"},
	{name: "DPoP words refused", said: saidCase{"login", 401, "invalid_client", "bad DPoP proof signature"}, hardened: &hardenedAttempt{dpop: true},
		kind: KindConfig, msg: "the realm refused the key's DPoP proof",
		hint: "check this machine's clock; if it persists, create the key again with {{dpop}}"},
	{name: "PAR required with PAR off", said: saidCase{"authcode", 400, "invalid_request", "Pushed Authorization Request is only allowed"}, hardened: &hardenedAttempt{noPAR: true},
		kind: KindConfig, msg: "the realm requires pushed authorization requests (PAR) for this client",
		hint: "create the key again without {{par=false}}"},
	{name: "PAR required without an endpoint", said: saidCase{"authcode", 400, "invalid_request", "Pushed Authorization Request is only allowed"}, hardened: &hardenedAttempt{},
		kind: KindConfig, msg: "the realm requires pushed authorization requests (PAR) and announces no PAR endpoint",
		hint: "set the connection's issuer so discovery finds the realm's PAR endpoint"},
	{name: "signed JWT with the secret", said: saidCase{"client-credentials", 401, "unauthorized_client", "Client authentication with signed JWT failed"}, hardened: &hardenedAttempt{method: ClientSecretJWT},
		kind: KindInvalidClient, msg: "the realm refused the client assertion signed with the client secret (client_secret_jwt)",
		hint: "check the client secret and that the client's authenticator is \"Signed JWT with Client Secret\""},
	{name: "invalid client of client_secret_jwt", said: saidCase{"client-credentials", 401, "invalid_client", ""}, hardened: &hardenedAttempt{method: ClientSecretJWT},
		kind: KindInvalidClient, msg: "the realm refused the client assertion signed with the client secret (client_secret_jwt)",
		hint: "check the client secret and that the client's authenticator is \"Signed JWT with Client Secret\""},
	{name: "client_assertion wanted, no key", said: saidCase{"login", 401, "invalid_client", "client_assertion missing"}, hardened: &hardenedAttempt{},
		kind: KindInvalidClient, msg: "the realm wants a signed client assertion (Keycloak: Client Authenticator \"Signed JWT\")",
		hint: "create the key again with {{client-key FILE}} or {{generate-client-key}}"},
	{name: "signed JWT wanted, no key", said: saidCase{"client-credentials", 400, "unauthorized_client", "Client authentication with signed JWT failed: expected signed JWT"}, hardened: &hardenedAttempt{method: ClientSecretPost},
		kind: KindInvalidClient, msg: "the realm wants a signed client assertion (Keycloak: Client Authenticator \"Signed JWT\")",
		hint: "create the key again with {{client-key FILE}} or {{generate-client-key}}"},
	{name: "private_key_jwt without a key", said: saidCase{"client-credentials", 401, "invalid_client", ""}, hardened: &hardenedAttempt{method: PrivateKeyJWT},
		kind: KindInvalidClient, msg: "the realm wants a signed client assertion (Keycloak: Client Authenticator \"Signed JWT\")",
		hint: "create the key again with {{client-key FILE}} or {{generate-client-key}}"},
	{name: "private_key_jwt refused", said: saidCase{"client-credentials", 401, "invalid_client", ""}, hardened: &hardenedAttempt{method: PrivateKeyJWT, key: true},
		kind: KindInvalidClient, msg: "the realm refused the key's client assertion (private_key_jwt)",
		hint: "register the key's public JWKS with the client (Credentials → Signed JWT → Keys), or pass the key it knows with {{client-key}} and {{client-key-id}}"},
	{name: "signed JWT refused with a key", said: saidCase{"par", 401, "invalid_client", "Client authentication with signed JWT failed"}, hardened: &hardenedAttempt{method: PrivateKeyJWT, key: true},
		kind: KindInvalidClient, msg: "the realm refused the key's client assertion (private_key_jwt)",
		hint: "register the key's public JWKS with the client (Credentials → Signed JWT → Keys), or pass the key it knows with {{client-key}} and {{client-key-id}}"},
	{name: "self-signed certificate refused", said: saidCase{"client-credentials", 401, "invalid_client", ""}, hardened: &hardenedAttempt{method: SelfSignedTLSClientAuth, key: true, cert: true},
		kind: KindInvalidClient, msg: "the realm refused the client certificate (self_signed_tls_client_auth)",
		hint: "pass the self-signed certificate and key whose public key the client registered ({{client-cert}}, {{client-key}})"},
	{name: "certificate refused", said: saidCase{"client-credentials", 401, "unauthorized_client", "x"}, hardened: &hardenedAttempt{method: TLSClientAuth, key: true, cert: true},
		kind: KindInvalidClient, msg: "the realm refused the client certificate (tls_client_auth)",
		hint: "pass the certificate and key the client is registered with ({{client-cert}}, {{client-key}}); Keycloak: Client Authenticator \"X509 Certificate\", Subject DN"},
	{name: "certificate refused, method not chosen", said: saidCase{"refresh", 401, "invalid_client", ""}, hardened: &hardenedAttempt{cert: true},
		kind: KindInvalidClient, msg: "the realm refused the client certificate (tls_client_auth)",
		hint: "pass the certificate and key the client is registered with ({{client-cert}}, {{client-key}}); Keycloak: Client Authenticator \"X509 Certificate\", Subject DN"},
	{name: "certificate wanted", said: saidCase{"client-credentials", 401, "invalid_client", "Client Certificate missing"}, hardened: &hardenedAttempt{method: ClientSecretPost},
		kind: KindInvalidClient, msg: "the realm wants a client certificate (tls_client_auth)",
		hint: "create the key again with {{client-cert FILE}} {{client-key FILE}}"},
	{name: "certificate wanted, lower case", said: saidCase{"login", 400, "invalid_request", "no client certificate"}, hardened: &hardenedAttempt{},
		kind: KindInvalidClient, msg: "the realm wants a client certificate (tls_client_auth)",
		hint: "create the key again with {{client-cert FILE}} {{client-key FILE}}"},
	{name: "other refusal with a scope: login", said: saidCase{"login", 401, "", ""}, hardened: &hardenedAttempt{scoped: true},
		kind: KindCredentialsRefused, msg: "the server refused the username/password or the client credentials",
		hint: "check the username, password, client id and secret; the server may require the client secret by HTTP Basic ({{basic-auth}})"},
	{name: "other refusal with a scope: client credentials", said: saidCase{"client-credentials", 401, "", ""}, hardened: &hardenedAttempt{scoped: true},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "other refusal without a scope", said: saidCase{"client-credentials", 401, "", ""}, hardened: &hardenedAttempt{},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm; the server may require a scope ({{scope}})"},
	{name: "invalid client, method not chosen", said: saidCase{"login", 401, "invalid_client", "Invalid client credentials"}, hardened: &hardenedAttempt{scoped: true},
		kind: KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "client credentials invalid grant at a DPoP realm (oidc-provider)", said: saidCase{"client-credentials", 400, "invalid_grant", "grant request is invalid"}, hardened: &hardenedAttempt{secret: true, dpopCapable: true},
		kind: KindConfig, msg: "the realm refused the client credentials grant of a key without DPoP, and it takes DPoP proofs: the client likely requires DPoP-bound tokens",
		hint: "create the key again with {{dpop}}"},
	{name: "secret at a realm that does not list it", said: saidCase{"client-credentials", 401, "invalid_client", "client authentication failed"},
		hardened: &hardenedAttempt{secret: true, realmMethods: []string{"private_key_jwt", "tls_client_auth", "none"}},
		kind:     KindInvalidClient, msg: "the realm does not take client authentication client_secret_post or client_secret_basic (the realm takes private_key_jwt or tls_client_auth)",
		hint: "create the key again with the method the client is registered with: {{client-auth METHOD}}"},
	{name: "chosen method the realm does not list, no code", said: saidCase{"login", 400, "", ""},
		hardened: &hardenedAttempt{method: ClientSecretJWT, secret: true, realmMethods: []string{"client_secret_basic", "client_secret_post"}},
		kind:     KindInvalidClient, msg: "the realm does not take client authentication client_secret_jwt (the realm takes client_secret_post or client_secret_basic)",
		hint: "create the key again with the method the client is registered with: {{client-auth METHOD}}"},
	{name: "method refused in words (oidc-provider)", said: saidCase{"client-credentials", 401, "invalid_client", "the provided authentication mechanism does not match the registered client authentication method"},
		hardened: &hardenedAttempt{method: ClientSecretBasic, secret: true, realmMethods: []string{"client_secret_basic", "client_secret_jwt", "private_key_jwt"}},
		kind:     KindInvalidClient, msg: "the realm refused client authentication client_secret_basic for this client (the realm takes client_secret_basic, client_secret_jwt or private_key_jwt)",
		hint: "create the key again with the method the client is registered with: {{client-auth METHOD}}"},
	{name: "method refused in words, realm silent", said: saidCase{"refresh", 400, "unauthorized_client", "Invalid token_endpoint_auth_method for this client"},
		hardened: &hardenedAttempt{method: PrivateKeyJWT, key: true},
		kind:     KindInvalidClient, msg: "the realm refused client authentication private_key_jwt for this client",
		hint: "create the key again with the method the client is registered with: {{client-auth METHOD}}"},
	{name: "secret sent to a signed-JWT client (Keycloak)", said: saidCase{"client-credentials", 400, "invalid_client", "Parameter client_assertion_type is missing"},
		hardened: &hardenedAttempt{secret: true, realmMethods: []string{"private_key_jwt", "client_secret_basic", "client_secret_post", "tls_client_auth", "client_secret_jwt"}},
		kind:     KindInvalidClient, msg: "the realm wants a signed client assertion, and the key sent its client secret (client_secret_post or client_secret_basic)",
		hint: "for a client whose authenticator is \"Signed JWT with Client Secret\", create the key again with {{client-auth client_secret_jwt}}; for \"Signed JWT\", with {{client-auth private_key_jwt}} and {{client-key FILE}} or {{generate-client-key}}"},
	{name: "secret refused without a reason at a realm of several methods", said: saidCase{"client-credentials", 401, "invalid_client", "client authentication failed"},
		hardened: &hardenedAttempt{method: ClientSecretPost, secret: true, realmMethods: []string{"client_secret_post", "private_key_jwt"}},
		kind:     KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm; if the client is registered with a method other than client_secret_post (the realm takes client_secret_post or private_key_jwt), create the key again with {{client-auth METHOD}}"},
	{name: "secret refused at a realm of the secret only", said: saidCase{"client-credentials", 401, "invalid_client", "client authentication failed"},
		hardened: &hardenedAttempt{secret: true, realmMethods: []string{"client_secret_post", "client_secret_basic"}},
		kind:     KindInvalidClient, msg: "the client id or client secret was refused",
		hint: "check the client id and the client secret registered in the realm"},
	{name: "secret sent to a certificate client (Keycloak)", said: saidCase{"client-credentials", 401, "invalid_client", "Client certificate missing"}, hardened: &hardenedAttempt{secret: true},
		kind: KindInvalidClient, msg: "the realm wants a client certificate (tls_client_auth), and the key sent its client secret (client_secret_post or client_secret_basic)",
		hint: "create the key again with {{client-auth tls_client_auth}} {{client-cert FILE}} {{client-key FILE}}"},
	{name: "callback denied", said: saidCase{"authcode", 400, "access_denied", "User denied"}, callback: true,
		kind: KindAccessDenied, msg: "the sign-in was denied",
		hint: "run the command again and approve the request"},
	{name: "callback invalid grant", said: saidCase{"authcode", 400, "invalid_grant", ""}, callback: true,
		kind: KindServer, msg: "the server refused the authorization code grant",
		hint: "run the command again; if it repeats, check the client's settings in the realm"},
	{name: "callback scope missing", said: saidCase{"authcode", 400, "invalid_request", "The scope of your request is missing"}, callback: true,
		kind: KindInvalidScope, msg: "the server requires a scope and none was requested",
		hint: "request a scope, for example openid ({{scope openid}})"},
	{name: "callback other refusal", said: saidCase{"authcode", 400, "invalid_request", "Invalid redirect uri"}, callback: true,
		kind: KindServer, msg: "the server refused the sign-in",
		hint: "check the client's settings in the realm (redirect URIs, scopes)"},
	{name: "callback server error", said: saidCase{"authcode", 400, "server_error", ""}, callback: true,
		kind: KindServer, msg: "the server refused the sign-in",
		hint: "check the client's settings in the realm (redirect URIs, scopes)"},
	{name: "callback unauthorized client", said: saidCase{"authcode", 400, "unauthorized_client", "Client is not allowed to initiate browser login"}, callback: true,
		kind: KindGrantNotAllowed, msg: "the client may not use the authorization code grant",
		hint: "ask a realm administrator to turn on browser sign-in for the client (Keycloak: Clients → the client → Capability config → Standard flow)"},
}

// refusalOf is the *Error shipkey makes of c's answer.
func refusalOf(t *testing.T, c refusalCase) *Error {
	t.Helper()
	s := c.said
	if c.callback {
		q := url.Values{"state": {"st"}, "error": {s.code}, "error_description": {s.desc}}
		res := readCallback(httptest.NewRequest("GET", "/callback?"+q.Encode(), nil), "st", "", false)
		e, ok := res.err.(*Error)
		if !ok {
			t.Fatalf("%s: callback gave %v", c.name, res.err)
		}
		return e
	}
	e := mapStatus(s.op, s.status, s.code, s.desc, nil, nil)
	if a := c.hardened; a != nil {
		cl := cliNewClient(t, Options{})
		conn := Connection{ClientID: "shipping-cli", Issuer: "https://127.0.0.1:8443/realms/shipping", ClientAuth: a.method, NoPAR: a.noPAR}
		if a.scoped {
			conn.Scopes = []string{"openid"}
		}
		// The realm's discovery, as fetched already (nameTheSwitch asks
		// for it otherwise).
		doc := map[string]any{"token_endpoint_auth_methods_supported": a.realmMethods}
		if a.dpopCapable {
			doc["dpop_signing_alg_values_supported"] = []string{"ES256"}
		}
		body, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		cl.keepHardening(conn.IssuerURL(), body)
		cl.discovered[conn.IssuerURL()] = Endpoints{Issuer: conn.IssuerURL()}
		ca := ClientAuth{Method: a.method}
		if a.secret {
			ca.Secret = "s3cret-of-the-table"
		}
		if a.dpop {
			k, err := NewDPoPKey()
			if err != nil {
				t.Fatal(err)
			}
			ca.DPoP = k
		}
		if a.key {
			k, err := GenerateClientKey()
			if err != nil {
				t.Fatal(err)
			}
			ca.Key = k
		}
		if a.cert {
			ca.Cert = &tls.Certificate{}
		}
		e = cl.nameTheSwitch(t.Context(), conn, ca, e)
	}
	return e
}

// Every answer in refusalCases gets its line, and the error keeps what the
// server said (status, code, description) for callers that branch on it,
// as golang.org/x/oauth2's RetrieveError does.
func TestRefusalsMapByTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range refusalCases {
		if seen[c.name] {
			t.Errorf("two cases named %q", c.name)
		}
		seen[c.name] = true
		e := refusalOf(t, c)
		if e.Kind != c.kind || e.Msg != c.msg || e.Hint != c.hint {
			t.Errorf("%s:\n got %v %q; %q\nwant %v %q; %q", c.name, e.Kind, e.Msg, e.Hint, c.kind, c.msg, c.hint)
		}
		if IsFinalRefusal(e) != c.final {
			t.Errorf("%s: final %v, want %v", c.name, IsFinalRefusal(e), c.final)
		}
		if e.Op != c.said.op || e.Status != c.said.status || e.Code != c.said.code || e.Description != c.said.desc {
			t.Errorf("%s: the error keeps op %q status %d code %q description %q, want %+v", c.name, e.Op, e.Status, e.Code, e.Description, c.said)
		}
	}
}

// What the server said is kept scrubbed of the request's secrets, and an
// answer without an error code keeps an excerpt of its body.
func TestRefusalKeepsTheServersWordsWithoutSecrets(t *testing.T) {
	t.Parallel()
	e := mapStatus("login", 401, "invalid_"+cliPassword, "bad "+cliClientSecret, []byte(`{"error":"x"}`), []string{cliPassword, cliClientSecret})
	if strings.Contains(e.Code+e.Description+e.Error(), cliPassword) || strings.Contains(e.Code+e.Description+e.Error(), cliClientSecret) {
		t.Errorf("a secret is kept: %q %q", e.Code, e.Description)
	}
	if e.Excerpt != "" {
		t.Errorf("an answer with a code keeps an excerpt %q", e.Excerpt)
	}
	e = mapStatus("refresh", 404, "", "", []byte("<html>Not Found "+cliRefresh+"</html>"), []string{cliRefresh})
	if !strings.Contains(e.Excerpt, "Not Found") || strings.Contains(e.Excerpt, cliRefresh) {
		t.Errorf("excerpt %q", e.Excerpt)
	}
}

// Every row of the refusal tables is the one that maps some case of
// refusalCases (a row without a test row, or one that an earlier row hides,
// fails here), and a row that leaves its line to its kind has a kind with a
// line.
func TestEveryRefusalRowHasACase(t *testing.T) {
	t.Parallel()
	used := map[*refusal]bool{}
	for _, c := range refusalCases {
		s, a := c.said, attempt{op: c.said.op, callback: c.callback}
		if i := firstRefusal(statusRefusals, a, said{s.status, s.code, s.desc}); i >= 0 {
			used[&statusRefusals[i]] = true
		}
		if h := c.hardened; h != nil {
			a := attempt{op: s.op, method: h.method, secret: h.secret, key: h.key, cert: h.cert, dpop: h.dpop, noPAR: h.noPAR,
				dpopCapable: h.dpopCapable, realmMethods: knownMethods(h.realmMethods)}
			if i := firstRefusal(switchRefusals, a, said{s.status, s.code, s.desc}); i >= 0 {
				used[&switchRefusals[i]] = true
			}
		}
	}
	for name, rows := range map[string][]refusal{"statusRefusals": statusRefusals, "switchRefusals": switchRefusals} {
		for i := range rows {
			r := &rows[i]
			if !used[r] {
				t.Errorf("%s[%d] (%v %q %v %q) maps no case of refusalCases", name, i, r.codes, r.msg, r.kind, r.exact)
			}
			if _, ok := kindTexts[r.kind]; r.kind != KindUnknown && (r.msg == "" || r.hint == "") && !ok {
				t.Errorf("%s[%d]: kind %v has no line of its own", name, i, r.kind)
			}
		}
	}
}
