package auth

import (
	"context"
	"crypto"
	"crypto/tls"
	"net/url"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
)

// ClientAuthMethod is how the client proves who it is to the realm, by the
// names of the OAuth token endpoint authentication methods registry (RFC
// 8414 §2, token_endpoint_auth_methods_supported), so that a value copied
// from a server's discovery document works. It is stored with a key as
// client_auth = "…". The empty value means "not chosen": the secret goes in
// the form body, and HTTP Basic is tried once when the server answers
// invalid_client (what golang.org/x/oauth2's auto-detection does).
type ClientAuthMethod string

// The client authentication methods shipkey knows.
const (
	ClientSecretPost        ClientAuthMethod = "client_secret_post"
	ClientSecretBasic       ClientAuthMethod = "client_secret_basic"
	ClientSecretJWT         ClientAuthMethod = "client_secret_jwt"
	PrivateKeyJWT           ClientAuthMethod = "private_key_jwt"
	TLSClientAuth           ClientAuthMethod = "tls_client_auth"
	SelfSignedTLSClientAuth ClientAuthMethod = "self_signed_tls_client_auth"
	ClientAuthNone          ClientAuthMethod = "none"
	// ClientAssertion sends an assertion of a trusted external issuer (a CI
	// job's identity token) as the client assertion (RFC 7523 §2.2), read
	// from ClientAuth.Assertion at every request: Keycloak's federated
	// client authentication ("Signed JWT - Federated"). No registry name
	// exists for it; servers list it as private_key_jwt.
	ClientAssertion ClientAuthMethod = "client_assertion"
)

// ClientAuthNeeds is what a client authentication method needs of a key and
// what it does with it: declared once for every method (clientAuthTable),
// so that the checks of a new key, the forms and the requests ask the
// method instead of naming methods.
type ClientAuthNeeds struct {
	// Secret: the method sends the client secret, or signs with it.
	Secret bool
	// Assertion: the method sends a signed client assertion (RFC 7523),
	// signed with the secret when Secret, else with the client's key.
	Assertion bool
	// Key: the method needs the client's private key (it signs the
	// assertion, or is the key of the TLS certificate).
	Key bool
	// Cert: the method's proof is a client certificate (RFC 8705 mTLS): the
	// key needs one, requests go to discovery's mtls_endpoint_aliases, and
	// the tokens come back bound to it.
	Cert bool
	// Public: the client has no credentials at all (a public client).
	Public bool
	// External: the assertion is not signed here but read from outside
	// (ClientAuth.Assertion); a realm's discovery lists it as
	// private_key_jwt.
	External bool
}

// KeyMadeHere reports whether a new key for the method may be made by
// shipkey (--generate-client-key) and registered with the realm afterwards:
// a key the method needs, without a certificate that would have to name it.
func (n ClientAuthNeeds) KeyMadeHere() bool { return n.Key && !n.Cert }

// clientAuthTable is every client authentication method shipkey speaks, in
// the order a form offers them, with what each needs. A new method is one
// row here and its case in applyClientAuth.
var clientAuthTable = []struct {
	Method ClientAuthMethod
	Needs  ClientAuthNeeds
}{
	{ClientSecretPost, ClientAuthNeeds{Secret: true}},
	{ClientSecretBasic, ClientAuthNeeds{Secret: true}},
	{ClientSecretJWT, ClientAuthNeeds{Secret: true, Assertion: true}},
	{PrivateKeyJWT, ClientAuthNeeds{Key: true, Assertion: true}},
	{TLSClientAuth, ClientAuthNeeds{Key: true, Cert: true}},
	{SelfSignedTLSClientAuth, ClientAuthNeeds{Key: true, Cert: true}},
	{ClientAuthNone, ClientAuthNeeds{Public: true}},
	{ClientAssertion, ClientAuthNeeds{Assertion: true, External: true}},
}

// notChosen is what the method not chosen ("") needs: the secret, in the
// form body (or by HTTP Basic when the server asks).
var notChosen = ClientAuthNeeds{Secret: true}

// Needs is what the method needs (clientAuthTable); the method not chosen
// needs the secret; an unknown method, nothing.
func (m ClientAuthMethod) Needs() ClientAuthNeeds {
	if m == "" {
		return notChosen
	}
	for _, r := range clientAuthTable {
		if r.Method == m {
			return r.Needs
		}
	}
	return ClientAuthNeeds{}
}

// ClientAuthMethods lists the methods in the order a form offers them.
func ClientAuthMethods() []ClientAuthMethod {
	out := make([]ClientAuthMethod, len(clientAuthTable))
	for i, r := range clientAuthTable {
		out[i] = r.Method
	}
	return out
}

// ClientAuthMethodsThat lists, in the table's order, the methods whose
// needs satisfy want (for messages that name them).
func ClientAuthMethodsThat(want func(ClientAuthNeeds) bool) []ClientAuthMethod {
	var out []ClientAuthMethod
	for _, r := range clientAuthTable {
		if want(r.Needs) {
			out = append(out, r.Method)
		}
	}
	return out
}

// ParseClientAuthMethod reads a stored or typed method name; "" is the
// method not chosen. An unknown name is an error of KindConfig naming the
// known ones.
func ParseClientAuthMethod(s string) (ClientAuthMethod, error) {
	m := ClientAuthMethod(strings.TrimSpace(s))
	if m == "" {
		return "", nil
	}
	names := make([]string, 0, len(clientAuthTable))
	for _, r := range clientAuthTable {
		if r.Method == m {
			return m, nil
		}
		names = append(names, string(r.Method))
	}
	return "", configError(text.Cleanf("client authentication %q is not one shipkey knows", text.Sanitize(s)).String(),
		"use one of "+strings.Join(names, ", "))
}

// UsesSecret reports whether the method sends (or signs with) the client
// secret. The method not chosen ("") does.
func (m ClientAuthMethod) UsesSecret() bool { return m.Needs().Secret }

// ClientAuth is the client authentication of one key: the method and what it
// needs. It travels instead of a loose client secret, and every request that
// authenticates the client applies it (Client.send).
type ClientAuth struct {
	// Method is the method; "" = not chosen explicitly: the form body, and
	// HTTP Basic tried once on invalid_client.
	Method ClientAuthMethod
	// Secret is the client secret (client_secret_*).
	Secret string
	// Key signs private_key_jwt assertions (and is the TLS key of
	// tls_client_auth); KeyID is its kid.
	Key   crypto.Signer
	KeyID string
	// Cert is the client certificate of tls_client_auth and
	// self_signed_tls_client_auth. When set, every request to the realm
	// presents it (over discovery's mtls_endpoint_aliases), whatever the
	// method: a realm that binds tokens to it sees it on each one.
	Cert *tls.Certificate
	// DPoP, when set, proves possession of this key on every token request
	// (RFC 9449): the tokens come back bound to it (token_type DPoP).
	DPoP *DPoPKey
	// Assertion gives the client assertion of client_assertion, fresh at
	// every request.
	Assertion *AssertionSource
}

// AuthFor is the client authentication of conn with secret: conn's method
// (AuthMethod) and the secret, which a public client never sends.
func AuthFor(conn Connection, secret string) ClientAuth {
	m := conn.AuthMethod()
	if !m.UsesSecret() {
		secret = ""
	}
	return ClientAuth{Method: m, Secret: secret}
}

// method is the method ca applies on conn: ca's own, else conn's.
func (ca ClientAuth) method(conn Connection) ClientAuthMethod {
	if ca.Method != "" {
		return ca.Method
	}
	return conn.AuthMethod()
}

// secrets lists what of ca must never appear in an error: the secret and
// the encodings HTTP Basic gives it with conn's client id.
func (ca ClientAuth) secrets(conn Connection, others ...string) []string {
	return secretsOf(conn, ca.Secret, others...)
}

// applyClientAuth puts ca into the form and the request headers for a
// request to endpoint: the client id and secret in the form
// (client_secret_post, and the method not chosen), HTTP Basic
// (client_secret_basic), a signed client assertion (the JWT methods), the
// client id alone (none and the TLS methods, whose proof is the TLS
// certificate).
func (c *Client) applyClientAuth(ctx context.Context, conn Connection, ca ClientAuth, m ClientAuthMethod, endpoint string, form url.Values, header func(user, pass string)) error {
	switch m {
	case ClientAssertion:
		assertion, err := ca.Assertion.fetch(ctx, "", clientAssertion)
		if err != nil {
			return err
		}
		form.Set("client_id", conn.ClientID)
		form.Set("client_assertion_type", ClientAssertionType)
		form.Set("client_assertion", assertion)
	case ClientSecretBasic:
		header(url.QueryEscape(conn.ClientID), url.QueryEscape(ca.Secret))
	case ClientSecretJWT, PrivateKeyJWT:
		assertion, err := c.signAssertion(conn, ca, m, endpoint)
		if err != nil {
			return err
		}
		form.Set("client_id", conn.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	case ClientAuthNone, TLSClientAuth, SelfSignedTLSClientAuth:
		form.Set("client_id", conn.ClientID)
	case "", ClientSecretPost:
		form.Set("client_id", conn.ClientID)
		if ca.Secret != "" {
			form.Set("client_secret", ca.Secret)
		}
	default:
		_, err := ParseClientAuthMethod(string(m))
		return err
	}
	return nil
}

// signAssertion signs the RFC 7523 client assertion of the JWT methods for
// the request to endpoint: iss = sub = the client id, aud = the endpoint, a
// unique jti, a short exp; HS256 over the secret for client_secret_jwt, the
// key's algorithm for private_key_jwt.
func (c *Client) signAssertion(conn Connection, ca ClientAuth, m ClientAuthMethod, endpoint string) (string, error) {
	_ = endpoint // the audience is the token endpoint, which every server accepts for every endpoint
	aud := c.assertionAudience(conn)
	if m.Needs().Secret {
		return SecretAssertion(conn.ClientID, aud, ca.Secret, c.now())
	}
	if ca.Key == nil {
		return "", configError("the key has no client key for private_key_jwt", "create it again with {{client-key FILE}} or {{generate-client-key}}")
	}
	alg, err := SigningAlg(ca.Key, c.assertionAlgs(conn))
	if err != nil {
		return "", err
	}
	kid := ca.KeyID
	if kid == "" {
		if kid, err = KeyThumbprint(ca.Key.Public()); err != nil {
			return "", err
		}
	}
	return KeyAssertion(conn.ClientID, aud, ca.Key, kid, alg, c.now())
}
