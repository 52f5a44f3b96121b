//go:build linux

package appbench

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/storetest"
)

// BenchmarkIdleWhileUsed is the app left open on the API keys table of a
// store of 1k, 10k and 100k keys (plaintext, store/storetest) while a
// script uses a key every 2 s (`shipkey token LABEL`, which writes its Last
// Used), for SHIPKEY_IDLE_SECONDS (default 20). It reports the app's CPU
// as a percentage of one core (%cpu from schedstat, %tick from
// utime+stime); the script's own CPU is not counted. Run it with
// -benchtime 1x:
//
//	go test ./cmd/shipkey/appbench -run '^$' -bench IdleWhileUsed -benchtime 1x
func BenchmarkIdleWhileUsed(b *testing.B) {
	needTmux(b)
	bin := binary(b)
	secs := 20
	if s, err := strconv.Atoi(os.Getenv("SHIPKEY_IDLE_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			env := append(homeEnv(b), storetest.Populate(b, n, "plaintext").Env()...)
			var pcts, ticks []float64
			for range b.N {
				t := start(b, env, bin)
				keysLine := fmt.Sprintf("Keys          %d", n)
				for end := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(end) {
						b.Fatalf("no key list; screen:\n%s", t.screen())
					}
					if s := t.screen(); strings.Contains(s, keysLine) && strings.Contains(s, "Default key") {
						break
					}
				}
				if out, err := t.tmux("send-keys", "-t", "t", "2"); err != nil {
					b.Fatalf("send-keys: %v: %s", err, out)
				}
				t.waitText("shipkey › API keys", storetest.Label(0))
				time.Sleep(2 * time.Second) // settle: the load's garbage collected
				pid, err := t.pid()
				if err != nil {
					b.Fatal(err)
				}
				c0, err := cpuOf(pid)
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				for i := 0; i < secs/2; i++ {
					label := storetest.Label((i*7919 + 1) % n)
					cmd := exec.Command(bin, "token", label)
					cmd.Env = append(os.Environ(), env...)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("shipkey token %s: %v: %s", label, err, out)
					}
					time.Sleep(time.Until(t0.Add(time.Duration(i+1) * 2 * time.Second)))
				}
				c1, err := cpuOf(pid)
				if err != nil {
					b.Fatal(err)
				}
				wall := float64(time.Since(t0))
				t.waitText("shipkey › API keys") // still there
				pcts = append(pcts, 100*float64(c1.ns-c0.ns)/wall)
				ticks = append(ticks, 100*float64(c1.ticks-c0.ticks)*1e7/wall)
				_, _ = t.tmux("kill-server")
			}
			slices.Sort(pcts)
			slices.Sort(ticks)
			b.ReportMetric(pcts[len(pcts)/2], "%cpu")
			b.ReportMetric(ticks[len(ticks)/2], "%tick")
			b.ReportMetric(0, "ns/op")
		})
	}
}
