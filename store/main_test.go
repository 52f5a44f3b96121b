package store

import (
	"os"
	"testing"
)

// TestMain clears shipkey's environment variables once, so that tests run in
// parallel see none of the caller's settings; a test that needs one sets it
// with t.Setenv and so runs alone (before the parallel ones).
func TestMain(m *testing.M) {
	for _, v := range shipkeyEnv {
		os.Unsetenv(v)
	}
	os.Exit(m.Run())
}

// shipkeyEnv are the variables the store reads.
var shipkeyEnv = []string{EnvPassphrase, EnvSecrets, EnvKey, EnvConfigDir, EnvStateDir, EnvUnlockTimeout, EnvUnlockMech}
