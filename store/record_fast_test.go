package store

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/shipkey/shipkey/auth"
)

// fullRecords are an entry and a state record as shipkey writes them, every
// field set.
func fullRecords(loc *time.Location) (entry, state []byte) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 123456789, loc)
	nbp := int64(-3)
	e := keyEntry{ID: "0123456789abcdef", Label: "prod é", CreatedAt: now.UTC(),
		Definition: Definition{Connection: auth.Connection{AuthURL: "https://auth.example.com", Realm: "r", ClientID: "c",
			TokenURL: "https://t.example.com/token", Issuer: "https://i.example.com", Scopes: []string{"a", "b"},
			ClientAuth: "private_key_jwt", BasicAuth: true, PublicClient: true, ClientKeyID: "kid", DPoP: true, NoPAR: true},
			Grant: "password", CallbackPort: 8400, Username: "me", RememberPassword: true, APIURL: "https://api.example.com"}}
	ks := keyState{LastUsed: now, Masked: "abc…xyz", LoggedOut: true, Secrets: BackendFile, EndPending: now, NoRefresh: true,
		Token: auth.TokenSet{AccessToken: "at", TokenType: "Bearer", RefreshToken: "rt", IDToken: "it", ExpiresIn: 300,
			RefreshExpiresIn: 1 << 40, NotBeforePolicy: &nbp, SessionState: "s", Scope: "openid", ObtainedAt: now,
			AccessExpiresAt: now.Add(time.Hour), RefreshExpiresAt: now.Add(time.Hour), RefreshExpirySource: "jwt", JWTExpiresAt: now}}
	return encodeRecord(e), encodeRecord(ks)
}

// The records shipkey writes decode without the CBOR library's reflection:
// an allocation a string (and the scopes' slice, the not-before-policy's
// int), where the library made about twice as many (a walk decodes two
// records a key). Every field's value is checked against the library's.
func TestRecordsDecodeFast(t *testing.T) { // not parallel: testing.AllocsPerRun
	entry, state := fullRecords(time.FixedZone("", 5*3600+1800))
	var libE keyEntry
	var libS keyState
	if err := recordDec().Unmarshal(entry, &libE); err != nil {
		t.Fatal(err)
	}
	if err := recordDec().Unmarshal(state, &libS); err != nil {
		t.Fatal(err)
	}
	var ed entryDecoder
	var sd stateDecoder
	e, err := ed.decode(entry)
	if err != nil || !reflect.DeepEqual(e, libE) {
		t.Fatalf("entry %+v, %v; the library's %+v", e, err, libE)
	}
	ks, err := sd.decode(state)
	if err != nil || !reflect.DeepEqual(ks, libS) {
		t.Fatalf("state %+v, %v; the library's %+v", ks, err, libS)
	}
	// 16 strings and the scopes' slice; 10 strings and the int (times in
	// UTC: one at another offset is a new time.Location each).
	entry, state = fullRecords(time.UTC)
	for _, c := range []struct {
		what string
		max  float64
		dec  func()
	}{
		{"entry", 17, func() { _, _ = ed.decode(entry) }},
		{"state", 11, func() { _, _ = sd.decode(state) }},
	} {
		if n := testing.AllocsPerRun(50, c.dec); n > c.max {
			t.Errorf("decoding the %s record: %v allocations, want at most %v", c.what, n, c.max)
		}
	}
}

// FuzzFastRecord: what the fast decoder takes, the library decodes to the
// same value; the rest is left to the library.
func FuzzFastRecord(f *testing.F) {
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("", -7200)} {
		entry, state := fullRecords(loc)
		f.Add(entry)
		f.Add(state)
	}
	f.Add(encodeRecord(keyState{}))
	f.Add(encodeRecord(keyEntry{Definition: Definition{Connection: auth.Connection{Scopes: []string{}}}}))
	f.Add([]byte("\xa1\x62id\x60\x00"))                                        // trailing bytes
	f.Add([]byte("\xa2\x62id\x61a\x62id\x61b"))                                // a duplicate
	f.Add([]byte("\xa1\x62ID\x61a"))                                           // another case
	f.Add([]byte("\xa1\x6acreated_at\x64 now"))                                // not RFC 3339
	f.Add([]byte("\xbf\x62id\x61a\xff"))                                       // indefinite length
	f.Add([]byte("\xa1\x6dcallback_port\x1b\x80\x00\x00\x00\x00\x00\x00\x00")) // past int64
	f.Fuzz(func(t *testing.T, rec []byte) {
		var fe keyEntry
		if fastDecode(fastEntry(), rec, unsafe.Pointer(&fe)) {
			var le keyEntry
			if err := recordDec().Unmarshal(rec, &le); err != nil || !reflect.DeepEqual(fe, le) {
				t.Fatalf("entry: fast %+v, library %+v, %v", fe, le, err)
			}
		}
		var fs keyState
		if fastDecode(fastState(), rec, unsafe.Pointer(&fs)) {
			var ls keyState
			if err := recordDec().Unmarshal(rec, &ls); err != nil || !reflect.DeepEqual(fs, ls) {
				t.Fatalf("state: fast %+v, library %+v, %v", fs, ls, err)
			}
		}
	})
}
