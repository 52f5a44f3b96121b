package auth_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text"
)

// benchAccessToken logs in to a throwaway demo realm on 127.0.0.1 once and
// returns a real Keycloak-shaped access token issued at now.
func benchAccessToken(b *testing.B, now time.Time) string {
	b.Helper()
	cfg := authtest.DemoConfig()
	cfg.Now = func() time.Time { return now }
	srv := authtest.NewServer(cfg)
	b.Cleanup(srv.Close)
	c, err := auth.NewClient(auth.Options{Now: cfg.Now, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: authtest.DemoClientID}
	ts, err := c.Login(ctx, conn, auth.ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err != nil {
		b.Fatalf("login: %v", err)
	}
	return ts.AccessToken
}

// BenchmarkDecode is the inspector's and `shipkey inspect`'s work per token.
func BenchmarkDecode(b *testing.B) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tok := benchAccessToken(b, now)
	b.SetBytes(int64(len(tok)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := auth.Decode(tok, now)
		if err != nil || d == nil {
			b.Fatalf("Decode: %v", err)
		}
	}
}

// BenchmarkDecodeOpaque is Decode's fast path for a non-JWT token.
func BenchmarkDecodeOpaque(b *testing.B) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tok := strings.Repeat("a1b2c3d4", 8)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := auth.Decode(tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSanitize covers the clean fast path (labels, most claims) and the
// rewriting path (hostile server text full of escapes and bidi overrides).
func BenchmarkSanitize(b *testing.B) {
	cases := []struct{ name, s string }{
		{"clean_short", "prod-shipping-api"},
		{"clean_1KiB", strings.Repeat("Shipping Service API élan ", 40)},
		{"hostile_short", "evil\x1b[2J\x1b]52;c;aGk=\x07\u202egnp.exe\n"},
		{"hostile_1KiB", strings.Repeat("a\x1b[31mb\u202e\r\n\x9b\xff", 80)},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			b.ReportAllocs()
			for b.Loop() {
				_ = text.Safe(tc.s)
			}
		})
	}
}

// BenchmarkCountdown is one countdown cell, redrawn every second per key.
func BenchmarkCountdown(b *testing.B) {
	for _, tc := range []struct {
		name string
		d    time.Duration
	}{
		{"mmss", 29*time.Minute + 59*time.Second},
		{"hours", 3*time.Hour + 4*time.Minute + 5*time.Second},
		{"days", 14*24*time.Hour + 23*time.Hour},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = text.Countdown(tc.d)
			}
		})
	}
}

// BenchmarkUntil is the humanized "in 14d 23h" / "3m ago" of key lists.
func BenchmarkUntil(b *testing.B) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		t    time.Time
	}{
		{"future_two_units", now.Add(14*24*time.Hour + 23*time.Hour)},
		{"past_one_unit", now.Add(-3 * time.Minute)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = text.Relative(tc.t, now)
			}
		})
	}
}

// BenchmarkTokenRequest is client credentials token requests to a demo
// realm on 127.0.0.1, plain and with a DPoP proof (a P-256 signature per
// request, and the server's check of it), in pairs: each iteration sends
// one of each, and dpop/plain is the median of the pairs' ratios, which
// the load of a shared machine cancels out of.
func BenchmarkTokenRequest(b *testing.B) {
	srv := authtest.NewServer(authtest.DemoConfig())
	b.Cleanup(srv.Close)
	c, err := auth.NewClient(auth.Options{Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	conn := auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: authtest.DemoClientID}
	key, err := auth.NewDPoPKey()
	if err != nil {
		b.Fatal(err)
	}
	plain := auth.ClientAuth{Secret: authtest.DemoClientSecret}
	dpop := auth.ClientAuth{Secret: authtest.DemoClientSecret, DPoP: key}
	timed := func(ca auth.ClientAuth) time.Duration {
		start := time.Now()
		ts, err := c.Obtain(context.Background(), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientAuth: ca})
		if err != nil || ts.AccessToken == "" {
			b.Fatalf("token: %v", err)
		}
		return time.Since(start)
	}
	var ratios []float64
	for b.Loop() {
		p := timed(plain)
		d := timed(dpop)
		ratios = append(ratios, float64(d)/float64(p))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "dpop/plain")
}
