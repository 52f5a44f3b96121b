// Package browser opens a URL in the person's browser: $BROWSER when it is
// set, else the desktop's opener. It only starts the browser (never waits
// for it) and never writes to the terminal; a failure is an error for the
// caller to mention, never a reason to stop.
package browser

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// ErrNoBrowser: $BROWSER is unset and there is no desktop to open a URL on.
var ErrNoBrowser = errors.New("no browser: $BROWSER is unset and there is no desktop session")

// Options say how Open finds a browser.
type Options struct {
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// EnvOnly opens only with $BROWSER, never the desktop's opener (the
	// device code grant: the person may be on another machine).
	EnvOnly bool
	// Exited, when set, is told (from another goroutine) when the browser
	// that started exits with an error: one that fails at once would
	// otherwise go unnoticed until the sign-in times out.
	Exited func(error)
}

// Open starts a browser on url. $BROWSER is a colon-separated list of
// commands (the convention of sensible-browser and Python's webbrowser):
// each is split on spaces, "%s" is replaced by the URL (else the URL is the
// last argument), and the first that starts wins. Without $BROWSER it is
// xdg-open on a Linux or BSD desktop (DISPLAY or WAYLAND_DISPLAY set), open
// on macOS, the URL handler on Windows.
func Open(url string, opts Options) error {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if env := getenv("BROWSER"); env != "" {
		var errs []error
		for _, c := range strings.Split(env, ":") {
			args := strings.Fields(c)
			if len(args) == 0 {
				continue
			}
			replaced := false
			for i, a := range args {
				if strings.Contains(a, "%s") {
					args[i], replaced = strings.ReplaceAll(a, "%s", url), true
				}
			}
			if !replaced {
				args = append(args, url)
			}
			if err := start(args, opts.Exited); err != nil {
				errs = append(errs, err)
				continue
			}
			return nil
		}
		return fmt.Errorf("$BROWSER: %w", errors.Join(errs...))
	}
	if opts.EnvOnly {
		return ErrNoBrowser
	}
	switch runtime.GOOS {
	case "darwin":
		return start([]string{"open", url}, opts.Exited)
	case "windows":
		return start([]string{"rundll32", "url.dll,FileProtocolHandler", url}, opts.Exited)
	}
	if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
		return ErrNoBrowser
	}
	return start([]string{"xdg-open", url}, opts.Exited)
}

// start runs args detached from the terminal and reaps it in the
// background, telling exited (when set) of an exit with an error.
func start(args []string, exited func(error)) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		if err := cmd.Wait(); err != nil && exited != nil {
			exited(fmt.Errorf("%s: %w", args[0], err))
		}
	}()
	return nil
}
