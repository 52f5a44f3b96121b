package auth

import (
	"encoding/json"
	"time"

	"golang.org/x/oauth2"
)

// SkewTolerance is how far a JWT's exp may differ from ObtainedAt+ExpiresIn
// before the difference is reported as clock skew.
const SkewTolerance = time.Minute

// TokenSet is one token response, with every field the server sent and the
// absolute times derived from it. Lifetimes are seconds. A zero
// RefreshExpiresAt means the refresh token has no known expiry; RefreshExpirySource
// says why (no expiry, or not stated by the server). Nothing here assumes the
// access token expires before the refresh token: the Shipping Service issues
// 15-day access tokens and 30-minute refresh tokens.
type TokenSet struct {
	AccessToken      string `json:"access_token"`
	TokenType        string `json:"token_type"`
	RefreshToken     string `json:"refresh_token,omitempty"`
	IDToken          string `json:"id_token,omitempty"`
	ExpiresIn        int64  `json:"expires_in"`
	RefreshExpiresIn int64  `json:"refresh_expires_in"`
	// NotBeforePolicy is Keycloak's not-before-policy; nil when the server
	// did not send it (most servers that are not Keycloak).
	NotBeforePolicy *int64 `json:"not-before-policy,omitempty"`
	SessionState    string `json:"session_state,omitempty"`
	Scope           string `json:"scope,omitempty"`

	// ObtainedAt is when the response arrived, by the client's clock.
	ObtainedAt time.Time `json:"obtained_at"`
	// AccessExpiresAt is ObtainedAt+ExpiresIn; zero when the server stated no
	// lifetime and the token is not a JWT with exp.
	AccessExpiresAt time.Time `json:"access_expires_at,omitzero"`
	// RefreshExpiresAt is when the refresh token expires, by the source
	// RefreshExpirySource names; zero means no known expiry.
	RefreshExpiresAt time.Time `json:"refresh_expires_at,omitzero"`
	// RefreshExpirySource says where RefreshExpiresAt comes from, so that
	// nothing shows more than the server said:
	//   - RefreshExpiryResponse ("response"): refresh_expires_in > 0;
	//   - RefreshExpiryOffline ("offline"): refresh_expires_in present and 0,
	//     Keycloak's "this refresh token does not expire" (offline tokens);
	//     RefreshExpiresAt is zero;
	//   - RefreshExpiryJWT ("jwt"): refresh_expires_in absent, but the refresh
	//     token is a JWT whose exp gives RefreshExpiresAt (unverified: a hint
	//     for display and scheduling, the server decides);
	//   - RefreshExpiryUnstated (""): the server did not say; RefreshExpiresAt is
	//     zero and the expiry must be shown as "not stated", not as "no
	//     expiry" (RefreshExpiryNote).
	RefreshExpirySource string `json:"refresh_expiry_source,omitempty"`
	// JWTExpiresAt is the access token's exp claim when it is a JWT.
	JWTExpiresAt time.Time `json:"jwt_expires_at,omitzero"`
}

// The values of TokenSet.RefreshExpirySource.
const (
	RefreshExpiryUnstated = ""
	RefreshExpiryResponse = "response"
	RefreshExpiryOffline  = "offline"
	RefreshExpiryJWT      = "jwt"
)

// Words for a token without a known expiry, the same on every screen.
const (
	// NoExpiryOffline: the server said refresh_expires_in 0 (an offline token).
	NoExpiryOffline = "no expiry (offline token)"
	// ExpiryNotStated: the server said nothing about the lifetime.
	ExpiryNotStated = "not stated"
)

// RefreshExpiryNote says why RefreshExpiresAt is zero, in the words every
// screen uses: NoExpiryOffline only when the server said 0, else
// ExpiryNotStated. Never "no expiry" for a server that said nothing.
func (t *TokenSet) RefreshExpiryNote() string {
	if t.RefreshExpirySource == RefreshExpiryOffline {
		return NoExpiryOffline
	}
	return ExpiryNotStated
}

// Access is the access token's timing (see Expiry for the policy).
func (t *TokenSet) Access() Expiry {
	return Expiry{ObtainedAt: t.ObtainedAt, At: t.AccessExpiry()}
}

// Refresh is the refresh token's timing; a zero At means no stated expiry.
func (t *TokenSet) Refresh() Expiry {
	return Expiry{ObtainedAt: t.ObtainedAt, At: t.RefreshExpiresAt}
}

// AccessValid reports whether the access token may be handed out at now
// without renewal: present and not due (Expiry.RenewDue).
func (t *TokenSet) AccessValid(now time.Time) bool {
	return t != nil && t.AccessToken != "" && !t.Access().RenewDue(now)
}

// RefreshValid reports whether the refresh token can still be redeemed at now
// as far as the client can tell: present and not past its stated expiry (the
// server may still have ended the session).
func (t *TokenSet) RefreshValid(now time.Time) bool {
	return t != nil && t.RefreshToken != "" && !t.Refresh().Expired(now)
}

// AccessExpiry is the earliest known expiry of the access token: the stated
// lifetime, or the JWT exp when that is earlier or the only one known.
func (t *TokenSet) AccessExpiry() time.Time {
	switch {
	case t.AccessExpiresAt.IsZero():
		return t.JWTExpiresAt
	case t.JWTExpiresAt.IsZero() || t.AccessExpiresAt.Before(t.JWTExpiresAt):
		return t.AccessExpiresAt
	default:
		return t.JWTExpiresAt
	}
}

// Skew is the difference between the JWT's exp and ObtainedAt+ExpiresIn, and
// whether it exceeds SkewTolerance (a sign the clocks disagree). It is zero and
// false when either is unknown.
func (t *TokenSet) Skew() (time.Duration, bool) {
	if t.AccessExpiresAt.IsZero() || t.JWTExpiresAt.IsZero() {
		return 0, false
	}
	d := t.JWTExpiresAt.Sub(t.AccessExpiresAt)
	return d, d > SkewTolerance || d < -SkewTolerance
}

// Redacted returns a copy with every secret (access, refresh and ID token)
// removed: what may be written as plain metadata.
func (t TokenSet) Redacted() TokenSet {
	t.AccessToken, t.RefreshToken, t.IDToken = "", "", ""
	return t
}

// OAuth2 converts the set for use with golang.org/x/oauth2 clients.
func (t *TokenSet) OAuth2() *oauth2.Token {
	tok := &oauth2.Token{
		AccessToken:  t.AccessToken,
		TokenType:    t.TokenType,
		RefreshToken: t.RefreshToken,
		Expiry:       t.Access().RenewAt(),
		ExpiresIn:    t.ExpiresIn,
	}
	extra := map[string]any{
		"refresh_expires_in": t.RefreshExpiresIn,
		"session_state":      t.SessionState,
		"scope":              t.Scope,
	}
	if t.NotBeforePolicy != nil {
		extra["not-before-policy"] = *t.NotBeforePolicy
	}
	return tok.WithExtra(extra)
}

// Header is the value of the Authorization header that carries the token.
func (t *TokenSet) Header() string { return "Bearer " + t.AccessToken }

// UnmarshalJSON reads a TokenSet, inferring RefreshExpirySource for sets
// written before the field existed: a positive refresh_expires_in can only
// have come from the response.
func (t *TokenSet) UnmarshalJSON(data []byte) error {
	type plain TokenSet
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*t = TokenSet(p)
	if t.RefreshExpirySource == RefreshExpiryUnstated && t.RefreshExpiresIn > 0 && !t.RefreshExpiresAt.IsZero() {
		t.RefreshExpirySource = RefreshExpiryResponse
	}
	return nil
}
