package cli

import (
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// lifetimes is the "(access token valid for …, refresh token for …)" part of
// the messages after a login.
func lifetimes(k store.Key, now time.Time) string {
	access := "access token expiry " + auth.ExpiryNotStated
	if exp := k.Token.AccessExpiry(); !exp.IsZero() {
		access = "access token valid for " + text.Span(exp.Sub(now))
	}
	refresh := "refresh token expiry " + k.Token.RefreshExpiryNote()
	switch {
	case !k.HasRefreshToken && k.RenewsItself():
		refresh = "no refresh token: renews itself at expiry"
	case !k.HasRefreshToken:
		refresh = "no refresh token"
	case !k.Token.RefreshExpiresAt.IsZero():
		refresh = "refresh token for " + text.Span(k.Token.RefreshExpiresAt.Sub(now))
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
