package auth

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
)

// declaredMethods lists every constant of type ClientAuthMethod declared in
// the package's source, so that a method added without a row is caught.
func declaredMethods(t *testing.T) []ClientAuthMethod {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []ClientAuthMethod
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ClientAuthMethod" {
					continue
				}
				for _, v := range vs.Values {
					lit := v.(*ast.BasicLit)
					out = append(out, ClientAuthMethod(lit.Value[1:len(lit.Value)-1]))
				}
			}
		}
	}
	return out
}

// Every method shipkey declares has one row in clientAuthTable, a form
// offers it, and its needs make sense together.
func TestClientAuthTableHasEveryMethod(t *testing.T) {
	t.Parallel()
	declared := declaredMethods(t)
	if len(declared) < 7 {
		t.Fatalf("found %d ClientAuthMethod constants: %v", len(declared), declared)
	}
	rows := map[ClientAuthMethod]int{}
	for _, r := range clientAuthTable {
		rows[r.Method]++
	}
	for _, m := range declared {
		if rows[m] != 1 {
			t.Errorf("method %s has %d rows in clientAuthTable, want 1", m, rows[m])
		}
		if !slices.Contains(ClientAuthMethods(), m) {
			t.Errorf("method %s is not offered", m)
		}
		if _, err := ParseClientAuthMethod(string(m)); err != nil {
			t.Errorf("method %s does not parse: %v", m, err)
		}
		if p := needsProblem(m.Needs()); p != "" {
			t.Errorf("method %s: %s: %+v", m, p, m.Needs())
		}
	}
	if len(rows) != len(declared) {
		t.Errorf("clientAuthTable has %d methods, %d declared", len(rows), len(declared))
	}
	if ClientAuthMethod("").Needs() != notChosen || !ClientAuthMethod("").UsesSecret() {
		t.Error("the method not chosen does not send the secret")
	}
	if ClientAuthMethod("client_secret").Needs() != (ClientAuthNeeds{}) {
		t.Error("an unknown method needs something")
	}
}

// needsProblem says what does not fit together in n, "" when all does.
func needsProblem(n ClientAuthNeeds) string {
	switch {
	case n == (ClientAuthNeeds{}):
		return "needs nothing and is not public"
	case n.Public && (n.Secret || n.Key || n.Cert || n.Assertion || n.External):
		return "public, yet needs credentials"
	case n.External && (!n.Assertion || n.Secret || n.Key || n.Cert):
		return "an external assertion is the client's whole proof: nothing is signed here"
	case n.Assertion && !n.External && n.Secret == n.Key:
		return "an assertion must be signed with exactly one of the secret and a key"
	case n.Cert && !n.Key:
		return "a certificate needs its key"
	}
	return ""
}

// The code that applies a method does what its row says: the secret goes
// (in the form or by Basic) or is kept back, an assertion is signed with
// the secret or the key, a certificate method without one is refused
// before anything is sent, and a public client sends its id alone.
func TestClientAuthConsumersAgreeWithTheTable(t *testing.T) {
	t.Parallel()
	key, err := GenerateClientKey()
	if err != nil {
		t.Fatal(err)
	}
	c := cliNewClient(t, Options{})
	conn := Connection{ClientID: "shipping-cli", TokenURL: "https://127.0.0.1/token"}
	for _, m := range append(ClientAuthMethods(), "") {
		n := m.Needs()
		ca := AuthFor(Connection{ClientAuth: m}, "s3cret-s3cret-s3cret-s3cret-s3cret")
		if (ca.Secret != "") != n.Secret {
			t.Errorf("%q: AuthFor kept the secret %v, table says Secret %v", m, ca.Secret != "", n.Secret)
		}
		ca.Key = key
		if n.External {
			ca.Assertion = &AssertionSource{From: "the test", Fetch: func(context.Context) (string, error) { return "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", nil }}
		}
		form := url.Values{}
		var basic string
		if err := c.applyClientAuth(context.Background(), conn, ca, m, conn.TokenURL, form, func(_, pass string) { basic = pass }); err != nil {
			t.Errorf("%q: %v", m, err)
			continue
		}
		sent := form.Get("client_secret") != "" || basic != ""
		if sent != (n.Secret && !n.Assertion) {
			t.Errorf("%q: secret sent %v, table says %+v", m, sent, n)
		}
		if asserted := form.Get("client_assertion") != ""; asserted != n.Assertion {
			t.Errorf("%q: assertion sent %v, table says %+v", m, asserted, n)
		}
		if n.Assertion {
			ca.Key = nil
			err := c.applyClientAuth(context.Background(), conn, ca, m, conn.TokenURL, url.Values{}, func(_, _ string) {})
			if (err != nil) != n.Key {
				t.Errorf("%q without a key: %v, table says Key %v", m, err, n.Key)
			}
			ca.Assertion = nil
			err = c.applyClientAuth(context.Background(), conn, ca, m, conn.TokenURL, url.Values{}, func(_, _ string) {})
			if (err != nil) != (n.Key || n.External) {
				t.Errorf("%q without a key or an assertion source: %v, table says %+v", m, err, n)
			}
		}
		if _, err := c.httpFor(ClientAuth{}, m); (err != nil) != n.Cert {
			t.Errorf("%q without a certificate: %v, table says Cert %v", m, err, n.Cert)
		}
		if (Connection{ClientAuth: m}).IsPublic() != n.Public {
			t.Errorf("%q: IsPublic disagrees with the table", m)
		}
	}
}
