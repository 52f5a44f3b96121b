package store

import (
	"errors"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// Hardened realms: the client key and certificate a new key brings, and the
// DPoP key it makes, all kept in its secrets record (so they go with the
// key, and a crash leaves none behind on its own).

// addHardening checks what nk's client authentication needs and puts the
// client key, certificate and a new DPoP key into sec in their stored forms.
func (sec *keySecrets) addHardening(nk *NewKey) error {
	if err := checkHardening(nk); err != nil {
		return err
	}
	if nk.GenerateClientKey {
		if err := generateClientKey(nk); err != nil {
			return err
		}
	}
	if err := sec.addClientKey(nk); err != nil {
		return err
	}
	if nk.Connection.DPoP {
		k, err := auth.NewDPoPKey()
		if err != nil {
			return err
		}
		b, err := k.Marshal()
		if err != nil {
			return err
		}
		sec.DPoPKey = string(b)
	}
	return nil
}

// hardeningRules are what a new key's client key, certificate and secret
// must be for its client authentication method m (whose needs are n), in
// order: the first broken says what is wrong.
var hardeningRules = []struct {
	broken func(nk *NewKey, n auth.ClientAuthNeeds) bool
	says   func(m auth.ClientAuthMethod) string
}{
	{
		func(nk *NewKey, _ auth.ClientAuthNeeds) bool { return nk.GenerateClientKey && len(nk.ClientKey) > 0 },
		func(auth.ClientAuthMethod) string {
			return "pass either a client key file or --generate-client-key, not both"
		},
	},
	{
		// Named before the key alone: a certificate method needs both, and
		// its key is the certificate's, never one made here.
		func(nk *NewKey, n auth.ClientAuthNeeds) bool {
			return n.Cert && (len(nk.ClientCert) == 0 || len(nk.ClientKey) == 0)
		},
		func(m auth.ClientAuthMethod) string {
			return "client authentication " + string(m) + " needs the client certificate and its private key: pass --client-cert FILE --client-key FILE"
		},
	},
	{
		func(nk *NewKey, n auth.ClientAuthNeeds) bool {
			return n.Key && len(nk.ClientKey) == 0 && !nk.GenerateClientKey
		},
		func(m auth.ClientAuthMethod) string {
			return "client authentication " + string(m) + " needs the client's private key: pass --client-key FILE (or --generate-client-key)"
		},
	},
	{
		func(nk *NewKey, n auth.ClientAuthNeeds) bool {
			return !n.Key && (len(nk.ClientKey) > 0 || nk.GenerateClientKey)
		},
		func(m auth.ClientAuthMethod) string {
			return "a client key is for " + methodList(func(n auth.ClientAuthNeeds) bool { return n.Key }) + ", not client authentication " + string(m)
		},
	},
	{
		func(nk *NewKey, n auth.ClientAuthNeeds) bool {
			return n.Secret && n.Assertion && nk.ClientSecret == ""
		},
		func(m auth.ClientAuthMethod) string {
			return "client authentication " + string(m) + " signs with the client secret, and it is empty"
		},
	},
}

// checkHardening checks nk by hardeningRules.
func checkHardening(nk *NewKey) error {
	m := nk.Connection.AuthMethod()
	needs := m.Needs()
	for _, r := range hardeningRules {
		if r.broken(nk, needs) {
			return errors.New(r.says(m))
		}
	}
	return nil
}

// generateClientKey makes nk's client key and hands its public key set to
// nk.OnClientKey (to register with the realm).
func generateClientKey(nk *NewKey) error {
	k, err := auth.GenerateClientKey()
	if err != nil {
		return err
	}
	if nk.ClientKey, err = auth.EncodeClientKey(k); err != nil {
		return err
	}
	if nk.OnClientKey == nil {
		return nil
	}
	jwks, err := auth.PublicJWKS(k, nk.Connection.ClientKeyID, jose.ES256)
	if err != nil {
		return err
	}
	return nk.OnClientKey(jwks)
}

// addClientKey puts nk's client key, and its certificate (checked against
// the key), into sec in their stored forms.
func (sec *keySecrets) addClientKey(nk *NewKey) error {
	if len(nk.ClientKey) == 0 {
		if len(nk.ClientCert) > 0 {
			return errors.New("a client certificate needs its private key: pass --client-key FILE too")
		}
		return nil
	}
	k, _, err := auth.ParseClientKey(nk.ClientKey)
	if err != nil {
		return err
	}
	pemKey, err := auth.EncodeClientKey(k)
	if err != nil {
		return err
	}
	sec.ClientKey = string(pemKey)
	if len(nk.ClientCert) > 0 {
		cert, err := auth.ParseClientCertificate(nk.ClientCert, k)
		if err != nil {
			return err
		}
		sec.ClientCert = string(auth.EncodeClientCertificate(cert))
	}
	return nil
}

// methodList names the client authentication methods whose needs satisfy
// want: "a, b and c".
func methodList(want func(auth.ClientAuthNeeds) bool) string {
	ms := auth.ClientAuthMethodsThat(want)
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// OneShotClientAuth is the client authentication of a key that is never
// stored (token --no-store): nk's connection and client secret, its client
// key and certificate checked as Create checks them, and a DPoP key made
// for this one grant when the connection asks for DPoP. Nothing is written.
func OneShotClientAuth(nk NewKey) (auth.ClientAuth, error) {
	sec := keySecrets{ClientSecret: nk.ClientSecret}
	if err := sec.addHardening(&nk); err != nil {
		return auth.ClientAuth{}, err
	}
	if err := CheckAssertionSources(&nk.Definition); err != nil {
		return auth.ClientAuth{}, err
	}
	return sec.authOf(nk.Definition), nil
}

// Binding is what the key's tokens are bound to: the thumbprint of its DPoP
// key (jkt) and of its client certificate (x5t#S256), "" for none. Neither
// is secret.
func (s *Store) Binding(label string) (jkt, x5t string, err error) {
	e, sec, err := s.entrySecrets(label)
	if err != nil {
		return "", "", err
	}
	jkt, x5t = sec.binding(e.Connection)
	return jkt, x5t, nil
}

// DPoPKey is the key's DPoP key, which signs the proofs its DPoP-bound
// tokens are sent with (nil, nil for a key without one). A stored key that
// cannot be read is an error saying to create the key again.
func (s *Store) DPoPKey(label string) (*auth.DPoPKey, error) {
	e, sec, err := s.entrySecrets(label)
	if err != nil {
		return nil, err
	}
	if sec.DPoPKey == "" {
		if e.Connection.DPoP {
			return nil, text.Errorf("key %s holds no DPoP key; create it again with --dpop", e.Label)
		}
		return nil, nil
	}
	return auth.ParseDPoPKey([]byte(sec.DPoPKey))
}

// ClientKeyJWKS is the public key set to register with the realm for the
// key's client key (private_key_jwt), with its kid and algorithm.
func (s *Store) ClientKeyJWKS(label string) ([]byte, error) {
	e, sec, err := s.entrySecrets(label)
	if err != nil {
		return nil, err
	}
	ca := sec.authOf(e.Definition)
	if ca.Key == nil {
		return nil, text.Errorf("key %s has no client key", e.Label)
	}
	alg, err := auth.SigningAlg(ca.Key, nil)
	if err != nil {
		return nil, err
	}
	return auth.PublicJWKS(ca.Key, e.ClientKeyID, alg)
}

// entrySecrets is the key's definition and its secrets.
func (s *Store) entrySecrets(label string) (keyEntry, keySecrets, error) {
	if _, err := s.prepare(); err != nil {
		return keyEntry{}, keySecrets{}, err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return keyEntry{}, keySecrets{}, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	return e, sec, err
}
