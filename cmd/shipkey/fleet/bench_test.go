package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkCachedToken measures what a script pays per `shipkey token`: a
// local key against a team key whose token is cached on this machine (one
// keys-only etcd read over its JSON gateway says the team still holds it;
// shipkey serves it without handing the call to shipkey-team), both whole
// processes, paired in each iteration. team/local is the ratio.
func BenchmarkCachedToken(b *testing.B) {
	c := needCluster(b)
	srv := newRealm(b)
	ctx := context.Background()
	a, _ := fleetTeam(b, ctx, c, srv, "benchcache")
	a.must(b, ctx, []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret, "SHIPKEY_PASSWORD=" + password},
		"keys", "new", "--label", "local", "--auth-url", srv.URL(), "--client-id", "shipping-api", "--username", "svc")
	a.must(b, ctx, nil, "token", "local")
	a.must(b, ctx, nil, "token", "benchcache/svc") // renews once, cached from now on
	before := srv.Count("token")
	var local, team time.Duration
	for b.Loop() {
		t0 := time.Now()
		a.must(b, ctx, nil, "token", "local")
		t1 := time.Now()
		a.must(b, ctx, nil, "token", "benchcache/svc")
		local, team = local+t1.Sub(t0), team+time.Since(t1)
	}
	if n := srv.Count("token") - before; n != 0 {
		b.Fatalf("%d token requests while the tokens were valid", n)
	}
	b.ReportMetric(float64(local.Microseconds())/float64(b.N)/1000, "local-ms/token")
	b.ReportMetric(float64(team.Microseconds())/float64(b.N)/1000, "team-ms/token")
	b.ReportMetric(float64(team)/float64(local), "team/local")
}

// BenchmarkFleetRace measures the wall time of 2 machines x 10 processes
// racing `token T/svc` after the shared token expired (one renewal).
func BenchmarkFleetRace(b *testing.B) {
	c := needCluster(b)
	srv := newRealm(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		b.StopTimer()
		name := fmt.Sprintf("benchrace%d", i)
		i++
		a, m := fleetTeam(b, ctx, c, srv, name)
		before := srv.Count("token")
		b.StartTimer()
		results := race(ctx, []*machine{a, m}, 10, name+"/svc", nil)
		b.StopTimer()
		for _, r := range results {
			if r.code != 0 || strings.TrimSpace(r.stdout) == "" {
				b.Fatalf("exit %d: %s", r.code, r.stderr)
			}
		}
		if n := srv.Count("token") - before; n != 1 {
			b.Fatalf("token requests = %d, want 1", n)
		}
		b.StartTimer()
	}
}
