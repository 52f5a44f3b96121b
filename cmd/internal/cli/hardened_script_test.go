package cli

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/shipkey/shipkey/auth/authtest"
)

// hardenedRealm is what the script realm's hardened clients know: the
// public keys of shipping-signed (private_key_jwt: an EC and an RSA key),
// the secret of shipping-hmac (client_secret_jwt) and the key of
// shipping-selfsigned's self-signed certificate
// (self_signed_tls_client_auth). Scripts find the private keys in
// $WORK/client-key.pem (EC) and $WORK/client-rsa.pem, the mTLS client's
// certificate and key in $WORK/mtls.crt and $WORK/mtls.key, a certificate
// of another CA in $WORK/other.crt and .key, the self-signed certificate in
// $WORK/selfsigned.crt and .key, the realm's CA in $WORK/ca.pem, and the
// HMAC secret in $HMAC_SECRET.
type hardenedRealm struct {
	keyPEM, rsaPEM    []byte
	jwks              string
	hmacSecret        string
	selfCert, selfKey []byte
	selfJWKS          string
}

// scriptRSAKey is one RSA key for every script of the process: making one
// costs far more than the EC keys.
var scriptRSAKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

func pkcs8PEM(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func jwksOf(keys ...crypto.PublicKey) (string, error) {
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, Use: "sig"})
	}
	b, err := json.Marshal(set)
	return string(b), err
}

func (h *hardenedRealm) make() error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	rk, err := scriptRSAKey()
	if err != nil {
		return err
	}
	if h.keyPEM, err = pkcs8PEM(k); err != nil {
		return err
	}
	if h.rsaPEM, err = pkcs8PEM(rk); err != nil {
		return err
	}
	if h.jwks, err = jwksOf(k.Public(), rk.Public()); err != nil {
		return err
	}
	h.hmacSecret = "hs-" + randomHex(24)

	// A self-signed client certificate: self_signed_tls_client_auth knows
	// it by its key, registered in the client's JWKS.
	if h.selfCert, h.selfKey, err = authtest.SelfSignedClient("shipping-selfsigned"); err != nil {
		return err
	}
	block, _ := pem.Decode(h.selfCert)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	h.selfJWKS, err = jwksOf(cert.PublicKey)
	return err
}

// files writes the scripts' key and certificate files into dir, the client
// certificates issued by srv's CA (a realm started again has a new one).
func (h *hardenedRealm) files(dir string, setenv func(k, v string), srv *authtest.Server) error {
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
		"client-key.pem": h.keyPEM, "client-rsa.pem": h.rsaPEM, "mtls.crt": certPEM, "mtls.key": keyPEM,
		"other.crt": otherCert, "other.key": otherKey, "ca.pem": srv.CA().CertPEM(),
		"selfsigned.crt": h.selfCert, "selfsigned.key": h.selfKey,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	setenv("HMAC_SECRET", h.hmacSecret)
	return nil
}

// cmdSnapshot writes to FILE the name and SHA-256 of every file under the
// config and state directories (config.toml, the index, the secrets), so
// that a failed command can be shown to have changed nothing:
//
//	snapshot before.txt
//	! exec shipkey ...
//	snapshot after.txt
//	cmp before.txt after.txt
//
// Lock files hold nothing and are left out.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: snapshot FILE")
	}
	var lines []string
	for _, v := range []string{"SHIPKEY_CONFIG_DIR", "SHIPKEY_STATE_DIR"} {
		root := ts.Getenv(v)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			sum := sha256.Sum256(b)
			lines = append(lines, v+"/"+rel+" "+hex.EncodeToString(sum[:]))
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			ts.Fatalf("snapshot: %v", err)
		}
	}
	sort.Strings(lines)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

// cmdWaitExpiry waits until the access tokens in the FILEs (JWTs, as
// printed by shipkey token), the access tokens of the keys named with -key
// and the refresh tokens of those named with -refresh (their
// access_expires_at and refresh_expires_at in `shipkey status --json`, which
// asks no server) are all past their expiry: renewal is then seen at a real
// expiry, not a forced one, after as short a wait as the tokens allow (a
// fixed sleep is either too short on a loaded machine or too long on an idle
// one). A token expiring more than 15 s ahead is a mistake in the script.
//
//	waitexpiry [-key LABEL | -refresh LABEL]... [FILE]...
func cmdWaitExpiry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: waitexpiry [-key LABEL | -refresh LABEL]... [FILE]...")
	}
	var last time.Time
	later := func(exp time.Time) {
		if exp.After(last) {
			last = exp
		}
	}
	for i := 0; i < len(args); i++ {
		if flag := args[i]; flag == "-key" || flag == "-refresh" {
			if i+1 == len(args) {
				ts.Fatalf("usage: waitexpiry [-key LABEL | -refresh LABEL]... [FILE]...")
			}
			i++
			// Its exit code says whether the key is usable (3: a login is
			// needed, as when the tokens have expired already): not asked.
			runErr := ts.Exec("shipkey", "status", "--json", args[i])
			var keys []struct {
				AccessExpiresAt  *string `json:"access_expires_at"`
				RefreshExpiresAt *string `json:"refresh_expires_at"`
			}
			if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &keys); err != nil || len(keys) != 1 {
				ts.Fatalf("waitexpiry: status --json %s (%v): %s%s", args[i], runErr, ts.ReadFile("stdout"), ts.ReadFile("stderr"))
			}
			at := keys[0].AccessExpiresAt
			if flag == "-refresh" {
				at = keys[0].RefreshExpiresAt
			}
			if at == nil {
				ts.Fatalf("waitexpiry: key %s states no expiry for %s: %s", args[i], flag, ts.ReadFile("stdout"))
			}
			exp, err := time.Parse(time.RFC3339, *at)
			ts.Check(err)
			later(exp.Add(time.Second)) // RFC 3339 in whole seconds
			continue
		}
		name := args[i]
		parts := strings.Split(strings.TrimSpace(ts.ReadFile(name)), ".")
		if len(parts) != 3 {
			ts.Fatalf("waitexpiry: %s holds no JWT", name)
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		ts.Check(err)
		var claims struct {
			Exp int64 `json:"exp"`
		}
		ts.Check(json.Unmarshal(payload, &claims))
		if claims.Exp == 0 {
			ts.Fatalf("waitexpiry: the token in %s has no exp", name)
		}
		later(time.Unix(claims.Exp, 0))
	}
	if time.Until(last) > 15*time.Second {
		ts.Fatalf("waitexpiry: a token expires at %s, more than 15 s away", last.Format(time.RFC3339))
	}
	time.Sleep(time.Until(last.Add(500 * time.Millisecond)))
	ts.Logf("waitexpiry: the last token expired at %s", last.Format(time.RFC3339))
}
