package auth

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shipkey/shipkey/internal/text"
	"golang.org/x/oauth2"
)

// MaxLifetime bounds expires_in and refresh_expires_in. A token response that
// states a longer lifetime is refused rather than read as "forever" or left to
// overflow a time computation: no realm issues tokens for ten years, and a
// value past that is a broken or hostile server.
const MaxLifetime = 10 * 365 * 24 * time.Hour

// b64token is RFC 6750 §2.1's b64token, the whole alphabet of a bearer token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
var b64token = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`) }) // compiled on first use, not at every start

// visibleASCII reports whether s is non-empty and only printable ASCII
// without spaces (%x21-7E): what a refresh or ID token may hold.
func visibleASCII(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// malformed is the *Error of a token response refused by tokenSet. msg names
// what was wrong and never holds the value.
func malformed(op, msg string) *Error {
	return &Error{
		Kind: KindMalformedResponse,
		Op:   op,
		Msg:  msg,
		Hint: "nothing was stored; the server (or a proxy in between) sent a broken token response: tell the realm's administrators",
	}
}

// lifetime reads a lifetime field (seconds) of the token response: present
// reports whether the server sent it; problem is non-empty when the value is
// not a number, negative, or longer than MaxLifetime. JSON numbers arrive as
// float64, form-encoded and quoted ones as strings; a fraction is cut.
func lifetime(tok *oauth2.Token, key string) (secs int64, present bool, problem string) {
	v := tok.Extra(key)
	var f float64
	switch n := v.(type) {
	case nil:
		return 0, false, ""
	case string:
		s := strings.TrimSpace(n)
		if s == "" { // form bodies answer "" for an absent key
			return 0, false, ""
		}
		p, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, true, key + " is not a number"
		}
		f = p
	case float64:
		f = n
	case int64:
		f = float64(n)
	case int:
		f = float64(n)
	case json.Number:
		p, err := n.Float64()
		if err != nil {
			return 0, true, key + " is not a number"
		}
		f = p
	default:
		return 0, true, key + " is not a number"
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, true, key + " is not a number"
	case f < 0:
		return 0, true, key + " is negative"
	case f > MaxLifetime.Seconds():
		return 0, true, key + " is longer than ten years"
	}
	return int64(f), true, ""
}

// tokenSet checks a grant's answer and builds the TokenSet from it, stamped
// with c.now(). Nothing of a refused answer is kept, and the error never
// holds a value from it.
//
// Checked: the access token is an RFC 6750 b64token; refresh and ID tokens are
// visible ASCII without spaces; token_type is "Bearer" in any case, or absent
// (taken as Bearer, as x/oauth2 does: RFC 6749 requires the field, but a few
// servers omit it, and since shipkey only ever sends the token as a Bearer
// header there is no other type it could be mistaken for); expires_in and
// refresh_expires_in are numbers in [0, MaxLifetime]; and the access token is
// not already expired when it arrives (by the stated lifetime or the JWT exp).
//
// With dpop (the request carried a DPoP proof), token_type DPoP is accepted
// too: the token is bound to the key (RFC 9449 §5).
func (c *Client) tokenSet(op string, tok *oauth2.Token, dpop bool) (*TokenSet, error) {
	for _, check := range answerChecks {
		if check.broken(tok, dpop) {
			return nil, malformed(op, check.msg)
		}
	}
	expiresIn, expiresStated, problem := lifetime(tok, "expires_in")
	if problem != "" {
		return nil, malformed(op, problem)
	}
	refreshIn, refreshStated, problem := lifetime(tok, "refresh_expires_in")
	if problem != "" {
		return nil, malformed(op, problem)
	}

	now := c.now()
	ts := &TokenSet{
		AccessToken:      tok.AccessToken,
		TokenType:        text.Safe(tok.TokenType),
		RefreshToken:     tok.RefreshToken,
		IDToken:          extraString(tok, "id_token"),
		ExpiresIn:        expiresIn,
		RefreshExpiresIn: refreshIn,
		SessionState:     text.Safe(extraString(tok, "session_state")),
		Scope:            text.Safe(extraString(tok, "scope")),
		ObtainedAt:       now,
	}
	if v := tok.Extra("not-before-policy"); v != nil && v != "" {
		n := toInt(v)
		ts.NotBeforePolicy = &n
	}
	if expiresStated {
		// expires_in 0 states a token that is already expired.
		ts.AccessExpiresAt = now.Add(time.Duration(expiresIn) * time.Second)
	}
	ts.JWTExpiresAt = jwtExpiry(ts.AccessToken)
	if exp := ts.AccessExpiry(); !exp.IsZero() && !now.Before(exp) {
		return nil, malformed(op, "the server sent an access token that has already expired (check this computer's clock if this repeats)")
	}
	if ts.RefreshToken != "" {
		ts.setRefreshExpiry(refreshIn, refreshStated, now)
	}
	return ts, nil
}

// answerChecks are what the tokens and token type of a grant's answer must
// be, in order (tokenSet's doc): the first broken is the refusal, msg what
// is wrong (never the value). dpop: the request carried a DPoP proof.
var answerChecks = []struct {
	broken func(tok *oauth2.Token, dpop bool) bool
	msg    string
}{
	{func(tok *oauth2.Token, _ bool) bool { return !b64token().MatchString(tok.AccessToken) },
		"the access token holds characters a bearer token may not (RFC 6750 allows letters, digits and -._~+/ with trailing =)"},
	{func(tok *oauth2.Token, _ bool) bool { return tok.RefreshToken != "" && !visibleASCII(tok.RefreshToken) },
		"the refresh token holds spaces, control characters or non-ASCII bytes"},
	{func(tok *oauth2.Token, _ bool) bool {
		id := extraString(tok, "id_token")
		return id != "" && !visibleASCII(id)
	}, "the ID token holds spaces, control characters or non-ASCII bytes"},
	{func(tok *oauth2.Token, dpop bool) bool {
		tt := tok.TokenType
		return tt != "" && !strings.EqualFold(tt, "bearer") && !(dpop && strings.EqualFold(tt, DPoPTokenType))
	}, "the token type is not Bearer (RFC 6749 §7.1: a client must not use a token type it does not understand)"},
}

// setRefreshExpiry sets when the refresh token expires and what says so:
// refresh_expires_in when stated (0: an offline token, no expiry), else
// the refresh token's own JWT exp when it has one within MaxLifetime.
func (ts *TokenSet) setRefreshExpiry(refreshIn int64, stated bool, now time.Time) {
	switch {
	case stated && refreshIn > 0:
		ts.RefreshExpiresAt = now.Add(time.Duration(refreshIn) * time.Second)
		ts.RefreshExpirySource = RefreshExpiryResponse
	case stated:
		ts.RefreshExpirySource = RefreshExpiryOffline
	default:
		if exp := jwtExpiry(ts.RefreshToken); !exp.IsZero() && exp.Before(now.Add(MaxLifetime)) {
			ts.RefreshExpiresAt = exp
			ts.RefreshExpirySource = RefreshExpiryJWT
		}
	}
}

// CheckStored applies a server answer's checks to a token set read back from
// a place others can write (a team's etcd, a cache of it): the access token
// is a b64token, refresh and ID tokens are visible ASCII, and the token type,
// scope and session state hold no control character. The error names what
// is wrong, never the value.
func (ts *TokenSet) CheckStored() error {
	switch {
	case ts.AccessToken != "" && !b64token().MatchString(ts.AccessToken):
		return errors.New("the access token holds characters a bearer token may not")
	case ts.RefreshToken != "" && !visibleASCII(ts.RefreshToken):
		return errors.New("the refresh token holds spaces, control characters or non-ASCII bytes")
	case ts.IDToken != "" && !visibleASCII(ts.IDToken):
		return errors.New("the ID token holds spaces, control characters or non-ASCII bytes")
	case !text.IsClean(ts.TokenType) || !text.IsClean(ts.Scope) || !text.IsClean(ts.SessionState):
		return errors.New("the token type, scope or session state holds control characters")
	}
	return nil
}
