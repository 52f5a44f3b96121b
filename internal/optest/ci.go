package optest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// CI is the provider's key-less CI logins (see server.js): ClientID
// authenticates with private_key_jwt by client assertions a CI system
// signs with a key registered with the client (MintClientAssertion: iss =
// sub = the client), and may use the JWT bearer grant (RFC 7523 §2.1),
// registered in server.js, with tokens of Issuer, an issuer the provider
// trusts (MintAssertion). The grant issues no refresh token, and the
// client's access tokens live 2 s.
type CI struct {
	ClientID string
	// Issuer is the trusted external issuer of the grant's assertions.
	Issuer *authtest.ExternalIssuer
	// client signs the client's assertions (its key is the client's JWKS).
	client *authtest.ExternalIssuer
}

// make fills in the issuers and returns the environment server.js reads
// them from.
func (c *CI) make() ([]string, error) {
	c.ClientID = "shipping-ci"
	var err error
	if c.Issuer, err = authtest.NewExternalIssuer("https://ci.shipkey.test"); err != nil {
		return nil, err
	}
	if c.client, err = authtest.NewExternalIssuer(c.ClientID); err != nil {
		return nil, err
	}
	return []string{"SHIPKEY_OP_CI_CLIENT_ID=" + c.ClientID, "SHIPKEY_OP_CI_ISSUER=" + c.Issuer.URL,
		"SHIPKEY_OP_CI_JWKS=" + string(c.Issuer.JWKS()), "SHIPKEY_OP_CI_CLIENT_JWKS=" + string(c.client.JWKS())}, nil
}

// MintAssertion is a token of Issuer for the provider at issuer (a CI job's
// identity token), for the subject sub, valid ttl (negative: expired).
func (c CI) MintAssertion(issuer, sub string, ttl time.Duration) (string, error) {
	return c.Issuer.Mint(authtest.Assertion{Subject: sub, Audience: []string{issuer}, TTL: ttl})
}

// MintClientAssertion is a private_key_jwt client assertion of ClientID
// for the provider at issuer, valid ttl, signed outside shipkey.
func (c CI) MintClientAssertion(issuer string, ttl time.Duration) (string, error) {
	return c.client.Mint(authtest.Assertion{Subject: c.ClientID, Audience: []string{issuer}, TTL: ttl})
}

// Assertions are the assertions the provider received at its token
// endpoint, oldest first: the JWT bearer grant's and the client
// assertions.
func (p *Provider) Assertions() ([]string, error) {
	var got []string
	if err := getJSON(&http.Client{Timeout: 10 * time.Second}, p.Issuer+"/test/assertions", &got); err != nil {
		return nil, fmt.Errorf("the provider's assertions: %w", err)
	}
	return got, nil
}
