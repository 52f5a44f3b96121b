package cli

import (
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/shipkey/shipkey/internal/optest"
)

// TestOpenIDProviderScripts runs the CLI as a user types it against a real
// third-party OpenID provider (npm oidc-provider, see internal/optest),
// started once for the package: testdata/opscript/*.txtar, each with its own
// config and state directories, the provider's issuer in $OP_ISSUER, its
// confidential client in $OP_CLIENT_ID and $OP_CLIENT_SECRET, its public
// client in $OP_PUBLIC_CLIENT_ID, the confidential client with 2 s access
// tokens in $OP_SHORT_CLIENT_ID, and opbrowser as the scripted $BROWSER.
func TestOpenIDProviderScripts(t *testing.T) {
	t.Parallel()
	p := optest.Start(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/opscript",
		Setup: func(env *testscript.Env) error {
			if err := setupScript(env); err != nil {
				return err
			}
			for k, v := range map[string]string{
				"OP_ISSUER":           p.Issuer,
				"OP_CLIENT_ID":        p.ClientID,
				"OP_CLIENT_SECRET":    p.ClientSecret,
				"OP_PUBLIC_CLIENT_ID": p.PublicClientID,
				"OP_SHORT_CLIENT_ID":  p.ShortClientID,
			} {
				env.Setenv(k, v)
			}
			// After every script: the provider's client secret is in no
			// file shipkey wrote either.
			dirs := []string{env.Getenv("SHIPKEY_CONFIG_DIR"), env.Getenv("SHIPKEY_STATE_DIR"), env.Getenv("HOME")}
			r := env.Values[scriptKey{}].(*realm)
			env.Defer(func() {
				if err := findSecrets(r, dirs, []string{p.ClientSecret}); err != nil {
					env.T().Fatal(err)
				}
			})
			return nil
		},
		RequireExplicitExec: true,
		UpdateScripts:       *updateScripts,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"nosecrets": cmdNoSecrets,
			"exits":     cmdExits,
			"sleep":     cmdSleep,
			"opactive":  cmdOPActive(p),
			"apiserver": cmdAPIServer,
			"bigjson":   cmdBigJSON,
			"samebody":  cmdSameBody,
			"jsonfield": cmdJSONField,
		},
	})
}

// cmdOPActive asserts that the token in FILE is active at the provider
// (RFC 7662 introspection); negated, that it expired or was revoked.
//
//	[!] opactive FILE
func cmdOPActive(p *optest.Provider) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: [!] opactive FILE")
		}
		active, err := p.Active(strings.TrimSpace(ts.ReadFile(args[0])))
		ts.Check(err)
		if active == neg {
			ts.Fatalf("the token in %s is active: %v, want %v", args[0], active, !neg)
		}
	}
}
