//go:build !windows

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// TestTmuxFormSignedJWTAndDPoP runs the app in tmux against a hardened
// client of the in-process realm (private_key_jwt with a registered key,
// DPoP-bound tokens required, client credentials): on the Get API Key form
// the person opens Advanced (ctrl+o), chooses private_key_jwt, gives a
// missing key file first (one line naming the field, nothing stored), then
// the real one, turns DPoP on, and the key is created end to end: the token
// details show a DPoP token, and `shipkey token --json` from the same store
// hands out that DPoP token.
func TestTmuxFormSignedJWTAndDPoP(t *testing.T) {
	t.Parallel()
	k, err := auth.GenerateClientKey()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := auth.PublicJWKS(k, "", jose.ES256)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := auth.EncodeClientKey(k)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(keyFile, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	const clientID = "shipping-signed"
	cfg := authtest.DemoConfig()
	cfg.Clients = append(cfg.Clients, authtest.Client{ID: clientID, AuthMethod: authtest.AuthPrivateKeyJWT, JWKS: string(jwks),
		DPoP: true, ServiceAccount: true})
	srv := authtest.NewServer(cfg)
	t.Cleanup(srv.Close)

	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext", "BROWSER="})
	s := h.start(100, 40)
	s.waitText(10*time.Second, "Get API Key", "› Auth URL") // an empty store opens on the form
	s.keys("-l", srv.URL())
	s.keys("BTab", "Right") // the grant: client credentials
	s.waitText(5*time.Second, "‹ client credentials ›")
	s.keys("Tab", "Tab", "Tab") // Auth URL, Realm, Client ID
	s.keys("-l", clientID)
	s.keys("Tab", "Tab") // Client Secret, Label
	s.keys("-l", "signed")
	s.keys("C-o")
	s.waitText(5*time.Second, "Client auth", "‹ client secret (default) ›", "DPoP")
	s.keys("Tab", "Tab", "Tab", "Tab") // Scope, Advanced, Token URL, Issuer
	s.keys("Tab")                      // Client auth
	s.waitText(5*time.Second, "› Client auth")
	s.keys("Right", "Right", "Right", "Right")
	screen := s.waitText(5*time.Second, "‹ private_key_jwt ›", "Generate key", "Client key file")
	if strings.Contains(screen, "Client Secret") {
		t.Fatalf("private_key_jwt still asks the client secret:\n%s", screen)
	}
	s.keys("Tab", "Tab") // Generate key, Client key file
	missing := filepath.Join(t.TempDir(), "nope.pem")
	s.keys("-l", missing)
	s.keys("Enter")
	s.waitText(10*time.Second, "✗ Client key file: cannot read", "nope.pem: no such file")
	if out := h.cli("keys", "list"); strings.Contains(out, "signed") {
		t.Fatalf("a key was stored with a missing key file:\n%s", out)
	}
	s.keys("C-u")
	s.keys("-l", keyFile)
	s.keys("Tab") // DPoP
	s.waitText(5*time.Second, "› DPoP")
	s.keys("Space")
	s.waitText(5*time.Second, "[x] tokens bound to a DPoP key")
	s.keys("Enter")
	s.waitText(15*time.Second, "Token details", "signed", "DPoP")

	out := h.cli("token", "signed", "--json")
	if !strings.Contains(out, `"token_type":"DPoP"`) && !strings.Contains(out, `"token_type": "DPoP"`) {
		t.Fatalf("token --json of the key the form made: %s", out)
	}
	s.keys("q")
}
