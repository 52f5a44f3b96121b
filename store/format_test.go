package store

import (
	"testing"
	"time"
)

func TestLastUsedAgo(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for before, want := range map[time.Duration]string{
		10 * time.Second: "just now", 3 * time.Minute: "3 min ago", 2 * time.Hour: "2 h ago",
		47 * time.Hour: "47 h ago", 50 * time.Hour: "2 d ago",
	} {
		if got := (Key{LastUsed: now.Add(-before)}).LastUsedAgo(now); got != want {
			t.Errorf("LastUsedAgo(-%v) = %q, want %q", before, got, want)
		}
	}
	if got := (Key{}).LastUsedAgo(now); got != "never" {
		t.Errorf("LastUsedAgo(zero) = %q, want never", got)
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{StatusNoToken: "no_token", StatusValid: "valid", StatusRefreshable: "refreshable", StatusLoginNeeded: "login_needed"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}
