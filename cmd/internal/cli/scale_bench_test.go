//go:build unix

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/storetest"
)

// BenchmarkScale execs the built binary against stores of 1, 1k, 10k and
// 100k keys (store/storetest, generated through store.Import and cached
// under os.TempDir, so only the first run pays for generating 100k keys):
//
//   - token: `shipkey token LABEL` of a key in the middle, with a cached
//     valid token and Last Used written (the file backend, its identity
//     from the kernel keyring cache after one warm-up call);
//   - keys-list, keys-list-json, status, status-json: `shipkey keys list
//     [--json]`, `shipkey status [--json]`, one key at a time from the
//     index (memory flat).
//
// The binary is a static build (CGO_ENABLED=0), as released. Besides the
// time it reports the CPU time (user and system) of a call (cpu-ms/op), its
// page faults (faults/op: minor and major, which load changes little) and
// the peak RSS of one call (maxrss-MiB, by /usr/bin/time). Run one size:
//
//	go test ./cmd/internal/cli -run '^$' -bench 'Scale/token/keys=100000$' -benchtime 20x
//
// The listings' memory at 1k, 10k and 100k keys:
//
//	go test ./cmd/internal/cli -run '^$' -bench 'Scale/(keys-list|status).*/keys=1[0-9]*00$' -benchtime 3x
func BenchmarkScale(b *testing.B) {
	bin := buildBinary(b)
	home := b.TempDir()
	base := append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".state"),
		"XDG_RUNTIME_DIR="+filepath.Join(home, "run"), "SHIPKEY_CA_FILE=", "NO_COLOR=1")
	for _, cmd := range []string{"token", "keys-list", "keys-list-json", "status", "status-json"} {
		for _, n := range []int{1, 1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/keys=%d", cmd, n), func(b *testing.B) {
				st := storetest.Populate(b, n, "file")
				b.Cleanup(func() { forgetIdentityCache(filepath.Join(st.StateDir, "secrets.key.age")) })
				env := append(append([]string{}, base...), st.Env()...)
				args := map[string][]string{
					"token":          {"token", storetest.Label(n / 2)},
					"keys-list":      {"keys", "list"},
					"keys-list-json": {"keys", "list", "--json"},
					"status":         {"status"},
					"status-json":    {"status", "--json"},
				}[cmd]
				execShipkey(b, bin, env, args) // warm-up: the identity's one scrypt, page cache
				var cpu time.Duration
				var faults int64
				for b.Loop() {
					c, f := execShipkey(b, bin, env, args)
					cpu, faults = cpu+c, faults+f
				}
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
				if kib := peakRSS(b, bin, env, args); kib > 0 {
					b.ReportMetric(float64(kib)/1024, "maxrss-MiB")
				}
			})
		}
	}
}

// buildBinary builds shipkey once per benchmark.
func buildBinary(b *testing.B) string {
	b.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command")
	}
	bin := filepath.Join(b.TempDir(), "shipkey")
	build := exec.Command(gobin, "build", "-o", bin, shipkeyPkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// execShipkey runs the binary once and returns its CPU time and page
// faults.
func execShipkey(b *testing.B, bin string, env, args []string) (time.Duration, int64) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
	if err := cmd.Run(); err != nil || out.Len() == 0 {
		b.Fatalf("shipkey %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	var faults int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		faults = ru.Minflt + ru.Majflt
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), faults
}

// peakRSS runs the binary once under /usr/bin/time and returns its peak
// RSS in KiB (0 without GNU time). The rusage of a child that Go starts
// directly is no use: Go starts it with vfork, and Linux carries the
// parent's high-water mark (this benchmark's, after generating a store)
// across the exec.
func peakRSS(b *testing.B, bin string, env, args []string) int64 {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return 0
	}
	outFile := filepath.Join(b.TempDir(), "rss")
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", outFile, bin}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("time shipkey: %v: %s", err, out)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		return 0
	}
	kib, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return kib
}
