package tui

import (
	"testing"

	"github.com/shipkey/shipkey/auth"
)

// The form asks for what the chosen client authentication needs, as auth's
// table declares it: the secret, a key file (or a key made here), a
// certificate; the public client is offered where the grant may run as one.
func TestFormFieldsFollowTheClientAuthTable(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.send(windowSize(100, 40))
	openAdvanced(h)
	f := h.m.form
	if !viewOf(f.grantType()).public {
		t.Fatalf("the demo's grant %s runs as no public client; pick one that does", f.grantType())
	}
	for _, m := range auth.ClientAuthMethods() {
		chooseAuth(h, m)
		n := m.Needs()
		for _, tc := range []struct {
			field int
			want  bool
		}{
			{fieldClientSecret, n.Secret},
			{fieldClientKey, n.Key},
			{fieldClientCert, n.Cert},
			{fieldGenerateKey, n.KeyMadeHere()},
		} {
			if got := f.shown(tc.field); got != tc.want {
				t.Errorf("%s: %s shown %v, the table says %+v", m, formFields[tc.field].label, got, n)
			}
		}
		f.on[fieldGenerateKey] = true
		if f.shown(fieldClientKey) != (n.Key && !n.KeyMadeHere()) {
			t.Errorf("%s: with a key made here the key file is shown %v; the table says %+v", m, f.shown(fieldClientKey), n)
		}
		f.on[fieldGenerateKey] = false
	}
}
