package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// benchWorld is a demo realm on 127.0.0.1 and a store in a temp directory
// holding one key "prod" with a valid 15-day access token. The environment
// is set with b.Setenv (the store reads it directly), and the same variables
// are returned for child processes.
func benchWorld(b *testing.B, backend string) []string {
	b.Helper()
	srv := authtest.NewServer(authtest.DemoConfig())
	b.Cleanup(srv.Close)
	return benchWorldOn(b, backend, srv)
}

// benchWorldOn is benchWorld with the key at srv.
func benchWorldOn(b *testing.B, backend string, srv *authtest.Server) []string {
	b.Helper()
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	vars := map[string]string{
		"HOME":               home,
		"XDG_CONFIG_HOME":    filepath.Join(home, ".config"),
		"XDG_STATE_HOME":     filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME":      filepath.Join(home, ".local", "share"),
		"XDG_RUNTIME_DIR":    filepath.Join(home, "run"),
		"SHIPKEY_CONFIG_DIR": filepath.Join(dir, "config"),
		"SHIPKEY_STATE_DIR":  filepath.Join(dir, "state"),
		"SHIPKEY_SECRETS":    backend,
		"SHIPKEY_PASSPHRASE": "bench-passphrase",
		"SHIPKEY_KEY":        "",
		"SHIPKEY_CA_FILE":    "",
		"NO_COLOR":           "1",
	}
	env := os.Environ()
	for k, v := range vars {
		b.Setenv(k, v)
		env = append(env, k+"="+v)
	}
	if backend == "file" {
		b.Cleanup(func() { forgetIdentityCache(filepath.Join(vars["SHIPKEY_STATE_DIR"], "secrets.key.age")) })
	}
	b.Setenv(envClientSecret, authtest.DemoClientSecret)
	b.Setenv(envPassword, authtest.DemoPassword)
	ios, _, errOut := testIO("")
	if code := runWith([]string{"keys", "new", "--label", "prod", "--auth-url", srv.URL(),
		"--client-id", authtest.DemoClientID, "--username", authtest.DemoUsername}, ios, os.Getenv); code != 0 {
		b.Fatalf("keys new: exit %d: %s", code, errOut)
	}
	os.Unsetenv(envClientSecret)
	os.Unsetenv(envPassword)
	return env
}

// BenchmarkTokenInProcess is `shipkey token` with a cached valid token, run
// through runWith as main does: command tree, store open, identity from the
// in-kernel cache (file backend), secrets read, Last Used written, output.
func BenchmarkTokenInProcess(b *testing.B) {
	for _, backend := range []string{"file", "plaintext"} {
		b.Run(backend, func(b *testing.B) {
			benchWorld(b, backend)
			var out, errOut bytes.Buffer
			ios := &iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				if code := runWith([]string{"token"}, ios, os.Getenv); code != 0 || !strings.HasPrefix(out.String(), "eyJ") {
					b.Fatalf("token: exit %d: %s", code, errOut.String())
				}
			}
		})
	}
}

// BenchmarkVersionInProcess is the command layer's fixed cost: building the
// cobra tree and running a command that opens nothing.
func BenchmarkVersionInProcess(b *testing.B) {
	var out bytes.Buffer
	ios := &iostreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if code := runWith([]string{"version"}, ios, func(string) string { return "" }); code != 0 {
			b.Fatalf("version: exit %d: %s", code, out.String())
		}
	}
}

// BenchmarkProcess builds the binary once (static, CGO_ENABLED=0, as the
// release builds it) and execs it per iteration: what a script calling
// `shipkey token` in a loop feels, start-up included. bare-go is the
// yardstick: a Go program that prints one line and exits; read token/file
// as a ratio to it.
func BenchmarkProcess(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "shipkey")
	build := exec.Command(gobin, "build", "-o", bin, shipkeyPkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	bare := filepath.Join(dir, "bare")
	if err := os.WriteFile(bare+".go", []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"bare\\n\") }\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	build = exec.Command(gobin, "build", "-o", bare, bare+".go")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build bare: %v\n%s", err, out)
	}
	exe := func(b *testing.B, env []string, args ...string) {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
		if err := cmd.Run(); err != nil || out.Len() == 0 {
			b.Fatalf("shipkey %v: %v: %s", args, err, errOut.String())
		}
	}
	b.Run("bare-go", func(b *testing.B) {
		for b.Loop() {
			var out bytes.Buffer
			cmd := exec.Command(bare)
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil || out.Len() == 0 {
				b.Fatalf("bare: %v", err)
			}
		}
	})
	// Paired: each iteration runs A then B and keeps their ratio; the
	// reported figure is the median ratio, so the machine's drift cancels
	// (read these, not the ns/op of separate runs). team: the same call
	// through shipkey-team, which links the etcd client (what the split
	// into two programs saves every call).
	team := filepath.Join(dir, TeamBinary)
	build = exec.Command(gobin, "build", "-o", team, shipkeyTeamPkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", TeamBinary, err, out)
	}
	b.Run("paired/token-plaintext", func(b *testing.B) {
		env := benchWorld(b, "plaintext")
		tokenCmd := func(bin string) *exec.Cmd {
			cmd := exec.Command(bin, "token")
			cmd.Env = env
			return cmd
		}
		versionCmd := func() *exec.Cmd {
			cmd := exec.Command(bin, "version")
			cmd.Env = env
			return cmd
		}
		pairedRatios(b, func() *exec.Cmd { return tokenCmd(bin) }, map[string]func() *exec.Cmd{
			"x-bare":         func() *exec.Cmd { return exec.Command(bare) },
			"x-shipkey-team": func() *exec.Cmd { return tokenCmd(team) },
			// The same program printing its version: what the token's own
			// work (store, index, secret) adds to the program's start.
			"x-version": versionCmd,
			// The same call without the audit trail (SHIPKEY_AUDIT=off):
			// what its entry (a lock, a read of the file's tail, one
			// append, /proc reads of the caller) costs a cached token.
			"x-audit-off": func() *exec.Cmd {
				cmd := tokenCmd(bin)
				cmd.Env = append(slices.Clone(env), EnvAudit+"=off")
				return cmd
			},
		})
	})
	// The program's start alone: `shipkey version` opens nothing, so this
	// ratio is the floor under any shipkey command (the runtime's start for
	// an 18 MB binary and the package inits of everything it links, the
	// app's included), which a cached token cannot go below.
	// A DPoP-signed `shipkey api GET` against a bearer one, both at the
	// demo's API (which introspects every token at the realm and checks the
	// proof): what reading the DPoP key, one ES256 signature and the proof's
	// check cost a call.
	b.Run("paired/api-dpop", func(b *testing.B) {
		srv := authtest.NewServer(authtest.DemoConfig())
		b.Cleanup(srv.Close)
		api := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret})
		b.Cleanup(api.Close)
		env := benchWorldOn(b, "plaintext", srv)
		b.Setenv(envClientSecret, authtest.DemoClientSecret)
		ios, _, errOut := testIO("")
		if code := runWith([]string{"keys", "new", "--grant", "client-credentials", "--label", "dpop", "--auth-url", srv.URL(),
			"--client-id", authtest.DemoDPoPClientID, "--dpop", "--api-url", api.URL()}, ios, os.Getenv); code != 0 {
			b.Fatalf("keys new --dpop: exit %d: %s", code, errOut)
		}
		if code := runWith([]string{"keys", "set", "prod", "--api-url", api.URL()}, ios, os.Getenv); code != 0 {
			b.Fatalf("keys set: exit %d: %s", code, errOut)
		}
		os.Unsetenv(envClientSecret)
		call := func(key string) func() *exec.Cmd {
			return func() *exec.Cmd {
				cmd := exec.Command(bin, "api", key, "/v1/shipments")
				cmd.Env = env
				return cmd
			}
		}
		pairedRatios(b, call("dpop"), map[string]func() *exec.Cmd{"x-bearer": call("prod")})
		if api.Count("dpop") == 0 {
			b.Fatal("no DPoP proof reached the API")
		}
	})
	b.Run("paired/version", func(b *testing.B) {
		env := append(os.Environ(), "NO_COLOR=1")
		pairedRatios(b, func() *exec.Cmd {
			cmd := exec.Command(bin, "version")
			cmd.Env = env
			return cmd
		}, map[string]func() *exec.Cmd{"x-bare": func() *exec.Cmd { return exec.Command(bare) }})
	})
	b.Run("version", func(b *testing.B) {
		env := append(os.Environ(), "NO_COLOR=1")
		for b.Loop() {
			exe(b, env, "version")
		}
	})
	for _, backend := range []string{"file", "plaintext"} {
		b.Run("token/"+backend, func(b *testing.B) {
			env := benchWorld(b, backend)
			for b.Loop() {
				exe(b, env, "token")
			}
		})
	}
	// The first call after the kernel cache entry expired (10 min): one scrypt
	// unwrap of the identity. Slow by design; b.Loop keeps it to -benchtime.
	b.Run("token/file_nocache", func(b *testing.B) {
		env := benchWorld(b, "file")
		keyPath := filepath.Join(os.Getenv("SHIPKEY_STATE_DIR"), "secrets.key.age")
		for b.Loop() {
			forgetIdentityCache(keyPath)
			exe(b, env, "token")
		}
	})
}

// pairedRatios runs, per iteration, a then each other command, and reports
// the median of the ratios a/other (wall and CPU) under the other's name.
// Pairing cancels the machine's drift; read these, not the ns/op of separate
// runs.
func pairedRatios(b *testing.B, a func() *exec.Cmd, others map[string]func() *exec.Cmd) {
	ratios := map[string][]float64{}
	cpuRatios := map[string][]float64{}
	for b.Loop() {
		for name, other := range others {
			aWall, aCPU := timeProcess(b, a())
			oWall, oCPU := timeProcess(b, other())
			ratios[name] = append(ratios[name], float64(aWall)/float64(oWall))
			if oCPU > 0 {
				cpuRatios[name] = append(cpuRatios[name], float64(aCPU)/float64(oCPU))
			}
		}
	}
	for name := range others {
		b.ReportMetric(median(ratios[name]), name+"-wall")
		b.ReportMetric(median(cpuRatios[name]), name+"-cpu")
	}
}

// timeProcess runs cmd and returns its wall time and CPU time (user+system,
// the kernel's accounting of the finished child).
func timeProcess(b *testing.B, cmd *exec.Cmd) (time.Duration, time.Duration) {
	b.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil || out.Len() == 0 {
		b.Fatalf("%s: %v: %s", cmd.Path, err, errOut.String())
	}
	wall := time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
