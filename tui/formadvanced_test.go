package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
)

// testJWKS is the public key set the fake store hands a generated key's
// OnClientKey.
const testJWKS = `{"keys":[{"kty":"EC","crv":"P-256","kid":"Yk4J0bC8","alg":"ES256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`

// openAdvanced opens the Advanced section with its key and focuses the
// client authentication.
func openAdvanced(h *harness) {
	h.t.Helper()
	h.press("ctrl+o")
	for i := 0; h.m.form.focus != fieldClientAuth; i++ {
		if i > fieldCount {
			h.t.Fatalf("no Client auth field:\n%s", h.view())
		}
		h.press("tab")
	}
}

// chooseAuth moves the client authentication choice to m with →.
func chooseAuth(h *harness, m auth.ClientAuthMethod) {
	h.t.Helper()
	for i := 0; h.m.form.clientAuth() != m; i++ {
		if i > 10 {
			h.t.Fatalf("client auth %q not offered", m)
		}
		h.press("right")
	}
}

// focusField tabs to field i.
func focusField(h *harness, i int) {
	h.t.Helper()
	for n := 0; h.m.form.focus != i; n++ {
		if n > fieldCount {
			h.t.Fatalf("field %s not shown:\n%s", formFields[i].label, h.view())
		}
		h.press("tab")
	}
}

// writeClientKey writes a new EC client key as PEM and returns its path.
func writeClientKey(t *testing.T) (string, []byte) {
	t.Helper()
	k, err := auth.GenerateClientKey()
	if err != nil {
		t.Fatal(err)
	}
	pem, err := auth.EncodeClientKey(k)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(path, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, pem
}

// The Advanced section is folded; ctrl+o (in the footer and the key map)
// opens it from any field, and folds it again, taking the focus out of it.
func TestFormAdvancedKeyTogglesTheSection(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.send(windowSize(100, 30))
	h.mustShow("Advanced          ▸ ctrl+o: client auth, DPoP, URLs")
	h.mustNotShow("Client auth ", "DPoP ")
	h.press("f1")
	h.mustShow("ctrl+o", "advanced")
	h.press("f1")
	focusField(h, fieldClientID)
	h.press("ctrl+o")
	h.mustShow("Client auth", "‹ client secret (default) ›", "DPoP", "[ ] bearer tokens")
	if got := h.m.form.inputs[fieldClientID].Value(); got != demoPrefill.ClientID {
		t.Fatalf("ctrl+o typed into the field: %q", got)
	}
	focusField(h, fieldDPoP)
	h.press("ctrl+o")
	h.mustNotShow("Client auth ", "DPoP ")
	if h.m.form.focus != fieldAdvanced {
		t.Fatalf("focus = %s, want Advanced once its fields hide", formFields[h.m.form.focus].label)
	}
}

// private_key_jwt with DPoP: the secret goes, a key file comes; a missing
// file is one line beside its field naming it, and nothing is sent; a real
// key goes into the same definition the CLI builds.
func TestFormPrivateKeyJWTAndDPoP(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	openAdvanced(h)
	chooseAuth(h, auth.PrivateKeyJWT)
	h.mustShow("‹ private_key_jwt ›", "Generate key", "Client key file")
	h.mustNotShow("Client Secret", "Client cert file")

	// Required before anything is sent.
	h.press("enter")
	if h.m.form.errs[fieldClientKey] != "required" || h.m.form.focus != fieldClientKey {
		t.Fatalf("empty key file: err %q focus %s", h.m.form.errs[fieldClientKey], formFields[h.m.form.focus].label)
	}
	missing := filepath.Join(t.TempDir(), "nope.pem")
	h.typeText(missing)
	h.press("enter")
	if e := h.m.form.errs[fieldClientKey]; !strings.HasPrefix(e, "Client key file: cannot read "+missing) || strings.Contains(e, "\n") {
		t.Fatalf("missing key file: %q", e)
	}
	h.mustShow("✗ Client key file: cannot read")
	if contains(h.st.Calls(), "create demo") {
		t.Fatal("a key with a missing client key file was stored")
	}

	// Not a key: the same field.
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.m.form.inputs[fieldClientKey].SetValue(junk)
	h.press("enter")
	if e := h.m.form.errs[fieldClientKey]; !strings.HasPrefix(e, "Client key file: ") || h.m.form.focus != fieldClientKey {
		t.Fatalf("junk key file: %q", e)
	}

	path, pem := writeClientKey(t)
	h.m.form.inputs[fieldClientKey].SetValue(path)
	focusField(h, fieldDPoP)
	h.press("space")
	h.mustShow("[x] tokens bound to a DPoP key")
	h.press("enter")
	nk := h.st.lastNew
	if nk.Connection.ClientAuth != auth.PrivateKeyJWT || string(nk.ClientKey) != string(pem) || !nk.Connection.DPoP || nk.ClientSecret != "" || nk.GenerateClientKey {
		t.Fatalf("sent auth %q key %v dpop %v secret set %v generate %v", nk.Connection.ClientAuth, len(nk.ClientKey), nk.Connection.DPoP,
			nk.ClientSecret != "", nk.GenerateClientKey)
	}
	if h.m.active != screenDetails {
		t.Fatalf("active = %v, want the token details", h.m.active)
	}
}

// tls_client_auth asks a key and a certificate; a certificate that cannot
// be read is its field's error, nothing stored.
func TestFormTLSClientAuthNeedsTheCertificate(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	openAdvanced(h)
	chooseAuth(h, auth.TLSClientAuth)
	h.mustShow("Client key file", "Client cert file")
	h.mustNotShow("Client Secret", "Generate key")
	path, _ := writeClientKey(t)
	h.m.form.inputs[fieldClientKey].SetValue(path)
	h.m.form.inputs[fieldClientCert].SetValue(filepath.Join(t.TempDir(), "missing.crt"))
	h.press("enter")
	if e := h.m.form.errs[fieldClientCert]; !strings.HasPrefix(e, "Client cert file: cannot read ") || h.m.form.focus != fieldClientCert {
		t.Fatalf("missing certificate: %q, focus %s", e, formFields[h.m.form.focus].label)
	}
	if contains(h.st.Calls(), "create demo") {
		t.Fatal("stored without its certificate")
	}
}

// "Generate key": the store makes the key (as --generate-client-key does);
// the form shows its public key set and where to register it, and the
// grant goes on only on enter; esc gives up with nothing stored.
func TestFormGeneratedClientKeyIsRegisteredFirst(t *testing.T) {
	t.Parallel()
	for _, goOn := range []bool{true, false} {
		h := newFormHarness(t, demoPrefill, nil)
		h.send(windowSize(80, 24))
		openAdvanced(h)
		chooseAuth(h, auth.PrivateKeyJWT)
		focusField(h, fieldGenerateKey)
		h.press("space")
		h.mustNotShow("Client key file")
		h.async()
		h.press("enter")
		h.pump("the key set to register", func() bool { return h.m.form.state == formRegistering })
		h.mustShow("Signed JWT", "Use JWKS", `"kid":"Yk4J0bC8"`, "enter registered: go on", "c copy")
		requireFits(t, h.view(), 80, 24)
		if goOn {
			golden.RequireEqual(t, []byte(h.view()))
			h.press("c")
			h.press("enter")
			h.pump("the token details", func() bool { return h.m.active == screenDetails })
			if nk := h.st.lastNew; !nk.GenerateClientKey || nk.Connection.ClientAuth != auth.PrivateKeyJWT || len(nk.ClientKey) != 0 {
				t.Fatalf("sent generate %v auth %q key file bytes %d", nk.GenerateClientKey, nk.Connection.ClientAuth, len(nk.ClientKey))
			}
			continue
		}
		h.press("esc")
		h.pump("the form again", func() bool { return h.m.form.state == formEditing })
		h.mustShow("Cancelled: nothing was stored.")
		if contains(h.st.Calls(), "create demo") {
			t.Fatal("esc while registering stored the key")
		}
	}
}

// The form at 60×15: folded, and with the Advanced section open on a
// signed-JWT key with DPoP; each fits, the focused field in sight.
func TestFormAt60x15(t *testing.T) {
	t.Parallel()
	t.Run("folded", func(t *testing.T) {
		t.Parallel()
		h := newFormHarness(t, demoPrefill, nil)
		h.send(windowSize(60, 15))
		requireFits(t, h.view(), 60, 15)
		focusField(h, fieldAdvanced)
		requireFits(t, h.view(), 60, 15)
		h.mustShow("› Advanced", "▸ ctrl+o: client auth")
		h.mustNotShow("Client auth")
		golden.RequireEqual(t, []byte(h.view()))
	})
	t.Run("advanced", func(t *testing.T) {
		t.Parallel()
		h := newFormHarness(t, demoPrefill, nil)
		h.send(windowSize(60, 15))
		openAdvanced(h)
		chooseAuth(h, auth.PrivateKeyJWT)
		focusField(h, fieldDPoP)
		h.press("space")
		requireFits(t, h.view(), 60, 15)
		h.mustShow("Client auth", "‹ private_key_jwt ›", "Client key file", "› DPoP", "[x]")
		golden.RequireEqual(t, []byte(h.view()))
	})
}
