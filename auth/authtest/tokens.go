package authtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
)

// signingKey is one RSA realm key with its published public half.
type signingKey struct {
	priv *rsa.PrivateKey
	kid  string
	pub  jose.JSONWebKey
}

var shared struct {
	once sync.Once
	key  *signingKey
	err  error
}

// sharedSigningKey is the process-wide key NewServer uses by default:
// generating RSA 2048 per server would dominate test time.
func sharedSigningKey() (*signingKey, error) {
	shared.once.Do(func() { shared.key, shared.err = generateSigningKey() })
	return shared.key, shared.err
}

func generateSigningKey() (*signingKey, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return newSigningKey(priv)
}

func newSigningKey(priv *rsa.PrivateKey) (*signingKey, error) {
	pub := jose.JSONWebKey{Key: &priv.PublicKey, Algorithm: string(jose.RS256), Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	return &signingKey{priv: priv, kid: pub.KeyID, pub: pub}, nil
}

// sign serializes claims as a compact JWS with typ "JWT" and the key's kid.
func sign(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return "", err
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

// tokenClaims are the claims the server itself checks on tokens it gets back.
type tokenClaims struct {
	Exp   *int64 `json:"exp"`
	Iat   int64  `json:"iat"`
	Jti   string `json:"jti"`
	Sub   string `json:"sub"`
	Typ   string `json:"typ"`
	Azp   string `json:"azp"`
	Sid   string `json:"sid"`
	Scope string `json:"scope"`
}

// parsedToken is a token whose signature this server verified.
type parsedToken struct {
	tokenClaims
	raw map[string]any
}

var errBadToken = errors.New("token verification failed")

// expiredAt reports whether the token is expired at unix second now. Like
// Keycloak, a token is active through the second its exp names.
func (t *parsedToken) expiredAt(now int64) bool {
	return t.Exp != nil && *t.Exp != 0 && now > *t.Exp
}

func decodeVerified(payload []byte) (*parsedToken, error) {
	var p parsedToken
	if err := json.Unmarshal(payload, &p.tokenClaims); err != nil {
		return nil, errBadToken
	}
	if err := json.Unmarshal(payload, &p.raw); err != nil {
		return nil, errBadToken
	}
	return &p, nil
}

// parseAccess verifies an RS256 token signed by one of the realm keys.
func (s *Server) parseAccess(tok string) (*parsedToken, error) {
	jws, err := jose.ParseSignedCompact(strings.TrimSpace(tok), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, errBadToken
	}
	set := s.jwks()
	payload, err := jws.Verify(&set)
	if err != nil {
		return nil, errBadToken
	}
	return decodeVerified(payload)
}

// parseRefresh verifies an HS512 token signed with the realm secret, or
// looks up an opaque one.
func (s *Server) parseRefresh(tok string) (*parsedToken, error) {
	if s.opts.OpaqueRefreshTokens {
		s.mu.Lock()
		p, ok := s.opaque[strings.TrimSpace(tok)]
		s.mu.Unlock()
		if !ok {
			return nil, errBadToken
		}
		return p, nil
	}
	jws, err := jose.ParseSignedCompact(strings.TrimSpace(tok), []jose.SignatureAlgorithm{jose.HS512})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, errBadToken
	}
	payload, err := jws.Verify(s.hmacKey)
	if err != nil {
		return nil, errBadToken
	}
	p, err := decodeVerified(payload)
	if err != nil {
		return nil, err
	}
	if p.Typ != "Refresh" && p.Typ != "Offline" {
		return nil, errBadToken
	}
	return p, nil
}

// tokenResponse is Keycloak's token endpoint answer, field for field.
type tokenResponse struct {
	AccessToken      string `json:"access_token"`
	ExpiresIn        int64  `json:"expires_in"`
	RefreshExpiresIn *int64 `json:"refresh_expires_in,omitempty"` // nil: not sent
	RefreshToken     string `json:"refresh_token,omitempty"`
	TokenType        string `json:"token_type"`
	IDToken          string `json:"id_token,omitempty"`
	NotBeforePolicy  int64  `json:"not-before-policy"`
	SessionState     string `json:"session_state"`
	Scope            string `json:"scope"`
	// IssuedTokenType is RFC 8693's issued_token_type (token exchange only).
	IssuedTokenType string `json:"issued_token_type,omitempty"`
}

// accountRoles are the roles Keycloak's default roles give on the account
// client, present in every access token.
var accountRoles = []string{"manage-account", "manage-account-links", "view-profile"}

// issue mints access, refresh and (for openid) ID tokens for ss at unix
// second now. The caller holds no lock; u and ss are copies.
func (s *Server) issue(issuer string, u userRecord, ss session, now int64) (tokenResponse, error) {
	scopes := strings.Fields(ss.scope)
	key := s.currentKey()
	claims := userClaims(u, scopes)
	accessToken, err := sign(jose.RS256, key.priv, key.kid, s.accessClaims(issuer, u, ss, now, claims))
	if err != nil {
		return tokenResponse{}, err
	}
	refreshToken, refreshIn, err := s.newRefreshToken(issuer, u, ss, now)
	if err != nil {
		return tokenResponse{}, err
	}
	resp := tokenResponse{
		AccessToken:      accessToken,
		ExpiresIn:        s.accessSecs,
		RefreshExpiresIn: refreshIn,
		RefreshToken:     refreshToken,
		TokenType:        s.tokenType(ss),
		SessionState:     ss.id,
		Scope:            ss.scope,
	}
	if slices.Contains(scopes, "openid") {
		if resp.IDToken, err = sign(jose.RS256, key.priv, key.kid, s.idClaims(issuer, u, ss, now, accessToken, claims)); err != nil {
			return tokenResponse{}, err
		}
	}
	return resp, nil
}

// resourceAccess is the access token's resource_access (u's client roles,
// and the account client's, always) and its audiences: the clients u has
// roles on other than ss's own, and account.
func resourceAccess(u userRecord, clientID string) (resource map[string]any, aud []string) {
	resource = map[string]any{}
	for _, c := range slices.Sorted(maps.Keys(u.ClientRoles)) {
		if len(u.ClientRoles[c]) == 0 {
			continue
		}
		resource[c] = map[string]any{"roles": slices.Clone(u.ClientRoles[c])}
		if c != clientID && c != "account" {
			aud = append(aud, c)
		}
	}
	if _, ok := resource["account"]; !ok {
		resource["account"] = map[string]any{"roles": accountRoles}
	}
	return resource, append(aud, "account")
}

// userClaims are the claims about u that scopes ask for (email, profile),
// in the access and ID tokens and userinfo's answer.
func userClaims(u userRecord, scopes []string) map[string]any {
	claims := map[string]any{}
	if slices.Contains(scopes, "email") && u.Email != "" {
		claims["email"] = u.Email
		claims["email_verified"] = u.EmailVerified
	}
	if !slices.Contains(scopes, "profile") {
		return claims
	}
	claims["preferred_username"] = u.Username
	for claim, v := range map[string]string{
		"name":        strings.TrimSpace(u.FirstName + " " + u.LastName),
		"given_name":  u.FirstName,
		"family_name": u.LastName,
	} {
		if v != "" {
			claims[claim] = v
		}
	}
	return claims
}

// accessClaims are the access token's claims.
func (s *Server) accessClaims(issuer string, u userRecord, ss session, now int64, claims map[string]any) map[string]any {
	resource, aud := resourceAccess(u, ss.clientID)
	access := map[string]any{
		"exp":             now + s.accessSecs,
		"iat":             now,
		"jti":             "onrtro:" + newUUID(),
		"iss":             issuer,
		"sub":             u.id,
		"typ":             "Bearer",
		"azp":             ss.clientID,
		"sid":             ss.id,
		"acr":             "1",
		"allowed-origins": []string{"/*"},
		"realm_access":    map[string]any{"roles": nonNil(u.RealmRoles)},
		"resource_access": resource,
		"scope":           ss.scope,
	}
	if cnf := ss.bind.cnf(); cnf != nil {
		access["cnf"] = cnf
	}
	switch {
	case ss.audience != "":
		access["aud"] = ss.audience // a token exchanged for another audience
	case len(aud) == 1:
		access["aud"] = aud[0]
	default:
		access["aud"] = aud
	}
	maps.Copy(access, claims)
	return access
}

// newRefreshToken mints ss's refresh token (offline for an offline session)
// and its lifetime in seconds, nil when not sent (an opaque token), and
// notes it as the last one issued.
func (s *Server) newRefreshToken(issuer string, u userRecord, ss session, now int64) (string, *int64, error) {
	refresh := map[string]any{
		"iat":   now,
		"jti":   newUUID(),
		"iss":   issuer,
		"aud":   issuer,
		"sub":   u.id,
		"typ":   "Refresh",
		"azp":   ss.clientID,
		"sid":   ss.id,
		"scope": ss.scope,
	}
	var refreshIn int64
	if ss.offline {
		refresh["typ"] = "Offline"
	} else if s.refreshSecs > 0 {
		refreshIn = s.refreshSecs
		refresh["exp"] = now + refreshIn
	}
	refreshToken, refreshInPtr := "", &refreshIn
	var err error
	if s.opts.OpaqueRefreshTokens {
		refreshToken, err = s.opaqueToken(refresh)
		refreshInPtr = nil
	} else {
		refreshToken, err = sign(jose.HS512, s.hmacKey, s.hmacKid, refresh)
	}
	if err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	s.lastRT = refreshToken
	s.mu.Unlock()
	return refreshToken, refreshInPtr, nil
}

// opaqueToken is a random token that stands for the claims, kept by the
// server.
func (s *Server) opaqueToken(claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	p, err := decodeVerified(payload)
	if err != nil {
		return "", err
	}
	token := strings.ReplaceAll(newUUID()+newUUID(), "-", "")
	s.mu.Lock()
	s.opaque[token] = p
	s.mu.Unlock()
	return token, nil
}

// tokenType is the token_type of ss's tokens: DPoP when bound, else Bearer
// (lowercase when the server is told to be so).
func (s *Server) tokenType(ss session) string {
	switch {
	case ss.bind.jkt != "":
		return "DPoP"
	case s.opts.LowercaseTokenType:
		return "bearer"
	}
	return "Bearer"
}

// idClaims are the ID token's claims, at_hash that of accessToken.
func (s *Server) idClaims(issuer string, u userRecord, ss session, now int64, accessToken string, claims map[string]any) map[string]any {
	sum := sha256.Sum256([]byte(accessToken))
	id := map[string]any{
		"exp":       now + s.accessSecs,
		"iat":       now,
		"auth_time": ss.started,
		"jti":       newUUID(),
		"iss":       issuer,
		"aud":       ss.clientID,
		"sub":       u.id,
		"typ":       "ID",
		"azp":       ss.clientID,
		"sid":       ss.id,
		"at_hash":   base64.RawURLEncoding.EncodeToString(sum[:16]),
		"acr":       "1",
	}
	if ss.nonce != "" {
		id["nonce"] = ss.nonce
	}
	maps.Copy(id, claims)
	return id
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) currentKey() *signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[0]
}

// jwks is the published key set, newest key first.
func (s *Server) jwks() jose.JSONWebKeySet {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := jose.JSONWebKeySet{}
	for _, k := range s.keys {
		set.Keys = append(set.Keys, k.pub)
	}
	return set
}
