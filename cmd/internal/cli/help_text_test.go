package cli

import (
	"strings"
	"testing"
)

// TestRootHelpSaysWhatShipkeyDoes: the root help names every grant, every
// exit code and every environment variable shipkey reads; the request
// flags show (and parse) only on commands that send requests; inspect's
// examples work on any system.
func TestRootHelpSaysWhatShipkeyDoes(t *testing.T) {
	t.Parallel()
	help := func(args ...string) (string, int) {
		ios, out, errOut := testIO("")
		code := runWith(append(args, "--help"), ios, func(string) string { return "" })
		return out.String() + errOut.String(), code
	}
	root, code := help()
	if code != 0 {
		t.Fatalf("shipkey --help: exit %d", code)
	}
	flat := strings.Join(strings.Fields(root), " ")
	for _, want := range []string{
		"password", "client-credentials", "device-code", "authcode",
		"2 usage error", "3 login needed", "4 a team's etcd cluster unavailable", "5 the server refused the credentials",
		"6 the server unreachable", "130 interrupted",
		"SHIPKEY_TIMEOUT", "SHIPKEY_TEAM_TIMEOUT", "SHIPKEY_ETCD_PASSWORD", "SHIPKEY_CA_FILE",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("root help lacks %q", want)
		}
	}
	// Each variable has its own line in the Environment list (the --timeout
	// flag's text also names SHIPKEY_TIMEOUT; that is not the list).
	env, _, _ := strings.Cut(root[strings.Index(root, "Environment:")+1:], "Exit codes")
	for _, v := range []string{"SHIPKEY_TIMEOUT", "SHIPKEY_TEAM_TIMEOUT", "SHIPKEY_ETCD_PASSWORD"} {
		if !strings.Contains(env, "\n  "+v+" ") {
			t.Errorf("the Environment list lacks %s:\n%s", v, env)
		}
	}
	if strings.Contains(flat, "OAuth 2.0 password grant against") {
		t.Errorf("root help still describes the password grant alone")
	}
	for _, args := range [][]string{{"version"}, {"status"}, {"keys", "list"}, {"lock"}, {"team", "ls"}} {
		h, _ := help(args...)
		if strings.Contains(h, "--debug") || strings.Contains(h, "--timeout") {
			t.Errorf("%v --help shows a request flag though it sends no request:\n%s", args, h)
		}
		ios, _, errOut := testIO("")
		if code := runWith(append([]string{"--debug"}, args...), ios, func(string) string { return "" }); code != exitUsage ||
			!strings.Contains(errOut.String(), "sends no request") {
			t.Errorf("--debug %v: exit %d, %q", args, code, errOut.String())
		}
	}
	for _, args := range [][]string{{"token"}, {"keys", "new"}, {"login"}, {"inspect"}, {"logout"}, {"serve"}} {
		if h, _ := help(args...); !strings.Contains(h, "--debug") || !strings.Contains(h, "--timeout") {
			t.Errorf("%v --help lacks the request flags", args)
		}
	}
	if h, _ := help("inspect"); strings.Contains(h, "pbpaste") {
		t.Errorf("inspect --help shows macOS-only pbpaste")
	}
}
