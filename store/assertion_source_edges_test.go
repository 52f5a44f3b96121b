//go:build unix

package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// A command given by a relative path (./ci/token, as docs/keycloak.md
// shows) is kept absolute: the app, serve and a renewal from another
// directory run the same program. A name looked up in PATH stays a name.
// A leading ~/ (the app's form has no shell to expand it) is the home
// directory, not a directory named ~.
func TestAssertionCommandByRelativePathIsKeptAbsolute(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	d := Definition{Grant: auth.GrantJWTBearer, AssertionCmd: " ./ci/token  --aud x "}
	if err := CheckAssertionSources(&d); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "ci", "token") + "  --aud x"; d.AssertionCmd != want {
		t.Errorf("assertion_cmd %q, want %q", d.AssertionCmd, want)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	d = Definition{Grant: auth.GrantJWTBearer, AssertionFile: "~/ci.jwt"}
	if err := CheckAssertionSources(&d); err != nil || d.AssertionFile != filepath.Join(home, "ci.jwt") {
		t.Errorf("~/ci.jwt (typed in the app's form, no shell to expand it): %q, %v", d.AssertionFile, err)
	}
	d = Definition{Grant: auth.GrantJWTBearer, AssertionCmd: "~/bin/ci-token x"}
	if err := CheckAssertionSources(&d); err != nil || d.AssertionCmd != filepath.Join(home, "bin", "ci-token")+" x" {
		t.Errorf("~/bin/ci-token: %q, %v", d.AssertionCmd, err)
	}
	d = Definition{Grant: auth.GrantJWTBearer, AssertionCmd: "ci-token --aud x"}
	if err := CheckAssertionSources(&d); err != nil || d.AssertionCmd != "ci-token --aud x" {
		t.Errorf("a command in PATH: %q, %v", d.AssertionCmd, err)
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ci-token")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

const edgeJWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaSJ9.c2ln"

// A command that prints far too much is told so, not "exited with status
// 141" (killed by the pipe shipkey stopped reading); one that prints and
// then hangs is not said to have printed nothing; one that exits 0 but
// leaves a child holding its stdout (a helper starting an agent) gives
// what it printed.
func TestAssertionCommandOutputEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	huge := writeScript(t, "head -c 1000000 /dev/zero | tr '\\0' a")
	if _, err := runAssertionCmd(ctx, []string{huge}); err == nil || err.Error() != "it printed more than 64 KiB" {
		t.Errorf("huge output: %v", err)
	}
	hanging := writeScript(t, "echo "+edgeJWT+"; exec sleep 30")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := runAssertionCmd(short, []string{hanging}); err == nil || !strings.Contains(err.Error(), "printed but did not exit") {
		t.Errorf("a command that printed and hangs: %v", err)
	}
	lingering := writeScript(t, "echo "+edgeJWT+"; sleep 3 &")
	if got, err := runAssertionCmd(ctx, []string{lingering}); err != nil || strings.TrimSpace(got) != edgeJWT {
		t.Errorf("a command leaving a child on its stdout: %q, %v", got, err)
	}
}

// An assertion file that is a named pipe never hangs the command (open
// and read of a pipe block, and SIGTERM or --timeout cannot end them): with
// nobody writing it reads as empty, and a writer that does not finish in
// the request's time is said.
func TestAssertionFileThatIsAPipeDoesNotHang(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "ci.jwt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readAssertionFile(context.Background(), fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "it is empty" {
			t.Errorf("a pipe nobody writes: %v", err)
		}
	case <-time.After(20 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // let the read end
			w.Close()
		}
		t.Fatal("reading a pipe nobody writes did not return")
	}

	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never finishes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString(edgeJWT[:10]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	go func() {
		_, err := readAssertionFile(ctx, fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "nothing finished writing it in time" {
			t.Errorf("a writer that never finishes: %v", err)
		}
	case <-time.After(20 * time.Second):
		w.Close()
		t.Fatal("reading a pipe whose writer never finishes did not return")
	}
}
