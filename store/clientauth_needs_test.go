package store

import (
	"strings"
	"testing"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// A new key's checks ask the method's needs (auth's client authentication
// table): a key is demanded exactly when the method needs one, and refused
// when it does not; a certificate likewise; a method that signs with the
// secret refuses an empty one.
func TestNewKeyChecksFollowTheClientAuthTable(t *testing.T) {
	t.Parallel()
	certPEM, keyPEM, err := authtest.SelfSignedClient("shipping-cli")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-s3cret-s3cret-s3cret-s3cret"
	for _, m := range append(auth.ClientAuthMethods(), "") {
		n := m.Needs()
		try := func(secret string, key, cert []byte) error {
			d := Definition{Connection: auth.Connection{ClientID: "shipping-cli", ClientAuth: m}}
			if n.External {
				d.ClientAssertionFile = "ci.jwt" // its source (checked below)
			}
			_, err := OneShotClientAuth(NewKey{Definition: d, ClientSecret: secret, ClientKey: key, ClientCert: cert})
			return err
		}
		if _, err := OneShotClientAuth(NewKey{Definition: Definition{Connection: auth.Connection{ClientID: "shipping-cli", ClientAuth: m}}}); n.External &&
			(err == nil || !strings.Contains(err.Error(), "--client-assertion-file FILE")) {
			t.Errorf("%q without its assertion's source: %v", m, err)
		}
		if err := try(secret, nil, nil); (err != nil) != n.Key {
			t.Errorf("%q with no client key: %v; the table says Key %v", m, err, n.Key)
		}
		if err := try(secret, keyPEM, nil); (err != nil) != (n.Cert || !n.Key) {
			t.Errorf("%q with a key and no certificate: %v; the table says %+v", m, err, n)
		}
		if err := try(secret, keyPEM, certPEM); (err != nil) != !n.Key {
			t.Errorf("%q with a key and a certificate: %v; the table says Key %v", m, err, n.Key)
		}
		if n.Key {
			continue
		}
		if err := try("", nil, nil); (err != nil) != (n.Secret && n.Assertion) {
			t.Errorf("%q with an empty secret: %v; the table says %+v", m, err, n)
		}
	}
}

// A method whose proof is a client certificate, given neither, names both
// flags it needs (and not --generate-client-key, which cannot make a key a
// certificate names).
func TestCertificateMethodWithoutMaterialNamesBothFlags(t *testing.T) {
	t.Parallel()
	_, keyPEM, err := authtest.SelfSignedClient("shipping-cli")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range auth.ClientAuthMethodsThat(func(n auth.ClientAuthNeeds) bool { return n.Cert }) {
		for _, key := range [][]byte{nil, keyPEM} {
			_, err := OneShotClientAuth(NewKey{Definition: Definition{Connection: auth.Connection{ClientID: "shipping-cli", ClientAuth: m}}, ClientKey: key})
			if err == nil || !strings.Contains(err.Error(), "--client-cert FILE") || !strings.Contains(err.Error(), "--client-key FILE") || strings.Contains(err.Error(), "generate-client-key") {
				t.Errorf("%s without a certificate (key given: %v): %v; want both --client-cert FILE and --client-key FILE named", m, key != nil, err)
			}
		}
	}
}
