package cli

import (
	"os"
	"strconv"
	"time"
)

// patience turns d, a bound on waiting for something that happens in its
// own time (a process starting or exiting, a screen redrawing, a port
// opening, a passphrase derived), into the bound the tests use: d on an idle
// machine is far too short on a loaded one (two test runs at once beside a
// CPU hog made a 1 s scrypt take a minute), and a bound is there to end a
// hang, not to time the code. The factor is SHIPKEY_TEST_PATIENCE (default
// 6); a passing test waits no longer for it.
func patience(d time.Duration) time.Duration {
	return time.Duration(float64(d) * patienceFactor)
}

var patienceFactor = func() float64 {
	if f, err := strconv.ParseFloat(os.Getenv("SHIPKEY_TEST_PATIENCE"), 64); err == nil && f >= 1 {
		return f
	}
	return 6
}()

// eventually polls cond every 20 ms until it holds (true) or patience(limit)
// has passed (false).
func eventually(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(patience(limit)); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
