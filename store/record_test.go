package store

import (
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// TestDamagedRecordsAreErrors: every truncation and every single-byte
// corruption of a state or entry record decodes to an error or a value,
// never a panic (a damaged state.db must be reported, not crash shipkey).
func TestDamagedRecordsAreErrors(t *testing.T) {
	t.Parallel()
	nbp := int64(0)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := encodeState(keyState{LastUsed: now, Masked: "abc…xyz", Secrets: BackendFile,
		Token: auth.TokenSet{TokenType: "Bearer", ExpiresIn: 300, NotBeforePolicy: &nbp, ObtainedAt: now,
			AccessExpiresAt: now.Add(5 * time.Minute), RefreshExpirySource: auth.RefreshExpiryResponse}})
	en := encodeEntry(keyEntry{ID: "0123456789abcdef", Label: "prod", CreatedAt: now,
		Definition: Definition{Username: "me", Connection: auth.Connection{AuthURL: "https://auth.example.com", ClientID: "c"}}})

	var sd stateDecoder
	if ks, err := sd.decode(st); err != nil || ks.Token.NotBeforePolicy == nil || ks.Token.RefreshExpirySource != auth.RefreshExpiryResponse {
		t.Fatalf("round trip: %+v, %v", ks, err)
	}
	if id, err := (&entryDecoder{}).decodeID(en); err != nil || id != "0123456789abcdef" {
		t.Fatalf("decodeID = %q, %v", id, err)
	}
	for _, rec := range [][]byte{st, en, legacyEncodeState(keyState{LastUsed: now, Masked: "abc…xyz"}), legacyEncodeEntry(keyEntry{ID: "0123456789abcdef", Label: "prod", CreatedAt: now})} {
		for cut := 0; cut < len(rec); cut++ {
			_, _ = (&stateDecoder{}).decode(rec[:cut])
			_, _ = (&entryDecoder{}).decode(rec[:cut])
			_, _ = (&entryDecoder{}).decodeID(rec[:cut])
		}
		for i := range rec {
			for _, b := range []byte{0x00, 0xff, 0x7f, 0x80} {
				bad := append([]byte(nil), rec...)
				bad[i] = b
				_, _ = (&stateDecoder{}).decode(bad)
				_, _ = (&entryDecoder{}).decode(bad)
				if id, err := (&entryDecoder{}).decodeID(bad); err == nil {
					if e, err := (&entryDecoder{}).decode(bad); err == nil && e.ID != id {
						t.Errorf("decodeID = %q, decode's ID %q", id, e.ID)
					}
				}
			}
		}
	}
}
