package authtest

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// The switches of a hardened realm: signed-JWT and X.509 client
// authentication, DPoP-bound tokens, pushed authorization requests and PKCE
// on the device grant, modelled on Keycloak's client authenticators
// (JWTClientAuthenticator, JWTClientSecretAuthenticator,
// X509ClientAuthenticator), DPoPUtil, ParEndpoint and the authorization
// endpoint's checks; the error texts are Keycloak's where its source names
// them.

// Client authentication methods by their RFC 8414 names (Client.AuthMethod).
const (
	AuthSecret          = ""                            // Keycloak "Client Id and Secret": Basic or form
	AuthPrivateKeyJWT   = "private_key_jwt"             // "Signed Jwt": an assertion signed by a key in Client.JWKS
	AuthClientSecretJWT = "client_secret_jwt"           // "Signed Jwt with Client Secret": HS256 over Client.Secret
	AuthTLSClient       = "tls_client_auth"             // "X509 Certificate": a certificate the realm's CA issued
	AuthSelfSignedTLS   = "self_signed_tls_client_auth" // a certificate whose key is in Client.JWKS
)

// clientAssertionType is RFC 7523's client_assertion_type.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// binding is what a token is bound to: a DPoP key's thumbprint (cnf.jkt)
// or a client certificate's (cnf.x5t#S256).
type binding struct {
	jkt, x5t string
}

func (b binding) cnf() map[string]any {
	m := map[string]any{}
	if b.jkt != "" {
		m["jkt"] = b.jkt
	}
	if b.x5t != "" {
		m["x5t#S256"] = b.x5t
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// invalidClient is Keycloak's answer to credentials that do not match.
func invalidClient() *oauthError {
	return errf(http.StatusUnauthorized, "unauthorized_client", "Invalid client or Invalid client credentials")
}

func jwtFailed(reason string) *oauthError {
	return errf(http.StatusBadRequest, "invalid_client", "Client authentication with signed JWT failed: "+reason)
}

// jwtClient authenticates a client by its RFC 7523 assertion.
func (s *Server) jwtClient(r *http.Request, form url.Values) (Client, *oauthError) {
	if oe := checkAssertionParams(form); oe != nil {
		return Client{}, oe
	}
	s.mu.Lock()
	named, ok := s.clients[form.Get("client_id")]
	s.mu.Unlock()
	if ok && !named.Disabled && named.AuthMethod == AuthFederatedJWT {
		return s.federatedClient(r, form, named)
	}
	jws, c, oe := parseClientAssertion(form.Get("client_assertion"))
	if oe != nil {
		return Client{}, oe
	}
	client, oe := s.assertingClient(form, c)
	if oe != nil {
		return Client{}, oe
	}
	verify, ok := assertionVerifiers[client.AuthMethod]
	if !ok {
		return Client{}, invalidClient()
	}
	if !verify(client, jws) {
		return Client{}, jwtFailed("Signature on JWT token failed validation")
	}
	if oe := s.checkAssertionClaims(r, c); oe != nil {
		return Client{}, oe
	}
	return client, nil
}

// assertionClaims are the claims of a client assertion the server reads.
type assertionClaims struct {
	Iss, Sub, Jti string
	Aud           audience
	Exp           *int64
}

// checkAssertionParams checks client_assertion_type and client_assertion.
func checkAssertionParams(form url.Values) *oauthError {
	switch typ := form.Get("client_assertion_type"); {
	case typ == "":
		return errf(http.StatusBadRequest, "invalid_client", "Parameter client_assertion_type is missing")
	case typ != clientAssertionType:
		return errf(http.StatusBadRequest, "invalid_client", "Parameter client_assertion_type has value '"+typ+"' but expected is '"+clientAssertionType+"'")
	case form.Get("client_assertion") == "":
		return errf(http.StatusBadRequest, "invalid_client", "client_assertion parameter missing")
	}
	return nil
}

// parseClientAssertion parses the assertion (one signature) and its claims,
// unverified.
func parseClientAssertion(assertion string) (*jose.JSONWebSignature, assertionClaims, *oauthError) {
	var c assertionClaims
	jws, err := jose.ParseSignedCompact(assertion, append(dpopAlgs, jose.HS256, jose.HS384, jose.HS512, jose.RS384, jose.RS512, jose.PS384, jose.PS512))
	if err != nil || len(jws.Signatures) != 1 {
		return nil, c, jwtFailed("Invalid token")
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c) != nil {
		return nil, c, jwtFailed("Invalid token")
	}
	return jws, c, nil
}

// assertingClient is the client the assertion's subject names, which
// client_id, when sent, must name too.
func (s *Server) assertingClient(form url.Values, c assertionClaims) (Client, *oauthError) {
	if c.Sub == "" {
		return Client{}, errf(http.StatusBadRequest, "invalid_client", "Can't identify client. Subject missing on JWT token")
	}
	if id := form.Get("client_id"); id != "" && id != c.Sub {
		return Client{}, errf(http.StatusBadRequest, "invalid_client", "client_id parameter does not match sub claim")
	}
	s.mu.Lock()
	client, ok := s.clients[c.Sub]
	s.mu.Unlock()
	if !ok || client.Disabled {
		return Client{}, errf(http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")
	}
	return client, nil
}

// assertionVerifiers check an assertion's signature, by the client's
// authentication method: a key the client registered (never an HMAC), or
// HMAC under its secret. Another method is not authenticated by assertion.
var assertionVerifiers = map[string]func(Client, *jose.JSONWebSignature) bool{
	AuthPrivateKeyJWT: func(client Client, jws *jose.JSONWebSignature) bool {
		if isHMAC(jws) {
			return false
		}
		for _, k := range client.publicKeys(jws.Signatures[0].Protected.KeyID) {
			if _, err := jws.Verify(k); err == nil {
				return true
			}
		}
		return false
	},
	AuthClientSecretJWT: func(client Client, jws *jose.JSONWebSignature) bool {
		if !isHMAC(jws) {
			return false
		}
		_, err := jws.Verify([]byte(client.Secret))
		return err == nil
	},
}

// isHMAC reports whether jws is signed with an HMAC algorithm (HS*).
func isHMAC(jws *jose.JSONWebSignature) bool {
	return strings.HasPrefix(jws.Signatures[0].Protected.Algorithm, "HS")
}

// checkAssertionClaims checks a verified assertion's issuer, expiry,
// audience and id, which may be used once.
func (s *Server) checkAssertionClaims(r *http.Request, c assertionClaims) *oauthError {
	now := s.now()
	switch {
	case c.Iss != c.Sub:
		return jwtFailed("Issuer mismatch")
	case c.Exp == nil || now.Unix() > *c.Exp:
		return jwtFailed("Token is not active")
	case !s.validAudience(r, c.Aud):
		return jwtFailed("Token audience doesn't match domain. Realm issuer is '" + s.issuerFor(r) + "' but audience from token is '" + strings.Join(c.Aud, " ") + "'")
	case c.Jti == "":
		return jwtFailed("Missing ID on the token")
	case !s.assertionJTIs.Fresh(c.Sub+" "+c.Jti, time.Unix(*c.Exp, 0), now):
		return jwtFailed("Token reuse detected")
	}
	return nil
}

// audience is a JWT aud: one string or several.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	err := json.Unmarshal(b, &many)
	*a = many
	return err
}

// validAudience: Keycloak accepts the issuer and the realm's endpoints
// (token, introspection, PAR…), at either listener.
func (s *Server) validAudience(r *http.Request, aud audience) bool {
	bases := []string{s.issuerFor(r), s.Issuer()}
	if s.mtlsURL != "" {
		bases = append(bases, s.mtlsURL+"/auth/realms/"+s.realm)
	}
	for _, a := range aud {
		for _, b := range bases {
			if a == b || strings.HasPrefix(a, b+"/protocol/openid-connect/") {
				return true
			}
		}
	}
	return false
}

// issuerFor is the issuer as seen from r: the listener's own URL, except
// that the mTLS listener serves the realm under its plain issuer.
func (s *Server) issuerFor(r *http.Request) string {
	if r.TLS != nil && s.mtlsURL != "" {
		return s.Issuer()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/auth/realms/" + s.realm
}

// publicKeys are the client's registered keys, the one named kid first
// (all of them when kid names none).
func (c Client) publicKeys(kid string) []any {
	var set jose.JSONWebKeySet
	if json.Unmarshal([]byte(c.JWKS), &set) != nil {
		return nil
	}
	var out []any
	for _, k := range set.Keys {
		if kid == "" || k.KeyID == kid || k.KeyID == "" {
			out = append(out, k.Key)
		}
	}
	return out
}

// tlsClient authenticates a client by the certificate of the TLS
// connection (RFC 8705 §2); client_id comes from the form.
func (s *Server) tlsClient(r *http.Request, client Client) (Client, *oauthError) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return Client{}, errf(http.StatusUnauthorized, "invalid_client", "Client certificate missing")
	}
	leaf := r.TLS.PeerCertificates[0]
	switch client.AuthMethod {
	case AuthTLSClient:
		want := client.CertSubject
		if want == "" {
			want = client.ID
		}
		if s.ca == nil || !s.ca.verifyClient(r.TLS.PeerCertificates) {
			return Client{}, errf(http.StatusUnauthorized, "unauthorized_client", "Certificate validation's failed.")
		}
		if leaf.Subject.CommonName != want {
			return Client{}, errf(http.StatusUnauthorized, "unauthorized_client", "Certificate Subject DN didn't match the expected one")
		}
	case AuthSelfSignedTLS:
		ok := false
		for _, k := range client.publicKeys("") {
			if eq, is := k.(interface{ Equal(crypto.PublicKey) bool }); is && eq.Equal(leaf.PublicKey) {
				ok = true
			}
		}
		if !ok {
			return Client{}, errf(http.StatusUnauthorized, "unauthorized_client", "Certificate validation's failed.")
		}
	}
	return client, nil
}

// certThumbprint is the x5t#S256 of the connection's client certificate.
func certThumbprint(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	sum := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// requestURL is the absolute URL r was sent to, as a DPoP proof names it.
func requestURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.Path
}

// dpopProof checks the DPoP header of a token (or PAR) request and returns
// the key's thumbprint ("" without a proof). A client that requires DPoP
// must send one.
func (s *Server) dpopProof(w http.ResponseWriter, r *http.Request, client Client) (string, *oauthError) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) == 0 {
		if client.DPoP {
			return "", errf(http.StatusBadRequest, "invalid_request", "DPoP proof is missing")
		}
		return "", nil
	}
	if len(proofs) > 1 {
		return "", errf(http.StatusBadRequest, "invalid_dpop_proof", "Multiple DPoP proofs")
	}
	jkt, err := CheckDPoP(proofs[0], DPoPRequest{
		Method: r.Method, URL: requestURL(r), Nonce: s.currentDPoPNonce(), Now: s.now(), Replay: &s.dpopJTIs,
	})
	if err != nil {
		e := err.(*DPoPError)
		if e.Code == "use_dpop_nonce" {
			w.Header().Set("DPoP-Nonce", s.currentDPoPNonce())
		}
		return "", errf(http.StatusBadRequest, e.Code, e.Description)
	}
	return jkt, nil
}

// currentDPoPNonce is the nonce proofs must carry ("" when not required).
func (s *Server) currentDPoPNonce() string {
	if !s.opts.DPoPNonces {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dpopNonce
}

// RotateDPoPNonce makes the server require a new DPoP nonce, as a server
// does from time to time: the next proof with the old one gets
// use_dpop_nonce.
func (s *Server) RotateDPoPNonce() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dpopNonce = randomToken(16)
}

// parRequest is one pushed authorization request.
type parRequest struct {
	clientID string
	params   url.Values
	jkt      string // the PAR request's own DPoP proof key
	expires  int64
}

// parPrefix is the request_uri scheme Keycloak's PAR endpoint issues.
const parPrefix = "urn:ietf:params:oauth:request_uri:"

// par is RFC 9126's endpoint at Keycloak's …/protocol/openid-connect/ext/par/request.
func (s *Server) par(w http.ResponseWriter, r *http.Request, _ string) {
	form, client, e := s.clientForm(r)
	if e == nil && form.Has("request_uri") {
		e = errf(http.StatusBadRequest, "invalid_request", "It is not allowed to include request_uri to PAR.")
	}
	var jkt string
	if e == nil {
		jkt, e = s.dpopProof(w, r, Client{})
	}
	if e == nil && jkt != "" && form.Get("dpop_jkt") != "" && form.Get("dpop_jkt") != jkt {
		e = errf(http.StatusBadRequest, "invalid_dpop_proof", "DPoP Proof public key thumbprint does not match dpop_jkt")
	}
	if e == nil && !redirectAllowed(client, form.Get("redirect_uri")) {
		e = errf(http.StatusBadRequest, "invalid_request", "Invalid parameter: redirect_uri")
	}
	if e != nil {
		s.writeError(w, e)
		return
	}
	params := url.Values{}
	for k, v := range form {
		switch k {
		case "client_secret", "client_assertion", "client_assertion_type":
		default:
			params[k] = v
		}
	}
	params.Set("client_id", client.ID)
	uri := parPrefix + randomToken(24)
	s.mu.Lock()
	s.pars[uri] = &parRequest{clientID: client.ID, params: params, jkt: jkt, expires: s.now().Unix() + 60}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"request_uri": uri, "expires_in": 60})
}

// pushedParams resolves an authorization request: the pushed one named by
// request_uri (dropPAR ends it once the person answered), or the query itself. A client that requires PAR
// gets Keycloak's refusal without one.
func (s *Server) pushedParams(q url.Values, client Client) (url.Values, *oauthError) {
	uri := q.Get("request_uri")
	if uri == "" {
		if client.RequirePAR {
			return nil, errf(http.StatusBadRequest, "invalid_request", "Pushed Authorization Request is only allowed.")
		}
		return q, nil
	}
	s.mu.Lock()
	p, ok := s.pars[uri]
	s.mu.Unlock()
	if !ok || p.clientID != client.ID || s.now().Unix() > p.expires {
		return nil, errf(http.StatusBadRequest, "invalid_request_uri", "PAR not found. not issued or used multiple times.")
	}
	out := url.Values{}
	for k, v := range p.params {
		out[k] = v
	}
	if p.jkt != "" && out.Get("dpop_jkt") == "" {
		out.Set("dpop_jkt", p.jkt)
	}
	// What the page posts back besides the request (username, action).
	for _, k := range []string{"username", "password", "action"} {
		if q.Has(k) {
			out.Set(k, q.Get(k))
		}
	}
	return out, nil
}

// dropPAR ends a pushed request once it has been answered: a request_uri
// is used once.
func (s *Server) dropPAR(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pars, uri)
}

// checkBoundToken refuses a bound access token presented without its
// binding at a resource (userinfo): a DPoP-bound one needs the DPoP scheme
// and a proof by its key, a certificate-bound one the same certificate.
func (s *Server) checkBoundToken(r *http.Request, p *parsedToken, tok, scheme string) *oauthError {
	cnf, _ := p.raw["cnf"].(map[string]any)
	deny := func(code, desc string) *oauthError {
		return &oauthError{status: http.StatusUnauthorized, code: code, desc: desc,
			wwwAuthenticate: `DPoP algs="` + strings.Join(dpopAlgNames(), " ") + `", error="` + code + `"`}
	}
	if x5t, _ := cnf["x5t#S256"].(string); x5t != "" && certThumbprint(r) != x5t {
		return deny("invalid_token", "Client certificate missing, or its thumbprint and one in the token did NOT match")
	}
	jkt, _ := cnf["jkt"].(string)
	if jkt == "" {
		return nil
	}
	if scheme != "DPoP" || r.Header.Get("DPoP") == "" {
		return deny("invalid_token", "DPoP proof is missing")
	}
	got, err := CheckDPoP(r.Header.Get("DPoP"), DPoPRequest{Method: r.Method, URL: requestURL(r), AccessToken: tok, Now: s.now(), Replay: &s.dpopJTIs})
	if err != nil {
		return deny("invalid_dpop_proof", err.(*DPoPError).Description)
	}
	if got != jkt {
		return deny("invalid_dpop_proof", "DPoP proof public key thumbprint does not match the token's")
	}
	return nil
}

// isConfidential: the client proves who it is (a secret, a key or a
// certificate), so it may have a service account.
func (c Client) isConfidential() bool { return c.Secret != "" || c.AuthMethod != AuthSecret }
