package tui

import (
	"cmp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unique"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// KeyRow is one key as a keys table shows it: what its columns draw, sort
// and filter on, prepared once when the key list is loaded (its display text
// sanitized, its times as Unix nanoseconds), and nothing else. The app keeps
// one a key (100,000 keys and more), so a row is small: a screen that needs
// the whole key (details, the form's prefill) reads it from the store by
// label. Its strings are the caller's (the app's: one buffer per load, see
// keyIndex).
type KeyRow struct {
	id, label string // as stored: actions name the key by its label
	masked    string // text.Safe(Key.Masked); "" when the key has no token
	// Unix nanoseconds, 0 for the zero time: Last Used, the access token's
	// expiry, the refresh token's.
	lastUsed, access, refresh int64
	grant                     unique.Handle[auth.GrantType]
	rare                      *rowRare // nil for most keys
	flags                     rowFlags
}

// rowRare is what few keys have: a label that shows otherwise than stored
// or lower-cased otherwise, a team, an API URL of their own.
type rowRare struct {
	shown  string // text.Safe(label), when it differs
	lower  string // the shown label lower-cased, when it differs
	team   string
	apiURL string
}

// rowFlags are a row's yes/no facts.
type rowFlags uint8

const (
	rowDefault        rowFlags = 1 << iota // the configured default key
	rowToken                               // it has a token (ObtainedAt set)
	rowLoggedOut                           // logged out, or its refresh token known dead
	rowEndPending                          // ending its session at the server failed
	rowRefreshToken                        // its token set carries a refresh token
	rowRenewsItself                        // its grant renews itself (client credentials)
	rowRefreshOffline                      // the server said its refresh token never expires
)

// NewKeyRow prepares k for a keys table.
func NewKeyRow(k store.Key) KeyRow { return newKeyRow(k, identity) }

func identity(s string) string { return s }

// newKeyRow prepares k, keeping its strings through keep (the app copies
// them into one buffer; `keys list`, one key at a time, keeps them as they
// are).
func newKeyRow(k store.Key, keep func(string) string) KeyRow {
	r := KeyRow{id: keep(k.ID), label: keep(k.Label), masked: keep(text.Safe(k.Masked)),
		lastUsed: unixNano(k.LastUsed), access: unixNano(k.Token.AccessExpiry()), refresh: unixNano(k.Token.RefreshExpiresAt),
		grant: unique.Make(k.Grant)}
	for _, f := range []struct {
		on   bool
		flag rowFlags
	}{
		{k.Default, rowDefault}, {!k.Token.ObtainedAt.IsZero(), rowToken}, {k.LoggedOut, rowLoggedOut},
		{!k.EndPending.IsZero(), rowEndPending}, {k.HasRefreshToken, rowRefreshToken}, {k.RenewsItself(), rowRenewsItself},
		{k.Token.RefreshExpirySource == auth.RefreshExpiryOffline, rowRefreshOffline},
	} {
		if f.on {
			r.flags |= f.flag
		}
	}
	shown := text.Safe(k.Label)
	lower := strings.ToLower(shown)
	if shown != k.Label || lower != shown || k.Team != "" || k.APIURL != "" {
		r.rare = &rowRare{team: unique.Make(k.Team).Value(), apiURL: unique.Make(k.APIURL).Value()}
		if shown != k.Label {
			r.rare.shown = keep(shown)
		}
		if lower != shown {
			r.rare.lower = keep(lower)
		}
	}
	return r
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf is the time unixNano made n from.
func timeOf(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (r *KeyRow) has(f rowFlags) bool { return r.flags&f != 0 }

// ID is the key's id; Label its label as stored.
func (r *KeyRow) ID() string    { return r.id }
func (r *KeyRow) Label() string { return r.label }

// Shown is the label as a terminal may show it (text.Safe).
func (r *KeyRow) Shown() string {
	if r.rare != nil && r.rare.shown != "" {
		return r.rare.shown
	}
	return r.label
}

// lowerLabel is the shown label lower-cased: what the filter matches.
func (r *KeyRow) lowerLabel() string {
	if r.rare != nil && r.rare.lower != "" {
		return r.rare.lower
	}
	return r.Shown()
}

// Team is the key's team ("" for a key of this machine).
func (r *KeyRow) Team() string {
	if r.rare != nil {
		return r.rare.team
	}
	return ""
}

// APIURL is the key's API URL ("" for none of its own).
func (r *KeyRow) APIURL() string {
	if r.rare != nil {
		return r.rare.apiURL
	}
	return ""
}

// Grant is the key's grant as stored.
func (r *KeyRow) Grant() auth.GrantType { return r.grant.Value() }

// wasLoggedOut: the key has no session (logged out, its end not pending).
func (r *KeyRow) wasLoggedOut() bool { return r.has(rowLoggedOut) && !r.has(rowEndPending) }

// Key is what the row knows of its key as a store.Key: its id and label,
// grant, Last Used, default mark and token timing, enough for its state
// (StatusAt, keyState); no connection, no user.
func (r *KeyRow) Key() store.Key {
	k := store.Key{ID: r.id, Label: r.label, Masked: r.masked, LastUsed: timeOf(r.lastUsed), Default: r.has(rowDefault),
		LoggedOut: r.has(rowLoggedOut), HasRefreshToken: r.has(rowRefreshToken), Team: r.Team()}
	k.Grant = r.Grant()
	k.APIURL = r.APIURL()
	if r.has(rowEndPending) {
		k.EndPending = time.Unix(0, 1)
	}
	if r.has(rowToken) {
		// ObtainedAt is not kept: any time before the expiries says
		// "has a token".
		k.Token.ObtainedAt = time.Unix(0, 1)
		k.Token.AccessExpiresAt = timeOf(r.access)
		k.Token.RefreshExpiresAt = timeOf(r.refresh)
		if r.has(rowRefreshOffline) {
			k.Token.RefreshExpirySource = auth.RefreshExpiryOffline
		}
	}
	return k
}

// matches reports whether the lower-cased filter q finds r in what the
// table shows of it: its label (a substring or the letters in order), its
// API key as masked (case-insensitively), or its grant (the cell or the
// stored name).
func (r *KeyRow) matches(q string) bool {
	if matches(r.lowerLabel(), q) || containsLower(r.masked, q) {
		return true
	}
	g := r.Grant().Or()
	v := viewOf(g)
	return strings.Contains(v.cell, q) || strings.Contains(v.title, q) || strings.Contains(string(g), q)
}

// containsLower reports whether s lower-cased contains q (lower-cased
// already), without building the lower-cased s.
func containsLower(s, q string) bool {
	if q == "" {
		return true
	}
	for i := range s {
		if hasPrefixLower(s[i:], q) {
			return true
		}
	}
	return false
}

// hasPrefixLower reports whether s lower-cased starts with q.
func hasPrefixLower(s, q string) bool {
	for _, qr := range q {
		if s == "" {
			return false
		}
		sr, n := utf8.DecodeRuneInString(s)
		if unicode.ToLower(sr) != qr {
			return false
		}
		s = s[n:]
	}
	return true
}

// compareLower orders a and b as their lower-cased forms do.
func compareLower(a, b string) int {
	for a != "" && b != "" {
		ar, an := utf8.DecodeRuneInString(a)
		br, bn := utf8.DecodeRuneInString(b)
		if c := cmp.Compare(unicode.ToLower(ar), unicode.ToLower(br)); c != 0 {
			return c
		}
		a, b = a[an:], b[bn:]
	}
	return cmp.Compare(len(a), len(b))
}

// CellStyle is how a cell says time: Live for the app (ticking countdowns
// like "in 4:59", "—" for nothing), Words for `shipkey keys list` ("in 4m",
// "-" for nothing).
type CellStyle int

const (
	Live CellStyle = iota
	Words
)

// KeyColumn is one column of the keys table, defined once for the app's
// table and `shipkey keys list`.
type KeyColumn struct {
	Title string // "Last Used"; `keys list` prints it upper-cased
	// Width is the column's width in the app, in cells; 0 for the label
	// column, which takes what the others leave. MinWidth is how narrow it
	// may shrink (with Short as its title) before a column is dropped.
	Width, MinWidth int
	// Short is the title when the column is narrower than Title.
	Short string
	// Cell is the cell's text (already safe for a terminal).
	Cell func(r *KeyRow, now time.Time, style CellStyle) string
	// Clock: the cell changes with the clock (redrawn every second).
	Clock bool
	// compare orders two rows for sorting by this column, ascending (the
	// first press): labels A–Z, the most recent use first, the soonest
	// expiry first.
	compare func(a, b *KeyRow) int
	// optional: the column the app drops first when the screen is narrow.
	optional bool
}

// The columns, in the order they show.
const (
	ColAPIKey = iota
	ColLabel
	ColLastUsed
	ColAccess
	ColRefresh
	ColGrant // last: `keys list` scripts that count columns keep working
)

// KeyColumns are the keys table's columns.
var KeyColumns = []KeyColumn{
	ColAPIKey: {
		Title: "API Key", Width: 13, MinWidth: 13,
		Cell: func(r *KeyRow, _ time.Time, st CellStyle) string {
			if r.masked == "" {
				return none(st)
			}
			return r.masked
		},
		compare: func(a, b *KeyRow) int { return compareLower(a.masked, b.masked) },
	},
	ColLabel: {
		Title: "Label",
		Cell: func(r *KeyRow, _ time.Time, st CellStyle) string {
			if st == Live && r.has(rowDefault) {
				return "* " + r.Shown()
			}
			return r.Shown()
		},
		compare: func(a, b *KeyRow) int { return strings.Compare(a.lowerLabel(), b.lowerLabel()) },
	},
	ColLastUsed: {
		Title: "Last Used", Short: "Used", Width: 10, MinWidth: 9, Clock: true,
		Cell:    func(r *KeyRow, now time.Time, _ CellStyle) string { return lastUsedCell(timeOf(r.lastUsed), now) },
		compare: func(a, b *KeyRow) int { return laterFirst(timeOf(a.lastUsed), timeOf(b.lastUsed)) },
	},
	ColAccess: {
		Title: "Access expires", Short: "Access", Width: 16, MinWidth: 9, Clock: true,
		Cell: func(r *KeyRow, now time.Time, st CellStyle) string {
			return expiryCell(r, timeOf(r.access), auth.ExpiryNotStated, now, st)
		},
		compare: func(a, b *KeyRow) int {
			return soonerFirst(tokenTime(a, a.access), tokenTime(b, b.access))
		},
	},
	ColRefresh: {
		Title: "Refresh expires", Short: "Refresh", Width: 17, MinWidth: 10, Clock: true, optional: true,
		Cell: func(r *KeyRow, now time.Time, st CellStyle) string {
			if !r.has(rowRefreshToken) && !r.has(rowLoggedOut) && r.has(rowToken) {
				if r.has(rowRenewsItself) {
					return "renews itself"
				}
				return "no refresh token"
			}
			note := auth.ExpiryNotStated
			if r.has(rowRefreshOffline) {
				note = auth.NoExpiryOffline
			}
			return expiryCell(r, timeOf(r.refresh), note, now, st)
		},
		compare: func(a, b *KeyRow) int {
			return soonerFirst(tokenTime(a, a.refresh), tokenTime(b, b.refresh))
		},
	},
	ColGrant: {
		Title: "Grant", Width: grantCellWidth, MinWidth: grantCellWidth, optional: true,
		Cell: func(r *KeyRow, _ time.Time, st CellStyle) string {
			if st == Words {
				return r.Grant().String() // the stored name, as --grant takes it
			}
			return viewOf(r.Grant()).cell
		},
		compare: func(a, b *KeyRow) int { return strings.Compare(a.Grant().String(), b.Grant().String()) },
	},
}

func none(st CellStyle) string {
	if st == Words {
		return "-"
	}
	return "—"
}

// expiryCell says when a token of r's key expires: "in 4:59" (Live) or "in 4m"
// (Words), "expired", unstated (why there is no expiry), or why there is no
// token.
func expiryCell(r *KeyRow, exp time.Time, unstated string, now time.Time, st CellStyle) string {
	switch {
	case !r.has(rowToken):
		return none(st)
	case r.has(rowLoggedOut):
		return "logged out"
	case exp.IsZero():
		return unstated
	case !now.Before(exp):
		return "expired"
	case st == Words:
		return text.Relative(exp, now)
	default:
		return "in " + text.Countdown(exp.Sub(now))
	}
}

// tokenTime is the time of n (unixNano) for a key with a token, else zero
// (sorted last).
func tokenTime(r *KeyRow, n int64) time.Time {
	if r.has(rowLoggedOut) || !r.has(rowToken) {
		return time.Time{}
	}
	return timeOf(n)
}

// soonerFirst orders times ascending with the zero time last.
func soonerFirst(a, b time.Time) int {
	switch {
	case a.IsZero() || b.IsZero():
		return cmp.Compare(boolInt(a.IsZero()), boolInt(b.IsZero()))
	default:
		return a.Compare(b)
	}
}

// laterFirst orders times descending with the zero time (never) last.
func laterFirst(a, b time.Time) int {
	switch {
	case a.IsZero() || b.IsZero():
		return cmp.Compare(boolInt(a.IsZero()), boolInt(b.IsZero()))
	default:
		return b.Compare(a)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// notHandedOut is Last Used of a key whose token has not been handed out
// (printed, copied, sent) since it was made: the store records no use then
// (store.Key.LastUsed is zero), and making a key is not a use. "never"
// read as a fault right after a key was made; the app and `keys list`
// both say this (`keys list --json` has "last_used": null).
const notHandedOut = "not yet"

// lastUsedCell says when a key's token was last handed out.
func lastUsedCell(used, now time.Time) string {
	if used.IsZero() {
		return notHandedOut
	}
	return text.Ago(used, now)
}
