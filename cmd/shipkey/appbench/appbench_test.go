//go:build linux

package appbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/storetest"
	"github.com/shipkey/shipkey/tui"
)

// buildCache is one static build, made once per run.
type buildCache struct {
	once sync.Once
	bin  string
	err  error
}

var built, builtBare buildCache

// get builds pkg into a temporary directory as name, once.
func (c *buildCache) get(b *testing.B, pkg, name string) string {
	b.Helper()
	c.once.Do(func() {
		dir, err := os.MkdirTemp("", "shipkey-appbench-")
		if err != nil {
			c.err = err
			return
		}
		c.bin = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", c.bin, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			c.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if c.err != nil {
		b.Fatal(c.err)
	}
	return c.bin
}

// binary builds the static shipkey once per run, or returns
// $SHIPKEY_APPBENCH_BIN (another build, to compare releases).
func binary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("SHIPKEY_APPBENCH_BIN"); bin != "" {
		return bin
	}
	return built.get(b, "github.com/shipkey/shipkey/cmd/shipkey", "shipkey")
}

// bareBinary builds the bare Bubble Tea program (./bare) once per run: the
// framework's floor, measured beside the app.
func bareBinary(b *testing.B) string {
	return builtBare.get(b, "github.com/shipkey/shipkey/cmd/shipkey/appbench/bare", "bare")
}

// bareReady is what the bare program shows.
const bareReady = "bare › one static line"

func TestMain(m *testing.M) {
	code := m.Run()
	for _, bin := range []string{built.bin, builtBare.bin} {
		if bin != "" {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

// term is a private tmux server with one session "t".
type term struct {
	b      *testing.B
	socket string
}

func needTmux(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("tmux is required in CI: apt-get install -y tmux")
		}
		b.Skip("tmux not installed")
	}
}

func (t *term) tmux(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", append([]string{"-L", t.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

// start runs argv in a new private tmux server at 100×30, env added to the
// pane's environment.
func start(b *testing.B, env []string, argv ...string) *term {
	b.Helper()
	t := &term{b: b, socket: fmt.Sprintf("shipkey-appbench-%d-%d", os.Getpid(), time.Now().UnixNano())}
	b.Cleanup(func() { _, _ = t.tmux("kill-server") })
	args := []string{"start-server", ";", "set", "-g", "escape-time", "0", ";", "set", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "t", "-x", "100", "-y", "30"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	if out, err := t.tmux(append(args, argv...)...); err != nil {
		b.Fatalf("tmux: %v: %s", err, out)
	}
	return t
}

// respawn kills the pane's process and runs argv in its place.
func (t *term) respawn(env []string, argv ...string) {
	args := []string{"respawn-pane", "-k", "-t", "t"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	if out, err := t.tmux(append(args, argv...)...); err != nil {
		t.b.Fatalf("respawn-pane: %v: %s", err, out)
	}
}

func (t *term) screen() string {
	out, _ := t.tmux("capture-pane", "-p", "-t", "t")
	return out
}

// waitText polls the screen until it shows every sub (at most 20 s).
func (t *term) waitText(subs ...string) string {
	s, err := t.await(subs...)
	if err != nil {
		t.b.Fatal(err)
	}
	return s
}

// await is waitText for other goroutines than the benchmark's.
func (t *term) await(subs ...string) (string, error) {
	var s string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		s = t.screen()
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(s, sub)
		}
		if ok {
			return s, nil
		}
	}
	return s, fmt.Errorf("timed out waiting for %q; screen:\n%s", subs, s)
}

func (t *term) pid() (int, error) {
	out, err := t.tmux("display-message", "-p", "-t", "t", "#{pane_pid}")
	if err != nil {
		return 0, fmt.Errorf("pane pid: %v: %s", err, out)
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// homeEnv is a private HOME, config and state for the app.
func homeEnv(b *testing.B) []string {
	home := b.TempDir()
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"), "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
		"DISPLAY=", "WAYLAND_DISPLAY=", "DBUS_SESSION_BUS_ADDRESS=", "BROWSER=", "LC_ALL=C", "SHIPKEY_CA_FILE="}
}

// BenchmarkFirstFrame is exec → first frame of `shipkey` (the app on its
// welcome screen) inside tmux, plaintext stores of 1 and 100k keys, and of
// the bare Bubble Tea program (bare: the framework's floor). It reports the
// median and the slowest of b.N starts (ms-median, ms-max).
func BenchmarkFirstFrame(b *testing.B) {
	needTmux(b)
	for _, n := range []int{0, 1, 100000} {
		name, bin, ready := fmt.Sprintf("keys=%d", n), "", "shipkey › Welcome"
		if n == 0 {
			name, bin, ready = "bare", bareBinary(b), bareReady
		} else {
			bin = binary(b)
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			startFile, frameFile := filepath.Join(dir, "exec"), filepath.Join(dir, "frame")
			env := append(homeEnv(b), tui.EnvTraceFirstFrame+"="+frameFile)
			if n > 0 {
				env = append(env, storetest.Populate(b, n, "plaintext").Env()...)
			}
			launch := []string{"bash", "-c", `printf '%s\n' "$EPOCHREALTIME" > "$0"; exec "$1"`, startFile, bin}
			t := start(b, env, "sleep", "1000")
			once := func() time.Duration {
				_ = os.Remove(startFile)
				_ = os.Remove(frameFile)
				t.respawn(env, launch...)
				var at, from int64
				for end := time.Now().Add(20 * time.Second); at == 0; time.Sleep(2 * time.Millisecond) {
					if time.Now().After(end) {
						b.Fatalf("no first frame traced; screen:\n%s", t.screen())
					}
					if data, err := os.ReadFile(frameFile); err == nil && strings.HasSuffix(string(data), "\n") {
						at, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
					}
				}
				data, err := os.ReadFile(startFile)
				if err != nil {
					b.Fatal(err)
				}
				sec, frac, _ := strings.Cut(strings.TrimSpace(string(data)), ".")
				s, _ := strconv.ParseInt(sec, 10, 64)
				us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
				from = s*1e9 + us*1e3
				t.waitText(ready) // the frame is whole before the next start
				return time.Duration(at - from)
			}
			once() // warm-up: page cache, the binary
			var ds []time.Duration
			b.ResetTimer()
			for range b.N {
				ds = append(ds, once())
			}
			b.StopTimer()
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2])/1e6, "ms-median")
			b.ReportMetric(float64(ds[len(ds)-1])/1e6, "ms-max")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpu is a process's CPU time: utime+stime from /proc/<pid>/stat (clock
// ticks, 10 ms) and the sum of its threads' time on CPU from schedstat (ns).
type cpu struct{ ticks, ns int64 }

func cpuOf(pid int) (cpu, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpu{}, err
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	c := cpu{ticks: ut + st}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		if data, err := os.ReadFile(t); err == nil {
			ns, _ := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64)
			c.ns += ns
		}
	}
	return c, nil
}

// idleScreen is how to reach a screen: the app's arguments and store, the
// keys to press and what the screen then shows. The 1-key store's token
// lasts a year, its refresh window 30 minutes from the store's generation
// (store/storetest): its countdown shows seconds for half an hour, then
// "expired". The demo's token lasts 5 minutes (seconds shown).
type idleScreen struct {
	name  string
	demo  bool     // `shipkey demo` (in-process server, memory store); else a 1-key store
	bare  bool     // the bare Bubble Tea program instead of shipkey (the floor)
	steps []string // keys sent, one at a time, after the app showed ready
	ready []string // what the screen shows once reached
}

var idleScreens = []idleScreen{
	{name: "bare", bare: true, ready: []string{bareReady}},
	{name: "welcome", ready: []string{"shipkey › Welcome", "Default key"}},
	{name: "keys", steps: []string{"2"}, ready: []string{"shipkey › API keys", "key-0000000"}},
	{name: "details-store", steps: []string{"1"}, ready: []string{"shipkey › Token details", "Access expires"}},
	{name: "form", demo: true, ready: []string{"shipkey › Get API Key", "Password"}},
	{name: "details", demo: true, steps: []string{"Enter"}, ready: []string{"shipkey › Token details", "Refresh expires"}},
	{name: "inspector", demo: true, steps: []string{"Enter", "3"}, ready: []string{"shipkey › Claims inspector", "preferred_username"}},
	{name: "device-code", demo: true, steps: []string{"Right", "Right", "Enter"}, ready: []string{"shipkey › Sign in", "Code expires"}},
}

// BenchmarkIdle is the app's CPU while it sits on each screen, and the bare
// Bubble Tea program's (bare: the framework's floor), for
// SHIPKEY_IDLE_SECONDS (default 20): every screen in its own tmux server, all
// at once. It reports, per screen, the percentage of one core from schedstat
// (%cpu-NAME) and from utime+stime (%tick-NAME, ±0.05 at 20 s). Run it with
// -benchtime 1x.
func BenchmarkIdle(b *testing.B) {
	needTmux(b)
	bin := binary(b)
	secs := 20
	if s, err := strconv.Atoi(os.Getenv("SHIPKEY_IDLE_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	st := storetest.Populate(b, 1, "plaintext")
	for range b.N {
		results := make([]idleResult, len(idleScreens))
		var wg sync.WaitGroup
		for i, sc := range idleScreens {
			env := homeEnv(b)
			argv := []string{bin}
			if sc.bare {
				argv = []string{bareBinary(b)}
			} else if sc.demo {
				env = append(env, "SHIPKEY_SECRETS=memory")
				argv = append(argv, "demo")
			} else {
				env = append(env, st.Env()...)
			}
			t := start(b, env, argv...)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := measure(t, sc, secs, &results[i]); err != nil {
					b.Errorf("%s: %v", sc.name, err)
				}
			}()
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		for _, r := range results {
			b.ReportMetric(r.pct, "%cpu-"+r.name)
			b.ReportMetric(r.ticks, "%tick-"+r.name)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// idleResult is a screen's CPU, in percent of one core.
type idleResult struct {
	name       string
	pct, ticks float64
}

// measure reaches sc in t, lets it settle, and measures the app's CPU over
// secs seconds.
func measure(t *term, sc idleScreen, secs int, r *idleResult) error {
	first := []string{"shipkey › Welcome", "Default key"}
	if sc.demo {
		first = []string{"shipkey › Get API Key", "Password"}
	}
	if sc.bare {
		first = sc.ready
	}
	if _, err := t.await(first...); err != nil {
		return err
	}
	for _, k := range sc.steps {
		if out, err := t.tmux("send-keys", "-t", "t", k); err != nil {
			return fmt.Errorf("send-keys %s: %v: %s", k, err, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if _, err := t.await(sc.ready...); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // settle: answers, first loads
	pid, err := t.pid()
	if err != nil {
		return err
	}
	c0, err := cpuOf(pid)
	t0 := time.Now()
	if err != nil {
		return err
	}
	time.Sleep(time.Duration(secs) * time.Second)
	c1, err := cpuOf(pid)
	t1 := time.Now()
	if err != nil {
		return err
	}
	if _, err := t.await(sc.ready...); err != nil { // still there
		return err
	}
	wall := float64(t1.Sub(t0))
	*r = idleResult{sc.name, 100 * float64(c1.ns-c0.ns) / wall, 100 * float64(c1.ticks-c0.ticks) * 1e7 / wall}
	return nil
}

// BenchmarkMemory is the app's memory and its wait for the key list as a
// person meets them: shipkey on plaintext stores of 1 and 100k keys inside
// tmux, b.N starts. Each start waits for the welcome screen with the keys
// loaded ("Keys" and the default key), opens the API keys table ("2") and
// waits for its first row, then reads the process's peak resident set
// (VmHWM in /proc/<pid>/status: every page it held at any moment, heap,
// runtime, binary and mapped index) and its resident set then (VmRSS).
// Then `shipkey token` marks a key in sight used, and once the table shows
// it "just now" (the app read the list again, the old one kept until the
// new one was whole) the peak is read again (MiB-peak-reload).
// keys-ms is the time from the first frame (SHIPKEY_TRACE_FIRST_FRAME) to
// the first capture of the screen that shows the keys (tmux polled as fast
// as it answers: a few ms of resolution). It reports the medians:
// MiB-peak, MiB-rss, keys-ms (and MiB-peak-max, the largest peak).
func BenchmarkMemory(b *testing.B) {
	needTmux(b)
	bin := binary(b)
	for _, n := range []int{1, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			frameFile := filepath.Join(b.TempDir(), "frame")
			env := append(append(homeEnv(b), tui.EnvTraceFirstFrame+"="+frameFile), storetest.Populate(b, n, "plaintext").Env()...)
			keysLine := fmt.Sprintf("Keys          %d", n)
			t := start(b, env, "sleep", "1000")
			var peaks, rss, waits, reloads []float64
			for range b.N {
				_ = os.Remove(frameFile)
				t.respawn(env, bin)
				var shown time.Time
				for end := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
					if time.Now().After(end) {
						b.Fatalf("no key list; screen:\n%s", t.screen())
					}
					if s := t.screen(); strings.Contains(s, keysLine) && strings.Contains(s, "Default key") {
						shown = time.Now()
						break
					}
				}
				var first int64
				for end := time.Now().Add(10 * time.Second); first == 0; time.Sleep(time.Millisecond) {
					// The trace is written just after the frame.
					if time.Now().After(end) {
						b.Fatal("no first frame traced")
					}
					if data, err := os.ReadFile(frameFile); err == nil && strings.HasSuffix(string(data), "\n") {
						first, _ = strconv.ParseInt(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]), 10, 64)
					}
				}
				waits = append(waits, max(0, float64(shown.UnixNano()-first)/1e6))
				if out, err := t.tmux("send-keys", "-t", "t", "2"); err != nil {
					b.Fatalf("send-keys: %v: %s", err, out)
				}
				screen := t.waitText("shipkey › API keys", storetest.Label(0))
				time.Sleep(time.Second) // settle: the load's garbage collected
				pid, err := t.pid()
				if err != nil {
					b.Fatal(err)
				}
				hwm, cur, err := residentOf(pid)
				if err != nil {
					b.Fatal(err)
				}
				peaks, rss = append(peaks, hwm), append(rss, cur)
				// A change by another process: `shipkey token` marks a key
				// in sight used; the app reads the list again, the old one
				// still shown meanwhile.
				label := usedLabel(screen)
				if label == "" {
					continue
				}
				cmd := exec.Command(bin, "token", label)
				cmd.Env = append(os.Environ(), env...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("shipkey token %s: %v: %s", label, err, out)
				}
				for end := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(end) {
						b.Fatalf("the table never showed %s just used; screen:\n%s", label, t.screen())
					}
					if rowOf(t.screen(), label, "just now") {
						break
					}
				}
				time.Sleep(time.Second)
				if hwm, _, err = residentOf(pid); err != nil {
					b.Fatal(err)
				}
				reloads = append(reloads, hwm)
			}
			b.StopTimer()
			for _, s := range [][]float64{peaks, rss, waits, reloads} {
				slices.Sort(s)
			}
			b.ReportMetric(peaks[len(peaks)/2], "MiB-peak")
			b.ReportMetric(peaks[len(peaks)-1], "MiB-peak-max")
			b.ReportMetric(rss[len(rss)/2], "MiB-rss")
			b.ReportMetric(waits[len(waits)/2], "keys-ms")
			if len(reloads) > 0 {
				b.ReportMetric(reloads[len(reloads)/2], "MiB-peak-reload")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// usedLabel is the label of a key in sight on the keys table (not the
// first: the default) that was not used within the minute, or "".
func usedLabel(screen string) string {
	for i := 1; i < 20; i++ {
		if l := storetest.Label(i); strings.Contains(screen, l) && !rowOf(screen, l, "just now") {
			return l
		}
	}
	return ""
}

// rowOf reports whether the screen's line of label shows sub.
func rowOf(screen, label, sub string) bool {
	for line := range strings.Lines(screen) {
		if strings.Contains(line, label) && strings.Contains(line, sub) {
			return true
		}
	}
	return false
}

// residentOf is a process's peak resident set (VmHWM) and its resident set
// now (VmRSS), in MiB, from /proc/<pid>/status.
func residentOf(pid int) (peak, now float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(data)) {
		name, rest, _ := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if len(f) < 1 || (name != "VmHWM" && name != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q", name, line)
		}
		if name == "VmHWM" {
			peak = kb / 1024
		} else {
			now = kb / 1024
		}
	}
	if peak == 0 {
		return 0, 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
	}
	return peak, now, nil
}
