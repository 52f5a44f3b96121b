package auth

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A server's refusal becomes one line by data, not by branches: each row of
// statusRefusals and switchRefusals says what was attempted and what the
// server said, and gives the kind, the message and the hint. The first row
// that matches wins; a new server dialect is one row here and one row in
// refusalCases (errors_table_test.go). The *Error keeps what the server said
// (Status, Code, Description) for callers that decide by it, as
// golang.org/x/oauth2's RetrieveError does.

// said is what a server answered: the HTTP status and the RFC 6749 §5.2
// error code and description.
type said struct {
	status int
	code   string
	desc   string
}

// attempt is what shipkey tried when the server refused: the operation (the
// Error's Op) and, for a request that authenticated the client at a
// hardened realm (nameTheSwitch), its client authentication, DPoP and PAR.
type attempt struct {
	op string
	// callback: the refusal came back with the browser to the
	// authorization code grant's loopback listener.
	callback bool
	// method is the key's client authentication as the request carried it
	// ("" when none was chosen or learned); secret, key, cert and dpop say
	// whether it held a client secret, a client key, a client certificate
	// and a DPoP key.
	method                  ClientAuthMethod
	secret, key, cert, dpop bool
	// noPAR: the key does not push its authorization requests;
	// dpopCapable: the realm's discovery lists DPoP algorithms.
	noPAR, dpopCapable bool
	// realmMethods are the client authentication methods shipkey speaks
	// that the realm's discovery lists for its token endpoint (none: it
	// did not say).
	realmMethods []ClientAuthMethod
}

// sent are the methods the request may have authenticated the client by:
// its method, else, with a secret, the secret in the form or by HTTP Basic
// (send tries both); none for a public client.
func (a attempt) sent() []ClientAuthMethod {
	switch {
	case a.method != "":
		return []ClientAuthMethod{a.method}
	case a.secret:
		return []ClientAuthMethod{ClientSecretPost, ClientSecretBasic}
	}
	return nil
}

// unlisted reports that the realm lists the methods it takes and none that
// the request may have used is among them.
func (a attempt) unlisted() bool {
	sent := a.sent()
	return len(a.realmMethods) > 0 && len(sent) > 0 && a.method != ClientAuthNone &&
		!slices.ContainsFunc(sent, func(m ClientAuthMethod) bool { return slices.Contains(a.realmMethods, listedAs(m)) })
}

// othersListed reports that the realm lists a method the request did not use.
func (a attempt) othersListed() bool {
	sent := a.sent()
	return slices.ContainsFunc(a.realmMethods, func(m ClientAuthMethod) bool {
		return !slices.ContainsFunc(sent, func(s ClientAuthMethod) bool { return listedAs(s) == m })
	})
}

// listedAs is the name a realm's discovery lists m by: an external client
// assertion is a private_key_jwt to the realm.
func listedAs(m ClientAuthMethod) ClientAuthMethod {
	if m.Needs().External {
		return PrivateKeyJWT
	}
	return m
}

// knownMethods are the methods of names (a discovery document's list) that
// shipkey speaks, less none (servers that take public clients seldom list
// it), in clientAuthTable's order.
func knownMethods(names []string) []ClientAuthMethod {
	var out []ClientAuthMethod
	for _, m := range ClientAuthMethods() {
		if m != ClientAuthNone && slices.Contains(names, string(m)) {
			out = append(out, m)
		}
	}
	return out
}

// methodWords names the methods of ms for a message: "a", "a or b", "a, b
// or c".
func methodWords(ms []ClientAuthMethod) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// presence is a row's condition on one yes-or-no fact of the attempt.
type presence int8

const (
	either presence = iota // the row does not look
	has                    // the attempt must have it
	lacks                  // the attempt must not have it
)

func (p presence) holds(v bool) bool { return p == either || (p == has) == v }

// statusRange is the statuses lo to hi, both included.
type statusRange struct{ lo, hi int }

// is is the statuses given; between, the statuses lo to hi.
func is(statuses ...int) []statusRange {
	out := make([]statusRange, len(statuses))
	for i, s := range statuses {
		out[i] = statusRange{s, s}
	}
	return out
}

func between(lo, hi int) []statusRange { return []statusRange{{lo, hi}} }

// refusal is one row: the conditions on what was attempted and on what the
// server said (a nil list, or either, does not look), and what shipkey says.
type refusal struct {
	// What was attempted.
	ops      []string // the operation; nil: any
	callback bool     // only the browser's answer to the authorization code grant
	methods  []ClientAuthMethod
	secret   presence
	key      presence
	cert     presence
	dpop     presence
	noPAR    presence
	dpopCap  presence // the realm takes DPoP proofs
	unlisted presence // the realm lists its methods, and not the one used (attempt.unlisted)
	others   presence // the realm lists a method other than the one used
	// What the server said.
	status      []statusRange // one of them
	codes       []string      // one of them; "" is an answer without a code
	unknownCode bool          // a code the rows of errorCodes do not tell apart, or none
	wording     []string      // each in the description, in any case
	anyWording  []string      // one of them in the description, in any case
	exact       []string      // each in the description, as written
	anyExact    []string      // one of them in the description, as written
	silent      bool          // no description
	// What shipkey says: kind, message and hint. An empty message or hint
	// is the kind's own (kindTexts). A row without a kind keeps what was
	// said already and only adds its hint. <status> and <grant> in a
	// message are the status and the grant's name; <method> is the client
	// authentication the request used, <realm methods> " (the realm takes
	// …)" when its discovery lists them.
	kind      ErrorKind
	msg, hint string
	addHint   string // added to the hint after "; "
	// final: retrying cannot change this answer (IsFinalRefusal).
	final bool
}

// errorCodes are the RFC 6749 §5.2 codes the rows tell apart by code (the
// rows with unknownCode look at the others).
var errorCodes = []string{"invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_request"}

// The operations rows name.
var (
	loginOp = []string{"login"}
	// jwtBearerOp is the jwt-bearer grant's.
	jwtBearerOp = []string{opJWTBearer}
	ccOp        = []string{"client-credentials"}
	exchange    = []string{opExchange}
	revokeOp    = []string{"revoke"}
	// otherGrants are the grants other than the password grant ("login"):
	// those of grantOps.
	otherGrants = slices.Sorted(maps.Keys(grantOps))
)

// The hints several rows give.
const (
	// loginCauses names the likely causes of a login refused without an
	// OAuth error, with the settings that fix them; basicCause is its
	// second half, all that is left when the key sends a scope already
	// (withoutScopeCause).
	loginCauses = "the server may require a scope ({{scope openid}}) or the client secret by HTTP Basic ({{basic-auth}})"
	basicCause  = "the server may require the client secret by HTTP Basic ({{basic-auth}})"
	// scopeCause is loginCauses' first half, for the grants that send no user.
	scopeCause = "the server may require a scope ({{scope}})"
	// scopeHint says where a scope is set, on the command line and in the app.
	scopeHint = "request a scope, for example openid ({{scope openid}})"
	// loggedOut is a logout's answer that the session was gone already.
	loggedOutMsg  = "the session had already ended"
	loggedOutHint = "nothing to do; log in again with `shipkey login` when needed"
	// The ways out of a refused external assertion (the jwt-bearer
	// grant's or the client_assertion method's).
	untrustedIssuerHint = "ask a realm administrator to add its issuer as an identity provider that may issue assertions (Keycloak: Identity providers → OpenID Connect v1.0 with the issuer's JWKS URL; JWT Authorization Grant or federated client authentication on), or check that it comes from the issuer you meant"
	freshAssertionHint  = "put a current one there (the key reads it again at every renewal); an identity token of a CI job lives minutes: have the job write a new one, or use {{assertion-cmd}} to fetch one each time"
	audienceHint        = "have the issuer mint it for the realm: aud = the realm's issuer URL (GitHub Actions: the audience of getIDToken; GitLab: id_tokens aud)"
	assertionCheckHint  = "check that it is current, made for this realm (aud) and from an issuer the realm trusts for the client"
)

// statusRefusals map every refusal of an auth endpoint, by its status and
// error code (and, where the code is not enough, the server's known
// wording) and by the operation.
var statusRefusals = []refusal{
	// "The scope of your request is missing" (Keycloak), "scope is required".
	{codes: []string{"invalid_request", "invalid_scope"}, wording: []string{"scope"}, anyWording: []string{"missing", "required"},
		kind: KindInvalidScope, msg: "the server requires a scope and none was requested", hint: scopeHint},
	{status: between(300, 399),
		kind: KindServer, msg: "the server redirected (status <status>)", hint: "check the auth URL (redirects are never followed when credentials are sent)"},
	{status: between(500, 999),
		kind: KindServer, msg: "the server failed (status <status>)", hint: "try again later; if it persists, tell the realm's administrators"},
	// Not Keycloak's JSON: an empty, plain-text or HTML refusal that does
	// not say whether the user or the client was refused.
	{ops: loginOp, status: is(401, 403), unknownCode: true,
		kind: KindCredentialsRefused, hint: "check the username, password, client id and secret; " + loginCauses},
	// An empty or non-JSON 400: servers that require a scope, or the
	// client secret in another place, answer this way.
	{ops: loginOp, status: is(400), codes: []string{""},
		kind: KindServer, msg: "the server refused the login (status 400) without saying why", hint: loginCauses},
	// A grant that authenticates only the client: the client was refused,
	// or (an empty or non-OAuth 403, as servers that require a scope answer
	// a request without one) the request was.
	{ops: ccOp, status: is(401, 403), unknownCode: true, kind: KindInvalidClient, addHint: scopeCause},
	{ops: otherGrants, status: is(401, 403), unknownCode: true, kind: KindInvalidClient},
	// The grant type itself is unknown there (Keycloak before 26.2, most
	// servers): no client setting can help.
	{ops: exchange, codes: []string{"unsupported_grant_type"},
		kind: KindGrantNotAllowed, msg: "this server does not offer token exchange",
		hint: "ask the realm's administrators how to get a token for that audience (Keycloak offers token exchange from 26.2)"},
	// RFC 8693 §2.2.2: an audience or resource the server will not issue
	// for, or a subject it will not exchange; its own words say which.
	{ops: exchange, codes: []string{"invalid_target", "invalid_request", "access_denied"},
		kind: KindServer, msg: "the server refused the token exchange",
		hint: "check --audience/--resource (the other service's client id at the realm) and that the client may exchange tokens for it"},
	// Keycloak answers a wrong client secret with unauthorized_client
	// "Invalid client or Invalid client credentials".
	{ops: otherGrants, codes: []string{"unauthorized_client"}, wording: []string{"invalid client"}, kind: KindInvalidClient},
	{ops: otherGrants, codes: []string{"unauthorized_client", "unsupported_grant_type"}, kind: KindGrantNotAllowed},
	{ops: otherGrants, codes: []string{"access_denied"}, kind: KindAccessDenied},
	{ops: otherGrants, codes: []string{"expired_token"}, kind: KindExpired},
	// The jwt-bearer grant's assertion refused, by Keycloak's words
	// (JWTAuthorizationGrantType, AbstractBaseJWTValidator; invalid_grant)
	// and others' ("expired", "issuer", "audience"). <assertion source> is
	// where the key reads it (the grant fills it in).
	{ops: jwtBearerOp, codes: []string{"invalid_grant", "invalid_request"}, wording: []string{"audience"},
		kind: KindAssertionRefused, msg: "the realm refused the audience (aud) of the assertion from <assertion source>", hint: audienceHint},
	{ops: jwtBearerOp, codes: []string{"invalid_grant", "invalid_request"}, anyWording: expiredWords,
		kind: KindAssertionRefused, msg: "the assertion from <assertion source> has expired (or is not valid yet)", hint: freshAssertionHint},
	{ops: jwtBearerOp, codes: []string{"invalid_grant", "invalid_request"}, anyWording: []string{"no identity provider", "issuer"},
		kind: KindAssertionRefused, msg: "the realm does not trust the issuer of the assertion from <assertion source>", hint: untrustedIssuerHint},
	{ops: jwtBearerOp, codes: []string{"invalid_grant", "invalid_request"}, wording: []string{"not allowed for the client"},
		kind: KindAssertionRefused, msg: "the realm trusts the issuer of the assertion from <assertion source>, but not for this client",
		hint: "ask a realm administrator to allow that identity provider for the client's JWT authorization grant (Keycloak: Clients → the client → Advanced → JWT Authorization Grant → Allowed identity providers)"},
	{ops: jwtBearerOp, codes: []string{"invalid_grant", "invalid_request"}, wording: []string{"reuse"},
		kind: KindAssertionRefused, msg: "the realm had seen the assertion from <assertion source> before (each may be used once)",
		hint: "have it give a new assertion for every request (a command run again, a file rewritten)"},
	{ops: jwtBearerOp, codes: []string{"invalid_grant", "invalid_request"}, anyWording: []string{"user not found", "no user", "subject"},
		kind: KindAssertionRefused, msg: "the realm knows no user for the subject (sub) of the assertion from <assertion source>",
		hint: "ask a realm administrator to link that subject to a user (Keycloak: Users → the user → Identity provider links)"},
	{ops: jwtBearerOp, codes: []string{"invalid_grant"},
		kind: KindAssertionRefused, msg: "the realm refused the assertion from <assertion source>", hint: assertionCheckHint},
	{ops: otherGrants, codes: []string{"invalid_grant"},
		kind: KindServer, msg: "the server refused the <grant> grant", hint: "run the command again; if it repeats, check the client's settings in the realm"},
	// A refusal without an OAuth error body: the refresh token is no
	// longer accepted; only a login can help.
	{ops: []string{"refresh"}, status: is(400, 401), codes: []string{""}, kind: KindLoginRequired},
	{ops: loginOp, codes: []string{"invalid_grant"}, wording: []string{"disabled"}, kind: KindAccountDisabled},
	{ops: loginOp, codes: []string{"invalid_grant"}, wording: []string{"not fully set up"}, kind: KindAccountNotSetUp},
	// 401 "Invalid user credentials"; 400 for unknown users and brute-force lockouts.
	{ops: loginOp, codes: []string{"invalid_grant"}, kind: KindInvalidCredentials},
	{ops: []string{"logout"}, codes: []string{"invalid_grant", "invalid_token"}, kind: KindLoginRequired, msg: loggedOutMsg, hint: loggedOutHint},
	// A revocation endpoint that will not revoke the key's token ("token
	// was not issued for this client", a request it will not take) with the
	// client's authentication accepted (Keycloak's wrong secret is
	// unauthorized_client "Invalid client or Invalid client credentials"):
	// the same request gets the same answer however often it is sent.
	{ops: revokeOp, codes: []string{"unauthorized_client"}, anyWording: []string{"invalid client", "client credentials"}, kind: KindInvalidClient},
	{ops: revokeOp, status: is(400, 401), codes: []string{"invalid_request", "unauthorized_client", "invalid_token"}, final: true,
		kind: KindServer, msg: "the server refused to revoke the key's token",
		hint: "sending it again will not change that answer; the session stays live at the server until its tokens expire, unless the realm's administrators end it"},
	{codes: []string{"invalid_grant"}, kind: KindLoginRequired},
	{codes: []string{"invalid_client"}, kind: KindInvalidClient},
	{codes: []string{"unauthorized_client"}, wording: []string{"direct access grant"}, kind: KindDirectGrantDisabled},
	{ops: loginOp, status: is(400), codes: []string{"unauthorized_client"}, kind: KindDirectGrantDisabled},
	{codes: []string{"unauthorized_client"}, kind: KindInvalidClient},
	// Not a client setting (Keycloak says unauthorized_client for that):
	// this server has no password grant at all.
	{ops: loginOp, codes: []string{"unsupported_grant_type"},
		kind: KindDirectGrantDisabled, msg: "the server does not offer the password grant",
		hint: "sign in with another grant: {{grant device-code}}, or {{grant authcode}} with a browser"},
	{codes: []string{"invalid_scope"}, kind: KindInvalidScope},
	// Any other error the browser brings back from the sign-in page.
	{ops: []string{"authcode"}, callback: true,
		kind: KindServer, msg: "the server refused the sign-in", hint: "check the client's settings in the realm (redirect URIs, scopes)"},
	{kind: KindServer, msg: "the server refused the request (status <status>)", hint: "check the connection settings; if they are right, try again later"},
}

// The lines several switch rows give.
const (
	dpopRequiredMsg   = "the realm requires DPoP-bound tokens for this client (Keycloak: Require DPoP bound tokens)"
	dpopRefusedMsg    = "the realm refused the key's DPoP proof"
	dpopRefusedHint   = "check this machine's clock; if it persists, create the key again with {{dpop}}"
	secretJWTMsg      = "the realm refused the client assertion signed with the client secret (client_secret_jwt)"
	secretJWTHint     = "check the client secret and that the client's authenticator is \"Signed JWT with Client Secret\""
	assertionWanted   = "the realm wants a signed client assertion (Keycloak: Client Authenticator \"Signed JWT\")"
	clientKeyHint     = "create the key again with {{client-key FILE}} or {{generate-client-key}}"
	keyAssertionMsg   = "the realm refused the key's client assertion (private_key_jwt)"
	keyAssertionHint  = "register the key's public JWKS with the client (Credentials → Signed JWT → Keys), or pass the key it knows with {{client-key}} and {{client-key-id}}"
	dpopGenericAnswer = "if the client requires DPoP-bound tokens (the realm takes DPoP proofs), create the key again with {{dpop}}"
	// methodHint is the way out of a client authentication the realm does
	// not take for the client.
	methodHint        = "create the key again with the method the client is registered with: {{client-auth METHOD}}"
	secretForJWTMsg   = "the realm wants a signed client assertion, and the key sent its client secret (<method>)"
	secretForJWTHint  = "for a client whose authenticator is \"Signed JWT with Client Secret\", create the key again with {{client-auth client_secret_jwt}}; for \"Signed JWT\", with {{client-auth private_key_jwt}} and {{client-key FILE}} or {{generate-client-key}}"
	otherMethodAnswer = "if the client is registered with a method other than <method><realm methods>, create the key again with {{client-auth METHOD}}"
)

// secretSent are the ways of sending the client secret itself: the method
// not chosen ("", the form then HTTP Basic), the form and HTTP Basic.
var secretSent = []ClientAuthMethod{"", ClientSecretPost, ClientSecretBasic}

// methodRefusedWords are how servers say the client authenticated by a
// method it is not registered with (oidc-provider: "the provided
// authentication mechanism does not match the registered client
// authentication method").
var methodRefusedWords = []string{"authentication method", "auth method", "authentication mechanism", "token_endpoint_auth_method"}

// assertionWords are how servers say a client assertion is wanted or wrong.
var assertionWords = []string{"signed JWT", "client_assertion"}

// expiredWords are how servers say an assertion's time is past (Keycloak:
// "Token is not active", "issued too far in the past").
var expiredWords = []string{"not active", "expired", "too far in the past", "exp claim", "issued in the future"}

// switchRefusals name a hardened realm's switch that a refusal of a request
// authenticating the client was about (DPoP required, PAR required, a
// client assertion or certificate wanted or refused), and the setting that
// meets it. They are matched after statusRefusals, and override its line;
// an answer none of them matches keeps it.
var switchRefusals = []refusal{
	{exact: []string{"DPoP proof is missing"}, dpop: lacks, kind: KindConfig, msg: dpopRequiredMsg, hint: "create the key again with {{dpop}}"},
	{exact: []string{"DPoP", "required"}, dpop: lacks, kind: KindConfig, msg: dpopRequiredMsg, hint: "create the key again with {{dpop}}"},
	// The generic refusal of a server that takes DPoP: it may be the
	// missing proof, or not (oidc-provider says the same of a wrong PKCE
	// verifier), so the line keeps what it said and adds the way out.
	// The client credentials grant carries no grant of its own (no code,
	// no refresh token, no PKCE verifier) that could be invalid: at a realm
	// that takes DPoP, a key without it was refused for the missing proof.
	{ops: ccOp, codes: []string{"invalid_grant"}, dpop: lacks, dpopCap: has,
		kind: KindConfig, msg: "the realm refused the client credentials grant of a key without DPoP, and it takes DPoP proofs: the client likely requires DPoP-bound tokens",
		hint: "create the key again with {{dpop}}"},
	{codes: []string{"invalid_grant"}, dpop: lacks, dpopCap: has, silent: true, addHint: dpopGenericAnswer},
	{codes: []string{"invalid_grant"}, dpop: lacks, dpopCap: has, exact: []string{"grant request is invalid"}, addHint: dpopGenericAnswer},
	{codes: []string{"invalid_dpop_proof", "use_dpop_nonce"}, dpop: has, kind: KindConfig, msg: dpopRefusedMsg, hint: dpopRefusedHint},
	{exact: []string{"DPoP"}, dpop: has, kind: KindConfig, msg: dpopRefusedMsg, hint: dpopRefusedHint},
	{exact: []string{"Pushed Authorization Request"}, noPAR: has,
		kind: KindConfig, msg: "the realm requires pushed authorization requests (PAR) for this client", hint: "create the key again without {{par=false}}"},
	{exact: []string{"Pushed Authorization Request"},
		kind: KindConfig, msg: "the realm requires pushed authorization requests (PAR) and announces no PAR endpoint", hint: "set the connection's issuer so discovery finds the realm's PAR endpoint"},
	// An external client assertion (client_assertion) refused: Keycloak's
	// federated client authentication says why in words its signed-JWT
	// authenticator shares; other servers only that it failed.
	// <client assertion source> is where the key reads it.
	{methods: []ClientAuthMethod{ClientAssertion}, codes: []string{"invalid_client", "unauthorized_client"}, wording: []string{"audience"},
		kind: KindAssertionRefused, msg: "the realm refused the audience (aud) of the client assertion from <client assertion source>", hint: audienceHint},
	{methods: []ClientAuthMethod{ClientAssertion}, codes: []string{"invalid_client", "unauthorized_client"}, anyWording: expiredWords,
		kind: KindAssertionRefused, msg: "the client assertion from <client assertion source> has expired (or is not valid yet)", hint: freshAssertionHint},
	{methods: []ClientAuthMethod{ClientAssertion}, codes: []string{"invalid_client", "unauthorized_client"}, anyWording: []string{"no identity provider", "issuer"},
		kind: KindAssertionRefused, msg: "the realm does not trust the issuer of the client assertion from <client assertion source>", hint: untrustedIssuerHint},
	{methods: []ClientAuthMethod{ClientAssertion}, codes: []string{"invalid_client", "unauthorized_client"},
		kind: KindAssertionRefused, msg: "the realm refused the client assertion from <client assertion source>",
		hint: assertionCheckHint + "; the client's authenticator must accept it (Keycloak: Credentials → Client Authenticator \"Signed JWT - Federated\", with the identity provider and the assertion's subject)"},
	// A method the realm does not list, or one the server says is not the
	// client's: the method used, the realm's, and the flag.
	{unlisted: has, status: is(400, 401), codes: []string{"invalid_client", "unauthorized_client", ""},
		kind: KindInvalidClient, msg: "the realm does not take client authentication <method><realm methods>", hint: methodHint},
	{anyWording: methodRefusedWords, codes: []string{"invalid_client", "unauthorized_client"},
		kind: KindInvalidClient, msg: "the realm refused client authentication <method> for this client<realm methods>", hint: methodHint},
	// Keycloak's "Parameter client_assertion_type is missing" to a key that
	// sent its secret: the client's authenticator signs, with the secret or
	// with a key.
	{anyExact: assertionWords, methods: secretSent, secret: has, kind: KindInvalidClient, msg: secretForJWTMsg, hint: secretForJWTHint},
	{anyExact: assertionWords, methods: []ClientAuthMethod{ClientSecretJWT}, kind: KindInvalidClient, msg: secretJWTMsg, hint: secretJWTHint},
	{codes: []string{"invalid_client"}, methods: []ClientAuthMethod{ClientSecretJWT}, kind: KindInvalidClient, msg: secretJWTMsg, hint: secretJWTHint},
	{anyExact: assertionWords, key: lacks, kind: KindInvalidClient, msg: assertionWanted, hint: clientKeyHint},
	{codes: []string{"invalid_client"}, methods: []ClientAuthMethod{PrivateKeyJWT}, key: lacks, kind: KindInvalidClient, msg: assertionWanted, hint: clientKeyHint},
	{anyExact: assertionWords, kind: KindInvalidClient, msg: keyAssertionMsg, hint: keyAssertionHint},
	{codes: []string{"invalid_client"}, methods: []ClientAuthMethod{PrivateKeyJWT}, kind: KindInvalidClient, msg: keyAssertionMsg, hint: keyAssertionHint},
	{codes: []string{"invalid_client", "unauthorized_client"}, cert: has, methods: []ClientAuthMethod{SelfSignedTLSClientAuth},
		kind: KindInvalidClient, msg: "the realm refused the client certificate (self_signed_tls_client_auth)",
		hint: "pass the self-signed certificate and key whose public key the client registered ({{client-cert}}, {{client-key}})"},
	{codes: []string{"invalid_client", "unauthorized_client"}, cert: has,
		kind: KindInvalidClient, msg: "the realm refused the client certificate (tls_client_auth)",
		hint: "pass the certificate and key the client is registered with ({{client-cert}}, {{client-key}}); Keycloak: Client Authenticator \"X509 Certificate\", Subject DN"},
	{wording: []string{"certificate"}, cert: lacks, methods: secretSent, secret: has,
		kind: KindInvalidClient, msg: "the realm wants a client certificate (tls_client_auth), and the key sent its client secret (<method>)",
		hint: "create the key again with {{client-auth tls_client_auth}} {{client-cert FILE}} {{client-key FILE}}"},
	{wording: []string{"certificate"}, cert: lacks,
		kind: KindInvalidClient, msg: "the realm wants a client certificate (tls_client_auth)", hint: "create the key again with {{client-cert FILE}} {{client-key FILE}}"},
	// A refusal of the secret that does not say why (oidc-provider:
	// "client authentication failed"), at a realm that takes other
	// methods: the secret may be right and the method wrong.
	{codes: []string{"invalid_client"}, methods: secretSent, secret: has, others: has, addHint: otherMethodAnswer},
}

// kindTexts are the message and hint of a kind whose row gives none.
// <grant> is the grant's name, <grant hint> where a realm administrator
// allows it (grantHints).
var kindTexts = map[ErrorKind]struct{ msg, hint string }{
	KindInvalidCredentials:  {"wrong username or password", "check them and try again"},
	KindInvalidClient:       {"the client id or client secret was refused", "check the client id and the client secret registered in the realm"},
	KindAccountDisabled:     {"the user account is disabled", "ask a realm administrator to enable it"},
	KindAccountNotSetUp:     {"the user account is not fully set up (required actions pending)", "log in once in the developer portal to finish the setup, then try again"},
	KindDirectGrantDisabled: {"the client does not allow the password grant", "ask a realm administrator to enable Direct Access Grants for the client"},
	KindInvalidScope:        {"a requested scope is not allowed for this client", "check the scopes of the connection"},
	KindGrantNotAllowed:     {"the client may not use the <grant> grant", "<grant hint>"},
	KindAccessDenied:        {"the sign-in was denied", "run the command again and approve the request"},
	KindExpired:             {"the device code expired before it was approved", "run the command again and approve the request within its time"},
	KindCredentialsRefused:  {"the server refused the username/password or the client credentials", "check both the username and password and the client id and client secret"},
	KindLoginRequired:       {"the refresh token has expired or its session ended", "log in again with `shipkey login`"},
	KindAssertionRefused:    {"the realm refused the assertion", assertionCheckHint},
}

// grantOps names, by the Op of their errors, the grants other than the
// password grant ("login").
var grantOps = map[string]string{
	"client-credentials": "client credentials",
	"device-code":        "device code",
	"authcode":           "authorization code",
	opExchange:           "token exchange",
	opJWTBearer:          "JWT bearer",
}

// grantHints say where a realm administrator allows a grant for a client.
var grantHints = map[string]string{
	"client-credentials": "ask a realm administrator to turn on the client's service account (Keycloak: Clients → the client → Capability config → Service accounts roles)",
	"device-code":        "ask a realm administrator to turn on the device grant for the client (Keycloak: Clients → the client → Capability config → OAuth 2.0 Device Authorization Grant)",
	"authcode":           "ask a realm administrator to turn on browser sign-in for the client (Keycloak: Clients → the client → Capability config → Standard flow)",
	opExchange:           "ask a realm administrator to turn on token exchange for the client (Keycloak 26.2 and later: Clients → the client → Capability config → Standard Token Exchange)",
	opJWTBearer:          "ask a realm administrator to turn on the JWT authorization grant for the client (Keycloak 26.5 and later: Clients → the client → Capability config → JWT Authorization Grant)",
}

// mapStatus builds the *Error for a non-success answer of an auth endpoint
// to op (statusRefusals). secrets are scrubbed from what it keeps of the
// answer.
func mapStatus(op string, status int, code, desc string, body []byte, secrets []string) *Error {
	return refuse(attempt{op: op}, said{status, code, desc}, body, secrets)
}

// refuse is the *Error of the first row of statusRefusals that a and s
// match. It keeps what the server said, scrubbed of secrets, and an excerpt
// of a body without an error code.
func refuse(a attempt, s said, body []byte, secrets []string) *Error {
	e := &Error{Op: a.op, Status: s.status, Code: scrub(s.code, secrets), Description: scrub(s.desc, secrets)}
	if i := firstRefusal(statusRefusals, a, s); i >= 0 {
		statusRefusals[i].apply(e, a)
	}
	if e.Code == "" && len(body) > 0 {
		e.Excerpt = bodyExcerpt(body, secrets)
	}
	return e
}

// firstRefusal is the index of the first row of rows that a and s match,
// -1 for none.
func firstRefusal(rows []refusal, a attempt, s said) int {
	return slices.IndexFunc(rows, func(r refusal) bool { return r.tried(a) && r.heard(s) })
}

// tried reports whether a is what the row was attempted by.
func (r refusal) tried(a attempt) bool {
	return (r.ops == nil || slices.Contains(r.ops, a.op)) &&
		(!r.callback || a.callback) &&
		(r.methods == nil || slices.Contains(r.methods, a.method)) &&
		r.secret.holds(a.secret) && r.key.holds(a.key) && r.cert.holds(a.cert) && r.dpop.holds(a.dpop) &&
		r.noPAR.holds(a.noPAR) && r.dpopCap.holds(a.dpopCapable) &&
		r.unlisted.holds(a.unlisted()) && r.others.holds(a.othersListed())
}

// heard reports whether s is what the server said in the row.
func (r refusal) heard(s said) bool {
	return r.statusIs(s.status) &&
		(r.codes == nil || slices.Contains(r.codes, s.code)) &&
		(!r.unknownCode || !slices.Contains(errorCodes, s.code)) &&
		(!r.silent || s.desc == "") &&
		r.worded(s.desc)
}

func (r refusal) statusIs(status int) bool {
	if r.status == nil {
		return true
	}
	return slices.ContainsFunc(r.status, func(sr statusRange) bool { return sr.lo <= status && status <= sr.hi })
}

// worded reports whether desc holds the row's wording.
func (r refusal) worded(desc string) bool {
	low := strings.ToLower(desc)
	return holdsAll(low, r.wording) && holdsAll(desc, r.exact) &&
		(r.anyWording == nil || holdsAny(low, r.anyWording)) &&
		(r.anyExact == nil || holdsAny(desc, r.anyExact))
}

func holdsAll(s string, words []string) bool {
	return !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(s, w) })
}

func holdsAny(s string, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
}

// apply gives e the row's line for a: its kind, message and hint (the
// kind's own where it gives none), and its added hint.
func (r refusal) apply(e *Error, a attempt) {
	if r.kind != KindUnknown {
		own := kindTexts[r.kind]
		e.Kind, e.Msg, e.Hint = r.kind, fill(cmp.Or(r.msg, own.msg), a, e.Status), fill(cmp.Or(r.hint, own.hint), a, e.Status)
	}
	if r.final {
		e.final = true
	}
	if r.addHint != "" {
		if e.Hint != "" {
			e.Hint += "; "
		}
		e.Hint += fill(r.addHint, a, e.Status)
	}
}

// fill writes s's <status>, <grant>, <grant hint>, <method> and <realm
// methods> for a and status.
func fill(s string, a attempt, status int) string {
	if !strings.Contains(s, "<") {
		return s
	}
	realm := ""
	if len(a.realmMethods) > 0 {
		realm = " (the realm takes " + methodWords(a.realmMethods) + ")"
	}
	return strings.NewReplacer("<status>", strconv.Itoa(status), "<grant hint>", grantHints[a.op], "<grant>", grantOps[a.op],
		"<method>", methodWords(a.sent()), "<realm methods>", realm).Replace(s)
}

// withoutScopeCause drops the guess that a scope is missing from e's hint:
// the request carried one.
func (e *Error) withoutScopeCause() {
	e.Hint = strings.Replace(e.Hint, loginCauses, basicCause, 1)
	e.Hint = strings.Replace(e.Hint, "; "+scopeCause, "", 1)
}
