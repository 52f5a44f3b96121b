package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/optest"
	"github.com/shipkey/shipkey/store"
)

// The request timeout comes from --timeout, else SHIPKEY_TIMEOUT, else
// timeout in config.toml, else auth's default; a bad value is one line
// naming the setting.
func TestRequestTimeoutSources(t *testing.T) {
	t.Parallel()
	cfgDir, stateDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("secrets = \"plaintext\"\ntimeout = \"7s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	factoryWith := func(flag time.Duration, env string) *factory {
		ios, _, _ := testIO("")
		f := newFactory(ios, func(k string) string {
			if k == EnvTimeout {
				return env
			}
			return ""
		})
		f.Timeout = flag
		f.openStore = func(o store.Options) (*store.Store, error) {
			o.ConfigDir, o.StateDir = cfgDir, stateDir
			return store.Open(o)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	timeoutOf := func(f *factory, withStore bool) time.Duration {
		t.Helper()
		if withStore {
			if _, err := f.Store(); err != nil {
				t.Fatal(err)
			}
		}
		c, err := f.Auth()
		if err != nil {
			t.Fatal(err)
		}
		return c.Timeout()
	}
	if got := timeoutOf(factoryWith(0, ""), false); got != auth.DefaultTimeout {
		t.Errorf("default: %v", got)
	}
	if got := timeoutOf(factoryWith(0, ""), true); got != 7*time.Second {
		t.Errorf("config.toml timeout: %v", got)
	}
	if got := timeoutOf(factoryWith(0, "2m"), true); got != 2*time.Minute {
		t.Errorf("SHIPKEY_TIMEOUT over config: %v", got)
	}
	if got := timeoutOf(factoryWith(45*time.Second, "2m"), true); got != 45*time.Second {
		t.Errorf("--timeout over all: %v", got)
	}
	if _, err := factoryWith(0, "soon").Auth(); err == nil || err.Error() != `SHIPKEY_TIMEOUT = "soon" is not a positive duration such as "45s" or "2m"` {
		t.Errorf("bad SHIPKEY_TIMEOUT: %v", err)
	}
}

// manualTicks is a ticker the test drives.
type manualTicks chan time.Time

func (m manualTicks) tick() (<-chan time.Time, func()) { return m, func() {} }

// "waiting for the server… (Ns)" appears on a terminal after a second,
// counts the seconds, and is erased when the answer arrives; nothing is
// written when stderr is not a terminal or while the app owns it.
func TestWaitNotice(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	diag := &switchWriter{w: &buf}
	ticks := make(manualTicks)
	n := newWaitNotice(&buf, diag, true)
	n.tick = ticks.tick
	done := n.begin()
	if buf.String() != "" {
		t.Fatal("written before a second passed")
	}
	ticks <- time.Time{}
	ticks <- time.Time{}
	ticks <- time.Time{} // the third is taken once the second is written
	done()
	waitFor(t, func() bool { return strings.HasSuffix(buf.String(), "\r\x1b[K") })
	if s := buf.String(); !strings.Contains(s, "waiting for the server… (1s)") || !strings.Contains(s, "waiting for the server… (2s)") {
		t.Fatalf("output %q", s)
	}

	// Not a terminal: silent.
	var quiet syncBuffer
	q := newWaitNotice(&quiet, &switchWriter{w: &quiet}, false)
	q.tick = ticks.tick
	q.begin()()
	// The app owns the terminal: silent.
	var owned syncBuffer
	o := newWaitNotice(&owned, &switchWriter{w: &bytes.Buffer{}}, true)
	o.tick = ticks.tick
	done = o.begin()
	ticks <- time.Time{}
	ticks <- time.Time{}
	done()
	if quiet.String() != "" || owned.String() != "" {
		t.Fatalf("wrote %q (not a terminal), %q (app running)", quiet.String(), owned.String())
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(patience(5 * time.Second)); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and the test's
// reads at once.
type syncBuffer = optest.LockedBuffer
