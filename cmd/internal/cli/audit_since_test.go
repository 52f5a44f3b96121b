package cli

import (
	"testing"
	"time"
)

func TestAuditSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"90m":                  now.Add(-90 * time.Minute),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2026-11-01":           time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-28T10:30:00Z": time.Date(2026, 11, 28, 10, 30, 0, 0, time.UTC),
		// More days than a Duration holds: every entry, not a time that
		// wrapped round into the future.
		"99999999999999999d": {},
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("--since %q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "3x"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("--since %q taken", bad)
		}
	}
}
