package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/tui"
)

// tableRowCases are a row of keys list and of status for one key: what
// the cells say, and the function that makes them.
func tableRowCases() []struct {
	what string
	row  func() []string
	want []string
} {
	now := time.Date(2026, 11, 26, 11, 10, 48, 0, time.UTC)
	k := store.Key{ID: "0123456789abcdef", Label: "key-0000001", Masked: "eyJhbG…QifQ.1", Secrets: store.BackendFile, HasRefreshToken: true,
		Definition: store.Definition{Connection: auth.Connection{AuthURL: "https://auth.example.com", Realm: "shipping", ClientID: "shipping-api"}, Username: "user1"},
		Token: auth.TokenSet{TokenType: "Bearer", ObtainedAt: now.Add(-7 * time.Hour), AccessExpiresAt: now.Add(364*24*time.Hour + 17*time.Hour),
			RefreshExpiresAt: now.Add(-6 * time.Hour)}}
	var cells []string
	var row tui.KeyRow
	return []struct {
		what string
		row  func() []string
		want []string
	}{
		{"keys list", func() []string { cells = keyCells(cells[:0], &row, k, now); return cells },
			[]string{" ", "eyJhbG…QifQ.1", "key-0000001", "not yet", "in 364d 17h", "expired", "password"}},
		{"status", func() []string { cells = statusCells(cells[:0], k, keyStatus(k, now)); return cells },
			[]string{"  key-0000001", "age file", "valid until 2027-11-26 04:10:48 UTC (in 364d 17h)"}},
	}
}

// A row of keys list and of status, made again in the same cells as a
// table makes them key after key, says the same.
func TestTableRowCells(t *testing.T) {
	t.Parallel()
	for _, c := range tableRowCases() {
		for range 2 {
			if got := c.row(); !slices.Equal(got, c.want) {
				t.Errorf("%s: row %q, want %q", c.what, got, c.want)
			}
		}
	}
}

// BenchmarkTableRow reports the allocations of a keys list row (1: the
// access expiry in words) and a status row (2: the label with its mark, the
// verdict), made 100,000 times at 100k keys; docs/performance.md quotes
// them.
func BenchmarkTableRow(b *testing.B) {
	for _, c := range tableRowCases() {
		b.Run(strings.ReplaceAll(c.what, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.row()
			}
		})
	}
}
