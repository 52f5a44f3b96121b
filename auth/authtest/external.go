package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key-less logins: the realm trusts an external issuer of identity tokens
// (a CI system's OIDC issuer, a Kubernetes cluster's service account
// issuer), as Keycloak does through an identity provider: its assertions
// are a JWT authorization grant (RFC 7523 §2.1, Keycloak 26.5's
// JWTAuthorizationGrantType: invalid_grant with the validator's words) and
// a client's authentication (RFC 7523 §2.2, Keycloak 26.6's federated
// client authentication, "Signed JWT - Federated").

// jwtBearerGrant is RFC 7523's grant_type.
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// AuthFederatedJWT is Keycloak's "Signed JWT - Federated" client
// authenticator (Client.AuthMethod): the client assertion is a token of the
// realm's external issuer whose subject is Client.FederatedSubject.
const AuthFederatedJWT = "federated-jwt"

// DemoCISubject is the subject of the demo realm's external issuer's
// assertions (Server.External): linked to the demo user (the JWT bearer
// grant signs in as demo) and the federated subject of DemoCIClientID.
const DemoCISubject = "repo:demo/shipping:ref:refs/heads/main"

// DemoCIClientID is the demo realm's client for key-less CI logins: it
// authenticates with an assertion of the external issuer (federated JWT)
// and may use the JWT bearer grant.
const DemoCIClientID = "shipping-ci"

// ExternalIssuer is an issuer of identity tokens outside the realm: the
// realm's own (Config.ExternalIssuer, trusted, at Server.External), or one
// made by NewExternalIssuer (trusted by no realm: refusals).
type ExternalIssuer struct {
	// URL is its issuer identifier (iss).
	URL string
	key *ecdsa.PrivateKey
	kid string
}

// NewExternalIssuer makes an issuer named url with a new EC P-256 key.
func NewExternalIssuer(url string) (*ExternalIssuer, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &ExternalIssuer{URL: url, key: k, kid: randomToken(8)}, nil
}

// Assertion is what an ExternalIssuer mints: zero fields take defaults.
type Assertion struct {
	Subject  string        // sub; default DemoCISubject
	Audience []string      // aud; the realm's issuer when minted at a Server
	TTL      time.Duration // exp - iat; default 5 minutes; negative: expired already
	Now      time.Time     // iat; default time.Now()
}

// Mint signs an assertion (ES256, a unique jti).
func (x *ExternalIssuer) Mint(a Assertion) (string, error) {
	if a.Subject == "" {
		a.Subject = DemoCISubject
	}
	if a.TTL == 0 {
		a.TTL = 5 * time.Minute
	}
	if a.Now.IsZero() {
		a.Now = time.Now()
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: x.key, KeyID: x.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	iat := a.Now
	if a.TTL < 0 {
		iat = a.Now.Add(2 * a.TTL) // issued, and expired, in the past
	}
	claims, err := json.Marshal(map[string]any{
		"iss": x.URL, "sub": a.Subject, "aud": a.Audience, "jti": randomToken(12),
		"iat": iat.Unix(), "nbf": iat.Unix(), "exp": a.Now.Add(a.TTL).Unix(),
	})
	if err != nil {
		return "", err
	}
	obj, err := signer.Sign(claims)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

// JWKS is the issuer's public key set (JSON).
func (x *ExternalIssuer) JWKS() []byte {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: x.key.Public(), KeyID: x.kid, Algorithm: string(jose.ES256), Use: "sig"}}})
	return b
}

// External is the realm's trusted external issuer (nil without
// Config.ExternalIssuer). Its URL is URL()+"/ci", where it serves its
// discovery document and key set, and at /ci/token mints assertions for
// anyone who asks (as a CI system's token request URL does for its jobs):
// GET ?sub=SUBJECT&aud=AUDIENCE&ttl=DURATION, defaults DemoCISubject, the
// realm's issuer and 5m.
func (s *Server) External() *ExternalIssuer { return s.external }

// MintAssertion is External().Mint for the realm: aud its issuer, iat its
// clock.
func (s *Server) MintAssertion(a Assertion) (string, error) {
	if a.Audience == nil {
		a.Audience = []string{s.Issuer()}
	}
	if a.Now.IsZero() {
		a.Now = s.now()
	}
	return s.external.Mint(a)
}

// Assertions are the external assertions the realm received, oldest first:
// the JWT bearer grant's and the federated clients' (a test checks that a
// renewal carried a new one).
func (s *Server) Assertions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.assertions)
}

func (s *Server) recordAssertion(a string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.assertions = append(s.assertions, a)
}

// externalRoutes serves the external issuer beside the realm.
func (s *Server) externalRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /ci/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": s.external.URL, "jwks_uri": s.external.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("GET /ci/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.external.JWKS())
	})
	mux.HandleFunc("GET /ci/token", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a := Assertion{Subject: q.Get("sub")}
		if aud := q.Get("aud"); aud != "" {
			a.Audience = []string{aud}
		}
		if ttl := q.Get("ttl"); ttl != "" {
			d, err := time.ParseDuration(ttl)
			if err != nil {
				http.Error(w, "ttl: "+strconv.Quote(ttl)+" is not a duration", http.StatusBadRequest)
				return
			}
			a.TTL = d
		}
		tok, err := s.MintAssertion(a)
		if err != nil {
			http.Error(w, "cannot sign", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/jwt")
		_, _ = w.Write([]byte(tok + "\n"))
	})
}

// externalClaims are the claims the realm checks of an external assertion.
type externalClaims struct {
	Iss, Sub, Jti string
	Aud           audience
	Exp           *int64
	Iat           *int64
}

// checkExternal verifies an external assertion as Keycloak's
// AbstractBaseJWTValidator and identity provider do, in their order: an
// issuer the realm trusts, active, signed by the issuer, for the realm.
// reason is the validator's words ("" when it passes).
func (s *Server) checkExternal(r *http.Request, assertion string) (externalClaims, string) {
	s.recordAssertion(assertion)
	jws, err := jose.ParseSignedCompact(assertion, []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.RS256, jose.PS256, jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return externalClaims{}, "Invalid token"
	}
	var c externalClaims
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c) != nil {
		return externalClaims{}, "Invalid token"
	}
	now := s.now().Unix()
	switch {
	case c.Iss == "":
		return c, "Missing claim: iss"
	case s.external == nil || c.Iss != s.external.URL:
		return c, "No Identity Provider for provided issuer"
	case c.Exp == nil:
		return c, "Token exp claim is required"
	case now > *c.Exp:
		return c, "Token is not active"
	}
	if _, err := jws.Verify(&s.external.key.PublicKey); err != nil {
		return c, "Invalid token signature"
	}
	if !s.validAudience(r, c.Aud) {
		return c, "Invalid token audience"
	}
	return c, ""
}

// jwtBearerGrantFor is Keycloak's JWT authorization grant: the client must
// be confidential and allowed the grant; the assertion's subject must be
// linked to a user (User.ExternalSubject). No refresh token: Keycloak's
// grant never issues one.
func (s *Server) jwtBearerGrantFor(form url.Values, r *http.Request, client Client, issuer string, bind binding) (tokenResponse, *oauthError) {
	if !client.isConfidential() {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Public client not allowed to use authorization grant")
	}
	if !client.JWTBearerGrant {
		return tokenResponse{}, errf(http.StatusBadRequest, "unauthorized_client", "Client not allowed to use the JWT authorization grant")
	}
	assertion := form.Get("assertion")
	if assertion == "" {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Missing parameter:assertion")
	}
	c, reason := s.checkExternal(r, assertion)
	if reason != "" {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", reason)
	}
	var username string
	s.mu.Lock()
	for _, u := range s.users {
		if u.ExternalSubject != "" && u.ExternalSubject == c.Sub {
			username = u.Username
		}
	}
	s.mu.Unlock()
	if username == "" {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "User not found")
	}
	scope, _, e := s.grantedScope(form.Get("scope"))
	if e != nil {
		return tokenResponse{}, e
	}
	resp, e := s.issueFor(issuer, username, client.ID, scope, "", bind)
	if e != nil {
		return tokenResponse{}, e
	}
	zero := int64(0)
	resp.RefreshToken, resp.RefreshExpiresIn = "", &zero
	return resp, nil
}

// federatedClient authenticates a client whose authenticator is
// AuthFederatedJWT by an assertion of the external issuer whose subject is
// the client's FederatedSubject.
func (s *Server) federatedClient(r *http.Request, form url.Values, client Client) (Client, *oauthError) {
	c, reason := s.checkExternal(r, form.Get("client_assertion"))
	if reason != "" {
		return Client{}, jwtFailed(reason)
	}
	if c.Sub != client.FederatedSubject {
		return Client{}, jwtFailed("Invalid subject: the assertion is not the client's")
	}
	return client, nil
}
