package main

import (
	"fmt"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// approxDuration renders a lifetime coarsely, two units at most, truncated:
// "14d 23h", "3h 5m", "29m", "45s".
func approxDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd %dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return fmt.Sprintf("%ds", d/time.Second)
	}
}

// expiresIn renders an expiry relative to now: "in 14d 23h", "expired", or
// "no expiry" for the zero time.
func expiresIn(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "no expiry"
	case !now.Before(t):
		return "expired"
	default:
		return auth.Until(t, now)
	}
}

// lifetimes is the "(access token valid for …, refresh token for …)" part of
// the messages after a login.
func lifetimes(k store.Key, now time.Time) string {
	access := "access token without stated expiry"
	if exp := k.Token.AccessExpiry(); !exp.IsZero() {
		access = "access token valid for " + approxDuration(exp.Sub(now))
	}
	refresh := "refresh token without stated expiry"
	if exp := k.Token.RefreshExpiresAt; !exp.IsZero() {
		refresh = "refresh token for " + approxDuration(exp.Sub(now))
	}
	return access + ", " + refresh
}

// rfc3339OrNil renders t for JSON: nil for the zero time.
func rfc3339OrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}
