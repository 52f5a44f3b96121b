// Package etcdtest starts a real etcd cluster (the Debian etcd-server
// binary) on 127.0.0.1 for tests: free ports, fresh data directories,
// bounded waits, every member killed on Close. Start it once per test
// package (TestMain) and give each test its own team prefix.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string
	peerURL   string
	dataDir   string
	cmd       *exec.Cmd
	done      chan struct{}
	stopped   bool
	logPath   string
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	dir     string
	initial string
	mu      sync.Mutex
}

// Binary finds etcd; with CI=true a missing binary is the caller's failure.
func Binary() (string, error) {
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", errors.New("etcd not found: apt-get install -y etcd-server etcd-client")
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts an n-member cluster under dir and waits (bounded) until it
// answers. Its ports are free when chosen, but another process (a test
// running beside this one) may take one before etcd binds it: a member that
// exits while the cluster starts is such a clash, and the cluster is
// started again on other ports, up to three times.
func Start(dir string, n int) (*Cluster, error) {
	if _, err := Binary(); err != nil {
		return nil, err
	}
	var err error
	for attempt := range 3 {
		var c *Cluster
		c, err = start(filepath.Join(dir, fmt.Sprintf("try%d", attempt)), n)
		if err == nil || !errors.Is(err, errMemberExited) {
			return c, err
		}
	}
	return nil, err
}

var errMemberExited = errors.New("exited")

func start(dir string, n int) (*Cluster, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	var initial []string
	for i := range n {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", cp),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", pp),
			dataDir:   filepath.Join(dir, fmt.Sprintf("m%d", i)),
			logPath:   filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.peerURL)
	}
	c.initial = strings.Join(initial, ",")
	for _, m := range c.Members {
		if err := c.run(m, "new"); err != nil {
			c.Close()
			return nil, err
		}
	}
	// Bounded: a cluster of a loaded machine (two test runs and -race
	// beside it) has taken over 10 s to elect its first leader.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) run(m *Member, state string) error {
	bin, _ := Binary()
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin,
		"--name", m.Name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", c.initial,
		"--initial-cluster-state", state,
		"--initial-cluster-token", "shipkey-test",
		// A heartbeat every 100 ms, an election after 1 s without one: an
		// idle 3-member cluster spends about 55 ms of CPU a second (at 50 and
		// 500 ms: 80), and a new leader is elected within 1-2 s of a kill,
		// well inside the bound (SHIPKEY_TEAM_TIMEOUT) of the tests that
		// kill one.
		"--heartbeat-interval", "100",
		"--election-timeout", "1000",
		"--snapshot-count", "10000",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = memberProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start etcd: %w", err)
	}
	m.cmd, m.done, m.stopped = cmd, make(chan struct{}), false
	go func() { _ = cmd.Wait(); logf.Close(); close(m.done) }()
	return nil
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

// Client dials the whole cluster.
func (c *Cluster) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
}

// DeletePrefix deletes every key under prefix: what an earlier run of a
// test in the same process (go test -count=2) left there.
func (c *Cluster) DeletePrefix(ctx context.Context, prefix string) error {
	cli, err := c.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Delete(ctx, prefix, clientv3.WithPrefix())
	return err
}

// WaitHealthy waits until a linearizable read succeeds through every
// running member.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for _, m := range c.Members {
		if m.stopped {
			continue
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		for {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := cli.Get(rctx, "health")
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				cli.Close()
				return fmt.Errorf("etcd member %s did not become healthy: %v (log %s)", m.Name, err, m.logPath)
			}
			select {
			case <-m.done:
				cli.Close()
				return fmt.Errorf("etcd member %s %w (log %s)", m.Name, errMemberExited, m.logPath)
			case <-time.After(50 * time.Millisecond):
			}
		}
		cli.Close()
	}
	return nil
}

// Leader is the index of the current leader.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for i, m := range c.Members {
		if m.stopped {
			continue
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(rctx, m.ClientURL)
		cancel()
		cli.Close()
		if err == nil && st.Header.MemberId == st.Leader {
			return i, nil
		}
	}
	return -1, errors.New("no etcd leader found")
}

// Kill sends SIGKILL to member i and waits for it to exit.
func (c *Cluster) Kill(i int) { c.signal(i, syscall.SIGKILL) }

// Stop stops member i (SIGTERM) and waits for it to exit.
func (c *Cluster) Stop(i int) { c.signal(i, syscall.SIGTERM) }

func (c *Cluster) signal(i int, sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.Members[i]
	if m.stopped || m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.stopped = true
}

// Restart starts a stopped member again on its data directory.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.Members[i]
	if !m.stopped {
		return nil
	}
	return c.run(m, "existing")
}

// Close kills every member.
func (c *Cluster) Close() {
	for i := range c.Members {
		c.Kill(i)
	}
}

// Need starts a cluster of members for one test, closed when it ends. Where
// etcd cannot start, the test fails under CI=true (CI installs etcd) and is
// skipped elsewhere, saying why.
func Need(tb testing.TB, members int) *Cluster {
	tb.Helper()
	c, err := Start(filepath.Join(tb.TempDir(), "etcd"), members)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(err)
		}
		tb.Skip(err)
	}
	tb.Cleanup(c.Close)
	return c
}
