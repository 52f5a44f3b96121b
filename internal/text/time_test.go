package text_test

import (
	"testing"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

func TestRelative(t *testing.T) {
	t.Parallel()
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
		if got := text.Relative(now.Add(tt.offset), now); got != tt.want {
			t.Errorf("Until(now%+v) = %q, want %q", tt.offset, got, tt.want)
		}
	}
	if got := text.Relative(time.Time{}, now); got != "" {
		t.Errorf("Until(zero) = %q, want empty", got)
	}
}

func TestCountdown(t *testing.T) {
	t.Parallel()
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
		if got := text.Countdown(tt.in); got != tt.want {
			t.Errorf("Countdown(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for before, want := range map[time.Duration]string{
		10 * time.Second: "just now", 3 * time.Minute: "3 min ago", 2 * time.Hour: "2 h ago",
		47 * time.Hour: "47 h ago", 50 * time.Hour: "2 d ago",
	} {
		if got := text.Ago(now.Add(-before), now); got != want {
			t.Errorf("Ago(-%v) = %q, want %q", before, got, want)
		}
	}
	if got := text.Ago(time.Time{}, now); got != "never" {
		t.Errorf("Ago(zero) = %q, want never", got)
	}
}

func TestSpanAndStamp(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		14*24*time.Hour + 23*time.Hour: "14d 23h",
		3*time.Hour + 5*time.Minute:    "3h 5m",
		45 * time.Second:               "45s",
		-time.Second:                   "0s",
	} {
		if got := text.Span(d); got != want {
			t.Errorf("Span(%v) = %q, want %q", d, got, want)
		}
	}
	if got := text.Stamp(time.Time{}); got != "—" {
		t.Errorf("Stamp(zero) = %q", got)
	}
	if got := text.Stamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))); got != "2026-01-02 02:04:05 UTC" {
		t.Errorf("Stamp = %q", got)
	}
}

// The Append forms write the same text as Relative, Ago and Stamp (keys
// list formats two relative times a key and its last use with them).
func TestAppendFormsMatch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var buf [64]byte
	for _, off := range relativeOffsets {
		at := now.Add(off)
		if got, want := string(text.AppendRelative(buf[:0], at, now)), text.Relative(at, now); got != want {
			t.Errorf("AppendRelative(now%+v) = %q, Relative %q", off, got, want)
		}
		if got, want := string(text.AppendStamp(buf[:0], at)), text.Stamp(at); got != want {
			t.Errorf("AppendStamp(now%+v) = %q, Stamp %q", off, got, want)
		}
	}
	if r, s := string(text.AppendRelative(nil, time.Time{}, now)), string(text.AppendStamp(nil, time.Time{})); r != "" || s != "—" {
		t.Errorf("the zero time appended as %q and %q", r, s)
	}
}

var relativeOffsets = []time.Duration{-(2*24*time.Hour + 4*time.Hour), 364*24*time.Hour + 18*time.Hour, 45 * time.Second, -5 * time.Minute, -3 * time.Hour, 0}

// BenchmarkRelative reports the allocations of the relative times: one
// each for Relative and Ago (the string returned; fmt made five, and two
// for Ago), none for the Append forms.
func BenchmarkRelative(b *testing.B) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var buf [64]byte
	for name, f := range map[string]func(at time.Time){
		"Relative": func(at time.Time) { _ = text.Relative(at, now) },
		"Ago":      func(at time.Time) { _ = text.Ago(at, now) },
		"Append":   func(at time.Time) { _ = text.AppendStamp(text.AppendRelative(buf[:0], at, now), at) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, off := range relativeOffsets {
					f(now.Add(off))
				}
			}
		})
	}
}
