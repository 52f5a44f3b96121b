package cli

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
				"OP_ISSUER":             p.Issuer,
				"OP_CLIENT_ID":          p.ClientID,
				"OP_CLIENT_SECRET":      p.ClientSecret,
				"OP_PUBLIC_CLIENT_ID":   p.PublicClientID,
				"OP_SHORT_CLIENT_ID":    p.ShortClientID,
				"OP_DPOP_API_CLIENT_ID": p.DPoPAPIClientID,
				// The hardened clients (see server.js): their files are in
				// $WORK (rsa.pem, ec.pem, mtls.crt, mtls.key, ca.pem).
				"OP_RSA_CLIENT_ID":         p.Hardened.RSAClientID,
				"OP_EC_CLIENT_ID":          p.Hardened.ECClientID,
				"OP_HMAC_CLIENT_ID":        p.Hardened.HMACClientID,
				"OP_JWT_SECRET":            p.Hardened.JWTSecret,
				"OP_MTLS_CLIENT_ID":        p.Hardened.MTLSClientID,
				"OP_DPOP_CLIENT_ID":        p.Hardened.DPoPClientID,
				"OP_PAR_CLIENT_ID":         p.Hardened.PARClientID,
				"OP_DEVICE_PKCE_CLIENT_ID": p.Hardened.DevicePKCEClientID,
				"OP_SELFSIGNED_CLIENT_ID":  p.Hardened.SelfSignedClientID,
				"OP_CI_CLIENT_ID":          p.CI.ClientID,
			} {
				env.Setenv(k, v)
			}
			for name, b := range map[string][]byte{
				"rsa.pem": p.Hardened.RSAKeyPEM, "ec.pem": p.Hardened.ECKeyPEM, "mtls.crt": p.Hardened.ClientCertPEM,
				"mtls.key": p.Hardened.ClientKeyPEM, "ca.pem": p.Hardened.CAPEM,
				"op-selfsigned.crt": p.Hardened.SelfSignedCertPEM, "op-selfsigned.key": p.Hardened.SelfSignedKeyPEM,
			} {
				if err := os.WriteFile(filepath.Join(env.WorkDir, name), b, 0o600); err != nil {
					return err
				}
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
			"nosecrets":   cmdNoSecrets,
			"exits":       cmdExits,
			"sleep":       cmdSleep,
			"opactive":    cmdOPActive(p),
			"opissued":    cmdOPIssued(p),
			"apiserver":   cmdAPIServer,
			"bigjson":     cmdBigJSON,
			"samebody":    cmdSameBody,
			"jsonfield":   cmdJSONField,
			"dpopsend":    cmdDPoPSend,
			"socketgone":  cmdSocketGone,
			"snapshot":    cmdSnapshot,
			"opexpired":   cmdOPExpired(p),
			"waitexpiry":  cmdWaitExpiry,
			"opassertion": cmdOPAssertion(p),
		},
	})
}

// cmdOPExpired waits, in a bounded loop (at most 15 s), until the provider
// says each token in the FILEs is no longer active: renewal is then seen at
// a real expiry (the hardened clients' tokens live 2 s), not a forced one.
// shipkey counts a token's life from when the answer arrived, after the
// provider issued it (and the provider's exp is in whole seconds): the
// scripts then wait for shipkey's own expiry too (waitexpiry -key LABEL),
// which a fixed second after the provider's did not always cover on a
// loaded machine.
//
//	opexpired FILE...
func cmdOPExpired(p *optest.Provider) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: opexpired FILE...")
		}
		deadline := time.Now().Add(patience(15 * time.Second))
		for _, name := range args {
			tok := strings.TrimSpace(ts.ReadFile(name))
			for {
				active, err := p.Active(tok)
				ts.Check(err)
				if !active {
					break
				}
				if time.Now().After(deadline) {
					ts.Fatalf("opexpired: the token in %s is still active after 15 s", name)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

// cmdOPAssertion writes to FILE a token of the provider's trusted CI
// issuer for the JWT bearer grant (subject ci-job), or with -client a
// client assertion of its CI client signed outside shipkey; -ttl D sets its
// life (negative: expired). "opassertion seen FILE" asserts that the
// provider received FILE's assertion.
//
//	opassertion FILE [-client] [-ttl D]
//	opassertion seen FILE
func cmdOPAssertion(p *optest.Provider) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: opassertion FILE [-client] [-ttl D] | opassertion seen FILE")
		}
		if args[0] == "seen" && len(args) == 2 {
			got, err := p.Assertions()
			ts.Check(err)
			// Other scripts share the provider: FILE's (a new jti each) is
			// among those it received.
			if !slices.Contains(got, strings.TrimSpace(ts.ReadFile(args[1]))) {
				ts.Fatalf("the provider did not receive %s's assertion (%d received)", args[1], len(got))
			}
			return
		}
		fs := flag.NewFlagSet("opassertion", flag.ContinueOnError)
		client := fs.Bool("client", false, "a client assertion of the CI client")
		ttl := fs.Duration("ttl", 5*time.Minute, "life (negative: expired)")
		ts.Check(fs.Parse(args[1:]))
		var tok string
		var err error
		if *client {
			tok, err = p.CI.MintClientAssertion(p.Issuer, *ttl)
		} else {
			tok, err = p.CI.MintAssertion(p.Issuer, "ci-job", *ttl)
		}
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(tok+"\n"), 0o600))
	}
}

// cmdOPActive asserts that the token in FILE is active at the provider
// (RFC 7662 introspection); negated, that it expired or was revoked.
//
//	[!] opactive FILE
//
// cmdOPIssued checks that the provider issued the token in FILE, expired
// or not (a 2 s token may have expired before the check runs).
//
//	opissued FILE
func cmdOPIssued(p *optest.Provider) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: opissued FILE")
		}
		issued, err := p.Issued(strings.TrimSpace(ts.ReadFile(args[0])))
		ts.Check(err)
		if !issued {
			ts.Fatalf("the token in %s was not issued by the provider", args[0])
		}
	}
}

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
