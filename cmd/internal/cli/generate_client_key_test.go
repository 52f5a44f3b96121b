package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth/authtest"
)

// keys new --generate-client-key from a script, the real binary with pipes
// (stdin is no terminal): it prints the public JWKS on stdout and waits for a line on stdin; the script registers the key with the
// realm in between and the grant then succeeds. Stdin closed before any
// line stores nothing.
func TestGenerateClientKeyScripted(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)
	srv := authtest.NewServer(authtest.Config{
		Clients:   []authtest.Client{{ID: "shipping-gen", AuthMethod: authtest.AuthPrivateKeyJWT, ServiceAccount: true}},
		AccessTTL: 10 * time.Minute,
	})
	defer srv.Close()
	dir := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"),
		"SHIPKEY_CONFIG_DIR=" + filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR=" + filepath.Join(dir, "state"),
		"SHIPKEY_SECRETS=file",
		"SHIPKEY_PASSPHRASE=generate-passphrase",
		"NO_COLOR=1",
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience(2*time.Minute))
	defer cancel()
	command := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		return cmd
	}
	newKey := func(label string) *exec.Cmd {
		return command("keys", "new", "--grant", "client-credentials", "--label", label,
			"--auth-url", srv.URL(), "--client-id", "shipping-gen", "--generate-client-key")
	}

	// Stdin closed before the go-ahead: nothing is stored.
	cmd := newKey("early")
	cmd.Stdin = strings.NewReader("")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if code := exitCodeOf(err); code != 1 {
		t.Fatalf("stdin closed at once: exit %d, want 1\n%s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "no go-ahead on stdin") || !strings.Contains(errOut.String(), "nothing was stored") {
		t.Errorf("stdin closed at once: stderr %q", errOut.String())
	}
	if !json.Valid(bytes.TrimSpace(out)) {
		t.Errorf("stdout is not the JWKS: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "config", "config.toml")); !os.IsNotExist(err) {
		t.Errorf("config.toml after a key that was not made: %v", err)
	}

	// The script's way: read the JWKS, register it, write a line.
	cmd = newKey("gen")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var jwks json.RawMessage
	if err := json.NewDecoder(stdout).Decode(&jwks); err != nil {
		t.Fatalf("no JWKS on stdout: %v\n%s", err, errOut.String())
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil || len(set.Keys) != 1 || set.Keys[0].Algorithm != "ES256" || !set.Keys[0].IsPublic() {
		t.Fatalf("the JWKS %s: %v", jwks, err)
	}
	srv.SetClient(authtest.Client{ID: "shipping-gen", AuthMethod: authtest.AuthPrivateKeyJWT, ServiceAccount: true, JWKS: string(jwks)})
	if _, err := stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("keys new: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "then write a line to stdin") || !strings.Contains(errOut.String(), "Got API key gen") {
		t.Errorf("stderr: %q", errOut.String())
	}
	tok, err := command("token", "gen", "--force-refresh").Output()
	if err != nil || !strings.HasPrefix(string(tok), "eyJ") {
		t.Errorf("token gen --force-refresh with the generated key: %v %q", err, tok)
	}
}

// exitCodeOf is a finished command's exit code (0 for no error, -1 when it
// did not run to an exit).
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
