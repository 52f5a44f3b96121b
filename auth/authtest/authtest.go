// Package authtest runs a Keycloak-compatible OAuth 2.0 server on loopback, in
// the spirit of net/http/httptest: for tests and for `shipkey demo`.
//
// It serves one realm under {URL}/auth/realms/{realm}/ with Keycloak's paths,
// status codes and JSON error bodies (see ../shared/notes/keycloak.md), signs
// access tokens RS256 with realistic Keycloak claims, issues HS512 JWT refresh
// tokens, and can be told to fail in every way a real server can. It never
// listens on anything but a loopback address, never logs a password, secret
// or token, and never imports other shipkey packages (auth's tests use it).
package authtest

import (
	"crypto/rsa"
	"time"
)

// User is a realm user.
type User struct {
	Username, Password         string
	Email, FirstName, LastName string
	EmailVerified              bool                // email_verified
	Disabled                   bool                // "Account disabled"
	RequiredActions            bool                // "Account is not fully set up"
	RealmRoles                 []string            // realm_access.roles
	ClientRoles                map[string][]string // resource_access.<client>.roles
}

// Client is a registered client application.
type Client struct {
	ID, Secret          string
	Disabled            bool // invalid_client
	NoDirectAccessGrant bool // password grant refused: unauthorized_client
}

// Config describes the realm. Zero fields take Keycloak-like defaults.
type Config struct {
	Realm      string // default "master"
	Users      []User
	Clients    []Client
	AccessTTL  time.Duration // default 5m (the Shipping Service uses 1314000s)
	RefreshTTL time.Duration // default 30m; negative means no expiry (refresh_expires_in 0, offline-like)
	// RevokeRefreshToken turns on rotation with reuse detection: a refresh
	// token may be redeemed once; reusing it fails with "Maximum allowed
	// refresh token reuse exceeded" and ends the session.
	RevokeRefreshToken bool
	Scope              string           // granted scope, default "email profile"
	Now                func() time.Time // default time.Now
	// SigningKey signs access and ID tokens (RS256). Nil uses one 2048-bit
	// key generated once per process and shared by every Server, which keeps
	// tests fast; set it (or call Server.RotateKey) when a test needs tokens
	// that another server's JWKS must not verify.
	SigningKey *rsa.PrivateKey
}

// Fault makes the next Times requests to an endpoint misbehave.
type Fault struct {
	Endpoint  string        // "token", "certs", "logout", "userinfo", "introspect", "revoke", "discovery"
	Times     int           // how many requests it applies to (0 means 1)
	Status    int           // answer with this status and Body
	Body      string        //
	Delay     time.Duration // wait before answering (bounded by the request's context)
	Malformed bool          // 200 with a body that is not JSON
	Huge      bool          // 200 with a body over 2 MiB
	Drop      bool          // close the connection without an answer
}

// Demo credentials served by DemoConfig.
const (
	DemoRealm        = "master"
	DemoClientID     = "shipping-api"
	DemoClientSecret = "demo-client-secret"
	DemoUsername     = "demo"
	DemoPassword     = "demo-password"
)
