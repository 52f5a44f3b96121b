package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// A key with an auth URL goes straight to Keycloak's token path, without
// discovery; when the realm refuses it, what the realm's discovery says
// (the client authentication methods and DPoP it takes) still names the
// way out: the method and --client-auth, or --dpop, not "check the secret"
// or "run the command again".
func TestRefusalsNameTheRealmsMethodsAndDPoPFromDiscovery(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-of-a-hardened-client"
	s := cliServer(t, &cliClock{}, func(cfg *authtest.Config) {
		cfg.Now = time.Now
		cfg.Clients = append(cfg.Clients,
			authtest.Client{ID: "cc-secret-jwt", Secret: authtest.DemoJWTSecret, AuthMethod: authtest.AuthClientSecretJWT, ServiceAccount: true},
			authtest.Client{ID: "cc-key-jwt", Secret: secret, AuthMethod: authtest.AuthPrivateKeyJWT, ServiceAccount: true},
			authtest.Client{ID: "cc-mtls", Secret: secret, AuthMethod: authtest.AuthTLSClient, ServiceAccount: true},
			authtest.Client{ID: "cc-plain", Secret: secret, ServiceAccount: true},
		)
	})
	for _, tc := range []struct {
		name, client, secret string
		fault                string // the token endpoint's answer, as a foreign server's (401 unless invalid_grant)
		kind                 ErrorKind
		want                 []string
	}{
		{name: "client_secret_jwt client, no method chosen", client: "cc-secret-jwt", secret: authtest.DemoJWTSecret, kind: KindInvalidClient,
			want: []string{"client_secret_post or client_secret_basic", "--client-auth client_secret_jwt"}},
		{name: "private_key_jwt client given a secret", client: "cc-key-jwt", secret: secret, kind: KindInvalidClient,
			want: []string{"client_secret_post or client_secret_basic", "--client-auth private_key_jwt"}},
		{name: "mTLS client given a secret", client: "cc-mtls", secret: secret, kind: KindInvalidClient,
			want: []string{"client_secret_post or client_secret_basic", "--client-auth tls_client_auth --client-cert FILE --client-key FILE"}},
		{name: "refusal without a reason", client: "cc-plain", secret: secret, kind: KindInvalidClient,
			fault: `{"error":"invalid_client","error_description":"client authentication failed"}`,
			want:  []string{"the client id or client secret was refused", "other than client_secret_post or client_secret_basic (the realm takes ", "private_key_jwt", "--client-auth METHOD"}},
		{name: "DPoP required, said as a generic invalid_grant", client: "cc-plain", secret: secret, kind: KindConfig,
			fault: `{"error":"invalid_grant","error_description":"grant request is invalid"}`,
			want:  []string{"takes DPoP proofs", "create the key again with --dpop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != "" {
				status := 401
				if strings.Contains(tc.fault, "invalid_grant") {
					status = 400
				}
				s.Inject(authtest.Fault{Endpoint: "token", Status: status, Body: tc.fault, Times: 2})
			}
			conn := Connection{AuthURL: s.URL(), Realm: s.Realm(), ClientID: tc.client}
			_, err := cliNewClient(t, Options{}).Obtain(cliCtx(t), GrantClientCredentials, Request{Conn: conn, ClientAuth: ClientAuth{Secret: tc.secret}})
			e := cliSafeErr(t, err, tc.kind, tc.secret)
			for _, w := range tc.want {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("%s: the line does not say %q:\n%s", tc.name, w, e.Error())
				}
			}
		})
	}
}
