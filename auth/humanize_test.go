package auth_test

import (
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

func TestUntil(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	d := 24 * time.Hour
	tests := []struct {
		offset time.Duration
		want   string
	}{
		{15*d - time.Second, "in 14d 23h"},
		{14*d + 23*time.Hour + 59*time.Minute + 59*time.Second, "in 14d 23h"},
		{15 * d, "in 15d"},
		{1314000 * time.Second, "in 15d 5h"},
		{2*time.Hour + 5*time.Minute + 59*time.Second, "in 2h 5m"},
		{time.Hour, "in 1h"},
		{12*time.Minute + 30*time.Second, "in 12m 30s"},
		{45 * time.Second, "in 45s"},
		{45*time.Second + 900*time.Millisecond, "in 45s"},
		{time.Second, "in 1s"},
		{999 * time.Millisecond, "now"},
		{0, "now"},
		{-999 * time.Millisecond, "now"},
		{-time.Second, "1s ago"},
		{-3 * time.Minute, "3m ago"},
		{-(3*time.Minute + 10*time.Second), "3m 10s ago"},
		{-(2*d + 4*time.Hour + 30*time.Minute), "2d 4h ago"},
		{-400 * d, "400d ago"},
	}
	for _, tt := range tests {
		if got := auth.Until(now.Add(tt.offset), now); got != tt.want {
			t.Errorf("Until(now%+v) = %q, want %q", tt.offset, got, tt.want)
		}
	}
	if got := auth.Until(time.Time{}, now); got != "" {
		t.Errorf("Until(zero) = %q, want empty", got)
	}
}

func TestCountdown(t *testing.T) {
	d := 24 * time.Hour
	tests := []struct {
		in   time.Duration
		want string
	}{
		{15*d - time.Second, "14d 23h 59m"},
		{15 * d, "15d 00h 00m"},
		{d + 2*time.Hour + 3*time.Minute + 59*time.Second, "1d 02h 03m"},
		{d, "1d 00h 00m"},
		{d - time.Second, "23h 59m 59s"},
		{3*time.Hour + 4*time.Minute + 5*time.Second, "3h 04m 05s"},
		{time.Hour, "1h 00m 00s"},
		{time.Hour - time.Nanosecond, "59:59"},
		{29*time.Minute + 59*time.Second + 999*time.Millisecond, "29:59"},
		{90 * time.Second, "1:30"},
		{5 * time.Second, "0:05"},
		{time.Millisecond, "0:00"},
		{0, "expired"},
		{-time.Second, "expired"},
		{-30 * d, "expired"},
	}
	for _, tt := range tests {
		if got := auth.Countdown(tt.in); got != tt.want {
			t.Errorf("Countdown(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
