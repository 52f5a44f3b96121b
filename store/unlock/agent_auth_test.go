//go:build unix

package unlock

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
)

// shortDir is a directory whose paths fit a unix socket's name.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ska")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// plantFake listens on sock as a same-uid program would after replacing the
// agent's socket: it answers every line with "ok" and a made-up identity,
// and records everything it is sent.
func plantFake(t *testing.T, sock string) func() string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	fakeID, _ := age.GenerateX25519Identity()
	var mu sync.Mutex
	var got strings.Builder
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				rd := bufio.NewReader(c)
				for {
					line, err := rd.ReadString('\n')
					mu.Lock()
					got.WriteString(line)
					mu.Unlock()
					if err != nil {
						return
					}
					_, _ = c.Write([]byte("ok " + fakeID.String() + "\n"))
				}
			}()
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return got.String()
	}
}

// A program that put its own socket where the agent's is (a container of
// the same user given the runtime directory) is neither given the identity
// nor believed: it does not know the secret in the state directory.
func TestAgentRefusesAPlantedSocket(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	sock := filepath.Join(dir, "run", "agent.sock")
	secret := filepath.Join(dir, "state", "agent.secret")
	if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	sent := plantFake(t, sock)
	id, _ := age.GenerateX25519Identity()

	err := AgentPut(sock, secret, "", "store-desc", id, time.Minute, time.Hour)
	if !errors.Is(err, ErrNotTheAgent) {
		t.Fatalf("AgentPut to a planted socket = %v, want ErrNotTheAgent", err)
	}
	if s := sent(); strings.Contains(s, id.String()) || strings.Contains(s, "put") {
		t.Fatalf("the planted socket received %q", s)
	}
	if got, ok := AgentGet(sock, secret, "store-desc"); ok {
		t.Fatalf("AgentGet believed the planted socket: %v", got)
	}
	if AgentForget(sock, secret, "store-desc") {
		t.Fatal("AgentForget believed the planted socket")
	}
}

// The agent tells nothing to a client that does not know its secret, and
// serves one that does.
func TestAgentRefusesAClientWithoutTheSecret(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	sock := filepath.Join(dir, "run", "agent.sock")
	secret := filepath.Join(dir, "agent.secret")
	other := filepath.Join(dir, "other.secret")
	if err := AgentSecret(other); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- ServeAgent(ctx, AgentConfig{Socket: sock, Secret: secret, Idle: time.Minute, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not start")
	}
	if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, %v", fi, err)
	}
	id, _ := age.GenerateX25519Identity()
	if err := AgentPut(sock, secret, "", "d", id, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, ok := AgentGet(sock, other, "d"); ok || got != nil {
		t.Fatal("the agent served a client with another secret")
	}
	// A client that skips the handshake gets nothing either.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte("get d\n"))
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if strings.Contains(line, id.String()) {
		t.Fatal("the agent answered a request without a handshake with the identity")
	}
	if got, ok := AgentGet(sock, secret, "d"); !ok || got.String() != id.String() {
		t.Fatalf("AgentGet with the secret = %v, %v", got, ok)
	}
	if !AgentForget(sock, secret, "d") {
		t.Fatal("AgentForget with the secret failed")
	}
}

// A secret file others can read is refused.
func TestAgentSecretMustBePrivate(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "agent.secret")
	if err := AgentSecret(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AgentSecret(p); err == nil || !strings.Contains(err.Error(), "not a private file") {
		t.Fatalf("AgentSecret on a 0644 file = %v", err)
	}
}
