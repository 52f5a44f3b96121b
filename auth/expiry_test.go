package auth_test

import (
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

func TestExpiryMarginAdaptsToLifetime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		life, margin time.Duration
	}{
		{15 * 24 * time.Hour, 30 * time.Second},
		{5 * time.Minute, 30 * time.Second},
		{60 * time.Second, 6 * time.Second},
		{8 * time.Second, 800 * time.Millisecond},
		{time.Second, 100 * time.Millisecond},
	} {
		e := auth.Expiry{ObtainedAt: t0, At: t0.Add(tt.life)}
		if got := e.Margin(); got != tt.margin {
			t.Errorf("lifetime %v: margin %v, want %v", tt.life, got, tt.margin)
		}
		// A fresh token is never expired nor due.
		if s := e.State(t0); s != auth.ExpiryValid {
			t.Errorf("lifetime %v: fresh state %v", tt.life, s)
		}
		// Reused for nearly all of its life.
		if !e.ValidFor(t0.Add(tt.life*85/100), 0) {
			t.Errorf("lifetime %v: not reusable at 85%% of its life", tt.life)
		}
		if s := e.State(t0.Add(tt.life - tt.margin)); s != auth.ExpiryDue {
			t.Errorf("lifetime %v: at the margin state %v, want due", tt.life, s)
		}
		if s := e.State(t0.Add(tt.life)); s != auth.ExpiryExpired {
			t.Errorf("lifetime %v: at expiry state %v, want expired", tt.life, s)
		}
	}
}

func TestExpiryUnstatedAndMinValid(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var none auth.Expiry
	if none.State(t0) != auth.ExpiryUnstated || none.RenewDue(t0) || !none.ValidFor(t0, time.Hour) || none.Expired(t0) {
		t.Fatal("an unstated expiry must be usable and never due")
	}
	e := auth.Expiry{ObtainedAt: t0, At: t0.Add(time.Hour)}
	if !e.ValidFor(t0, 50*time.Minute) || e.ValidFor(t0, 61*time.Minute) {
		t.Fatal("ValidFor must honour a minimum validity longer than the margin")
	}
	// Only At known (ObtainedAt lost): the full margin applies.
	if m := (auth.Expiry{At: t0}).Margin(); m != auth.MaxMargin {
		t.Fatalf("margin without ObtainedAt = %v", m)
	}
}

func TestTokenSetAccessValid(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ts := &auth.TokenSet{AccessToken: "a", RefreshToken: "r", ObtainedAt: t0, ExpiresIn: 8,
		AccessExpiresAt: t0.Add(8 * time.Second), RefreshExpiresAt: t0.Add(30 * time.Minute)}
	if !ts.AccessValid(t0) || !ts.AccessValid(t0.Add(7*time.Second)) {
		t.Fatal("an 8 s token must be reused for most of its life")
	}
	if ts.AccessValid(t0.Add(7300 * time.Millisecond)) {
		t.Fatal("an 8 s token must be due 0.8 s before expiry")
	}
	if !ts.RefreshValid(t0.Add(29*time.Minute)) || ts.RefreshValid(t0.Add(30*time.Minute)) {
		t.Fatal("RefreshValid must follow the refresh expiry")
	}
}
