package store

import (
	"fmt"
	"time"
)

// String names the status for machines and JSON: "no_token", "valid",
// "refreshable", "login_needed".
func (s Status) String() string {
	switch s {
	case StatusValid:
		return "valid"
	case StatusRefreshable:
		return "refreshable"
	case StatusLoginNeeded:
		return "login_needed"
	default:
		return "no_token"
	}
}

// LastUsedAgo renders Last Used as the keys table shows it, the same in the
// CLI and the TUI: "never", "just now", "3 min ago", "5 h ago", "2 d ago".
func (k Key) LastUsedAgo(now time.Time) string {
	if k.LastUsed.IsZero() {
		return "never"
	}
	d := now.Sub(k.LastUsed)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d d ago", int(d/(24*time.Hour)))
	}
}
