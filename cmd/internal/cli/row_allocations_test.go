package cli

import (
	"slices"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/tui"
)

// A row of keys list or status allocates only the text it must make: keys
// list the access expiry in words ("in 364d 17h"), status the label with
// its mark and the verdict (its time absolute and relative built in one
// go). keys list made 2 (the row prepared for the columns as well), status
// 6 (the cells' slice, the verdict's parts). Both run 100,000 times at
// 100k keys.
func TestTableRowAllocations(t *testing.T) { // not parallel: testing.AllocsPerRun
	now := time.Date(2026, 11, 26, 11, 10, 48, 0, time.UTC)
	k := store.Key{ID: "0123456789abcdef", Label: "key-0000001", Masked: "eyJhbG…QifQ.1", Secrets: store.BackendFile, HasRefreshToken: true,
		Definition: store.Definition{Connection: auth.Connection{AuthURL: "https://auth.example.com", Realm: "shipping", ClientID: "shipping-api"}, Username: "user1"},
		Token: auth.TokenSet{TokenType: "Bearer", ObtainedAt: now.Add(-7 * time.Hour), AccessExpiresAt: now.Add(364*24*time.Hour + 17*time.Hour),
			RefreshExpiresAt: now.Add(-6 * time.Hour)}}
	var cells []string
	var row tui.KeyRow
	for _, c := range []struct {
		what string
		max  float64
		row  func() []string
		want []string
	}{
		{"keys list", 1, func() []string { return keyCells(cells[:0], &row, k, now) },
			[]string{" ", "eyJhbG…QifQ.1", "key-0000001", "never", "in 364d 17h", "expired", "password"}},
		{"status", 2, func() []string { return statusCells(cells[:0], k, keyStatus(k, now)) },
			[]string{"  key-0000001", "age file", "valid until 2027-11-26 04:10:48 UTC (in 364d 17h)"}},
	} {
		if got := c.row(); !slices.Equal(got, c.want) {
			t.Errorf("%s: row %q, want %q", c.what, got, c.want)
		}
		if n := testing.AllocsPerRun(100, func() { cells = c.row() }); n > c.max {
			t.Errorf("a %s row: %v allocations, want at most %v", c.what, n, c.max)
		}
	}
}
