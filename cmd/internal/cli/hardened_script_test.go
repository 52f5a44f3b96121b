package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/shipkey/shipkey/auth/authtest"
)

// hardenedRealm is what the script realm's hardened clients know: the
// public key of shipping-signed (private_key_jwt) and the secret of
// shipping-hmac (client_secret_jwt). Scripts find the private key in
// $WORK/client-key.pem, the mTLS client's certificate and key in
// $WORK/mtls.crt and $WORK/mtls.key, a certificate of another CA in
// $WORK/other.crt and .key, the realm's CA in $WORK/ca.pem, and the HMAC
// secret in $HMAC_SECRET.
type hardenedRealm struct {
	keyPEM     []byte
	jwks       string
	hmacSecret string
}

func (h *hardenedRealm) make() error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	h.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k.Public(), Use: "sig"}}})
	if err != nil {
		return err
	}
	h.jwks = string(set)
	h.hmacSecret = "hs-" + randomHex(24)
	return nil
}

func (h *hardenedRealm) files(env *testscript.Env, srv *authtest.Server) error {
	certPEM, keyPEM, err := srv.CA().IssueClient("shipping-mtls")
	if err != nil {
		return err
	}
	other, err := authtest.NewCA("another CA")
	if err != nil {
		return err
	}
	otherCert, otherKey, err := other.IssueClient("shipping-mtls")
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{
		"client-key.pem": h.keyPEM, "mtls.crt": certPEM, "mtls.key": keyPEM,
		"other.crt": otherCert, "other.key": otherKey, "ca.pem": srv.CA().CertPEM(),
	} {
		if err := os.WriteFile(filepath.Join(env.WorkDir, name), b, 0o600); err != nil {
			return err
		}
	}
	env.Setenv("HMAC_SECRET", h.hmacSecret)
	return nil
}
