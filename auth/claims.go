package auth

import (
	"context"
	"time"
)

// Kind of a decoded token.
type TokenFormat int

const (
	FormatOpaque TokenFormat = iota // not a JWT: nothing to decode, not an error
	FormatJWT
)

// ClaimKind says how a claim is displayed.
type ClaimKind int

const (
	ClaimText   ClaimKind = iota // strings, numbers, booleans
	ClaimTime                    // exp, iat, nbf, auth_time: absolute plus relative
	ClaimList                    // arrays (aud, roles, allowed-origins)
	ClaimRoles                   // realm_access.roles, resource_access.<client>.roles
	ClaimObject                  // any other nested object, as compact JSON
)

// Claim is one decoded header or payload entry. Name and Display are always
// sanitized: safe to print on a terminal.
type Claim struct {
	Name    string    // "exp", "realm_access.roles", "resource_access.shipping.roles"
	Kind    ClaimKind //
	Value   any       // the JSON value as decoded (untrusted, never print it raw)
	Display string    // humanized, sanitized: "2026-12-06 10:00:00 UTC (in 14d 23h)"
	Items   []string  // for ClaimList and ClaimRoles: each item sanitized
	Time    time.Time // for ClaimTime
}

// Decoded is a token decoded without trusting it.
type Decoded struct {
	Format  TokenFormat
	Header  []Claim // stable order: alg, typ, kid, then the rest sorted
	Payload []Claim // stable order: well-known claims first (see ClaimOrder), then the rest sorted
	// Convenience fields, sanitized.
	Alg, Kid, Typ   string // header alg and kid; payload typ ("Bearer", "Refresh", "Offline")
	Issuer, Subject string
	Username, Email string
	ExpiresAt       time.Time
	IssuedAt        time.Time
	NotBefore       time.Time
	Scope           string
	RealmRoles      []string
	ClientRoles     map[string][]string
	Raw             map[string]any // decoded payload (untrusted)
	SymmetricSigned bool           // HS* alg: a client can never verify it (Keycloak refresh tokens)
}

// Decode parses token as a JWT (header.payload.signature, base64url JSON) and
// returns its claims humanized against now. A token that is not a JWT is
// returned as FormatOpaque with a nil error; an error means it looked like a
// JWT but its parts do not decode.
func Decode(token string, now time.Time) (*Decoded, error) {
	panic("unimplemented")
}

// SigState is the outcome of a signature check.
type SigState int

const (
	SigNotChecked SigState = iota // not asked, or cannot be checked (HS*, opaque, no matching connection)
	SigVerified
	SigFailed
)

func (s SigState) String() string {
	return [...]string{"not verified", "verified", "failed"}[s]
}

// Verification is the answer of Client.Verify.
type Verification struct {
	State  SigState
	Reason string // sanitized: why not checked, or why it failed
	KeyID  string
	Issuer string
}

// Verify checks token's signature against the JWKS of the connection among
// conns whose issuer equals the token's iss. It never fetches a URL the token
// names: a token from an issuer no connection knows is SigNotChecked with a
// reason. HS-signed tokens (Keycloak refresh tokens) are SigNotChecked: "signed
// with the realm's secret; a client cannot check it". Expiry is reported by
// Decode, not here.
func (c *Client) Verify(ctx context.Context, conns []Connection, token string) Verification {
	panic("unimplemented")
}

// Until humanizes the time from now to t: "in 14d 23h", "in 12m 30s",
// "3m ago", "now".
func Until(t, now time.Time) string { panic("unimplemented") }

// Countdown formats a remaining duration for a live display: "14d 23h 59m"
// when long, "29:59" under an hour, "0:05" under a minute, "expired" at or
// below zero.
func Countdown(d time.Duration) string { panic("unimplemented") }
