package cli

import (
	"errors"
	"io"
	"os"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// Where secrets come from. No flag ever carries a secret: argv is visible to
// every user of the machine.
const (
	envClientSecret = "SHIPKEY_CLIENT_SECRET"
	envPassword     = "SHIPKEY_PASSWORD"
)

// secretSource says how one secret may be obtained.
type secretSource struct {
	What      string     // "client secret", "password"
	Env       string     // environment variable, checked first unless FromStdin
	FromStdin bool       // read one line from stdin (--password-stdin)
	StdinFlag string     // the flag that set FromStdin; default --password-stdin
	Prompt    text.Clean // hidden prompt text on a terminal
	Hint      string     // what to do when there is no source: "set X or pass --password-stdin"
}

// userPassword is where a user's password comes from: --password-stdin,
// SHIPKEY_PASSWORD or a hidden prompt naming the user (none when username is
// empty).
func userPassword(username string, fromStdin bool) secretSource {
	src := secretSource{
		What:      "password",
		Env:       envPassword,
		FromStdin: fromStdin,
		Hint:      "set " + envPassword + " or pass --password-stdin",
	}
	if username != "" {
		src.Prompt = text.Cleanf("Password for %s: ", username)
	}
	return src
}

// readSecret gets a secret from --password-stdin, the environment or a hidden
// prompt, in that order. With none available it returns a usage error that
// says which variable or flag to use. An empty secret is an error.
func readSecret(ios *iostreams, getenv func(string) string, src secretSource) (string, error) {
	var (
		s   string
		err error
	)
	switch {
	case src.FromStdin:
		s, err = ios.ReadLine()
		if errors.Is(err, io.EOF) {
			flag := src.StdinFlag
			if flag == "" {
				flag = "--password-stdin"
			}
			return "", usageErrorf("no %s on stdin (%s expects one line)", src.What, flag)
		}
		if err != nil {
			return "", usageErrorf("reading the %s from stdin: %v", src.What, err)
		}
	case src.Env != "" && getenv(src.Env) != "":
		return getenv(src.Env), nil
	case ios.ReadSecret != nil:
		s, err = ios.ReadSecret(src.Prompt)
		if err != nil {
			return "", err
		}
	default:
		return "", usageErrorf("no %s and no terminal to ask on: %s", src.What, src.Hint)
	}
	if s == "" {
		return "", usageErrorf("the %s is empty", src.What)
	}
	return s, nil
}

// secretEnvNames are the variables that carry secrets. shipkey reads them
// once at start and removes them from its environment, so that no process it
// starts (the dbus-launch the keyring client autolaunches, clipboard helpers,
// the agent) inherits them.
var secretEnvNames = []string{envPassword, envClientSecret, store.EnvPassphrase}

// takenEnv holds the secret variables takeSecretEnv removed.
var takenEnv = map[string]string{}

// takeSecretEnv moves the secret variables out of the process environment
// into takenEnv.
func takeSecretEnv() {
	for _, name := range secretEnvNames {
		if v, ok := os.LookupEnv(name); ok {
			takenEnv[name] = v
			_ = os.Unsetenv(name)
		}
	}
}

// withTakenEnv is getenv that also answers the variables takeSecretEnv took.
func withTakenEnv(getenv func(string) string) func(string) string {
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return takenEnv[name]
	}
}
