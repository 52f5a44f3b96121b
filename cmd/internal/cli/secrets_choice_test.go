//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSecretsBackendChosenByEnvIsKept: SHIPKEY_SECRETS=plaintext at the
// first keys new is written into config.toml, so a later call without the
// variable finds the secrets (it asked for a passphrase file that did not
// exist).
func TestSecretsBackendChosenByEnvIsKept(t *testing.T) {
	t.Parallel()
	r := newIntegrityRig(t, "plaintext")
	r.newKey("k")
	cfg, err := os.ReadFile(filepath.Join(r.cfgDir, "config.toml"))
	if err != nil || !strings.Contains(string(cfg), `secrets = 'plaintext'`) {
		t.Fatalf("config.toml after keys new with SHIPKEY_SECRETS=plaintext (%v):\n%s", err, cfg)
	}
	r.env = slices.DeleteFunc(r.env, func(kv string) bool {
		return strings.HasPrefix(kv, "SHIPKEY_SECRETS=") || strings.HasPrefix(kv, "SHIPKEY_PASSPHRASE=")
	})
	if out, stderr, code := r.run("token", "k"); code != 0 || !strings.HasPrefix(out, "eyJ") {
		t.Fatalf("token without SHIPKEY_SECRETS: exit %d, %s", code, stderr)
	}
}
