package tui

import (
	"cmp"
	"strings"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// KeyRow is one key prepared for a keys table: its display text sanitized
// and lower-cased once, when the key list is loaded, so that filtering,
// sorting and drawing never do it again.
type KeyRow struct {
	Key    store.Key
	Label  string // text.Safe(Key.Label)
	Masked string // text.Safe(Key.Masked); "" when the key has no token

	lowerLabel, lowerMasked string
}

// NewKeyRow prepares k for a keys table.
func NewKeyRow(k store.Key) KeyRow {
	r := KeyRow{Key: k, Label: text.Safe(k.Label), Masked: text.Safe(k.Masked)}
	r.lowerLabel = strings.ToLower(r.Label)
	r.lowerMasked = strings.ToLower(r.Masked)
	return r
}

// matches reports whether the lower-cased filter q finds r in what the
// table shows of it: its label (a substring or the letters in order), its
// API key as masked, or its grant (the cell or the stored name).
func (r *KeyRow) matches(q string) bool {
	if matches(r.lowerLabel, q) || strings.Contains(r.lowerMasked, q) {
		return true
	}
	g := viewOf(r.Key.Grant.Or())
	return strings.Contains(g.cell, q) || strings.Contains(g.title, q) || strings.Contains(string(r.Key.Grant.Or()), q)
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
			if r.Masked == "" {
				return none(st)
			}
			return r.Masked
		},
		compare: func(a, b *KeyRow) int { return strings.Compare(a.lowerMasked, b.lowerMasked) },
	},
	ColLabel: {
		Title: "Label",
		Cell: func(r *KeyRow, _ time.Time, st CellStyle) string {
			if st == Live && r.Key.Default {
				return "* " + r.Label
			}
			return r.Label
		},
		compare: func(a, b *KeyRow) int { return strings.Compare(a.lowerLabel, b.lowerLabel) },
	},
	ColLastUsed: {
		Title: "Last Used", Short: "Used", Width: 10, MinWidth: 9, Clock: true,
		Cell:    func(r *KeyRow, now time.Time, _ CellStyle) string { return text.Ago(r.Key.LastUsed, now) },
		compare: func(a, b *KeyRow) int { return laterFirst(a.Key.LastUsed, b.Key.LastUsed) },
	},
	ColAccess: {
		Title: "Access expires", Short: "Access", Width: 16, MinWidth: 9, Clock: true,
		Cell: func(r *KeyRow, now time.Time, st CellStyle) string {
			return expiryCell(r.Key, r.Key.Token.AccessExpiry(), auth.ExpiryNotStated, now, st)
		},
		compare: func(a, b *KeyRow) int {
			return soonerFirst(tokenTime(a.Key, a.Key.Token.AccessExpiry()), tokenTime(b.Key, b.Key.Token.AccessExpiry()))
		},
	},
	ColRefresh: {
		Title: "Refresh expires", Short: "Refresh", Width: 17, MinWidth: 10, Clock: true, optional: true,
		Cell: func(r *KeyRow, now time.Time, st CellStyle) string {
			if k := r.Key; !k.HasRefreshToken && !k.LoggedOut && !k.Token.ObtainedAt.IsZero() {
				if k.RenewsItself() {
					return "renews itself"
				}
				return "no refresh token"
			}
			return expiryCell(r.Key, r.Key.Token.RefreshExpiresAt, r.Key.Token.RefreshExpiryNote(), now, st)
		},
		compare: func(a, b *KeyRow) int {
			return soonerFirst(tokenTime(a.Key, a.Key.Token.RefreshExpiresAt), tokenTime(b.Key, b.Key.Token.RefreshExpiresAt))
		},
	},
	ColGrant: {
		Title: "Grant", Width: grantCellWidth, MinWidth: grantCellWidth, optional: true,
		Cell: func(r *KeyRow, _ time.Time, st CellStyle) string {
			if st == Words {
				return r.Key.Grant.String() // the stored name, as --grant takes it
			}
			return viewOf(r.Key.Grant).cell
		},
		compare: func(a, b *KeyRow) int { return strings.Compare(a.Key.Grant.String(), b.Key.Grant.String()) },
	},
}

func none(st CellStyle) string {
	if st == Words {
		return "-"
	}
	return "—"
}

// expiryCell says when a token of k expires: "in 4:59" (Live) or "in 4m"
// (Words), "expired", unstated (why there is no expiry), or why there is no
// token.
func expiryCell(k store.Key, exp time.Time, unstated string, now time.Time, st CellStyle) string {
	switch {
	case k.Token.ObtainedAt.IsZero():
		return none(st)
	case k.LoggedOut:
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

// tokenTime is t for a key with a token, else zero (sorted last).
func tokenTime(k store.Key, t time.Time) time.Time {
	if k.LoggedOut || k.Token.ObtainedAt.IsZero() {
		return time.Time{}
	}
	return t
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
