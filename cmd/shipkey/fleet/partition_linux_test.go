package fleet

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cutOff starts a network namespace in which the cluster's client ports are
// dropped (unshare -n, loopback up, an iptables DROP rule inside: packets
// vanish, as in a partition, rather than being refused) and returns the
// prefix that runs a command in it. Where that cannot be done (not root, no
// iptables) the test is skipped saying why; under CI=true it fails.
func cutOff(t *testing.T, endpoints []string) []string {
	t.Helper()
	need := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, tool := range []string{"unshare", "nsenter", "ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			need("a partition needs %s (apt-get install -y iptables iproute2 util-linux): %v", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		need("a partition needs root (a network namespace and an iptables rule in it)")
	}
	var ports []string
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, u.Port())
	}
	script := "ip link set lo up && iptables -A OUTPUT -p tcp -m multiport --dports " + strings.Join(ports, ",") + " -j DROP && echo ready && exec sleep 600"
	holder := exec.Command("unshare", "-n", "sh", "-c", script)
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	holder.Stderr = &stderr
	if err := holder.Start(); err != nil {
		need("unshare -n: %v", err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
	}()
	select {
	case ok := <-ready:
		if !ok {
			need("could not cut a network namespace off: %s", strings.TrimSpace(stderr.String()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the network namespace did not get ready within 10 s")
	}
	return []string{"nsenter", "-t", fmt.Sprint(holder.Process.Pid), "-n", "--"}
}

// TestPartitionDuringFleetRace: machine c is cut off from etcd (its packets
// dropped) while 10 processes on each of a, b and c race an expired team
// key. a and b make exactly one token request together; every one of c's
// processes, queued on c's local lock included, exits 0 (a cached token,
// with a warning) or 4 (one line) at its own bound, not one bound per
// process ahead of it in the queue (they are killed at 8 bounds), and not 1
// (the local lock's wait, which outlasted the bound, exited 1).
func TestPartitionDuringFleetRace(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "partition")
	cm := newMachine(t, "c")
	eps := strings.Join(c.Endpoints(), ",")
	card := strings.TrimSpace(cm.must(t, ctx, nil, "team", "join", "partition", "--etcd", eps, "--yes"))
	a.must(t, ctx, nil, "team", "add", "partition", card, "--name", "c")
	cm.must(t, ctx, nil, "keys", "list") // c caches the key (its token is due)
	cm.wrap = cutOff(t, c.Endpoints())

	// A waiter ends at its own bound; before, each queued behind the one
	// ahead on the local lock (10 × 2 s). Killed at 8 bounds: process start
	// on a loaded machine takes seconds of its own.
	const bound, killAt = 2 * time.Second, 16 * time.Second
	env := []string{"SHIPKEY_TEAM_TIMEOUT=" + bound.String()}
	before := srv.Count("token")
	var wg sync.WaitGroup
	cut := make([]result, 10)
	start := make(chan struct{})
	for i := range cut {
		wg.Go(func() {
			<-start
			pctx, pcancel := context.WithTimeout(ctx, killAt)
			defer pcancel()
			cut[i] = cm.run(pctx, env, "token", "partition/svc")
		})
	}
	close(start)
	results := race(ctx, []*machine{a, b}, 10, "partition/svc", nil)
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("connected process %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	if n := srv.Count("token") - before; n != 1 {
		t.Errorf("token requests of the connected machines = %d, want exactly 1", n)
	}
	for i, r := range cut {
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		switch r.code {
		case 0:
			if !strings.Contains(r.stderr, "warning: team partition:") {
				t.Errorf("cut-off process %d: a token without a warning: %q", i, r.stderr)
			}
		case exitEtcdUnavailable:
			if len(lines) != 1 || !strings.Contains(lines[0], "did not answer within "+bound.String()) {
				t.Errorf("cut-off process %d: stderr %q, want one line saying etcd did not answer within %s", i, r.stderr, bound)
			}
		default:
			t.Errorf("cut-off process %d: exit %d (-1: killed at %s), want 0 or %d: %s", i, r.code, killAt, exitEtcdUnavailable, r.stderr)
		}
	}
}
