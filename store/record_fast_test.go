package store

import (
	"fmt"
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

// The records shipkey writes decode without the CBOR library's reflection
// (a walk decodes two records a key; the library made about twice as many
// allocations as there are strings: BenchmarkDecodeRecord reports them).
// Every field's value is checked against the library's.
func TestRecordsDecodeFast(t *testing.T) {
	t.Parallel()
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
	if ed.slow != 0 || sd.slow != 0 {
		t.Errorf("the fast decoder left %d entries and %d states to the library", ed.slow, sd.slow)
	}
}

// BenchmarkDecodeRecord reports the allocations of decoding a record with
// a new decoder: one for all its strings, and one for the scopes' slice
// (entry) or the not-before-policy's int (state).
func BenchmarkDecodeRecord(b *testing.B) {
	entry, state := fullRecords(time.UTC) // a time at another offset is a new time.Location each
	for _, c := range []struct {
		what string
		dec  func()
	}{
		{"entry", func() { var ed entryDecoder; _, _ = ed.decode(entry) }},
		{"state", func() { var sd stateDecoder; _, _ = sd.decode(state) }},
	} {
		b.Run(c.what, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.dec()
			}
		})
	}
}

// FuzzFastRecord: what the fast decoder takes, the library decodes to the
// same value; the rest is left to the library. Two records go through one
// pair of decoders (a walk's next key shares what equals the key before),
// and the first again after the second.
func FuzzFastRecord(f *testing.F) {
	var seeds [][]byte
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("", -7200), time.FixedZone("", 5*3600+1800)} {
		entry, state := fullRecords(loc)
		seeds = append(seeds, entry, state)
	}
	entries, states := walkRecords(2)
	seeds = append(seeds, entries[0], states[0], entries[1], states[1])
	e, ks := keyEntry{Definition: Definition{Connection: auth.Connection{Scopes: []string{"a", "", "b"}}}}, keyState{}
	nbp := int64(0)
	ks.Token.NotBeforePolicy = &nbp
	seeds = append(seeds, encodeRecord(e), encodeRecord(ks), encodeRecord(keyState{}),
		encodeRecord(keyEntry{Definition: Definition{Connection: auth.Connection{Scopes: []string{}}}}),
		[]byte("\xa1\x62id\x60\x00"),                                        // trailing bytes
		[]byte("\xa2\x62id\x61a\x62id\x61b"),                                // a duplicate
		[]byte("\xa1\x62ID\x61a"),                                           // another case
		[]byte("\xa1\x6acreated_at\x64 now"),                                // not RFC 3339
		[]byte("\xa1\x6acreated_at\x781a2026-02-30T11:10:48.5+01:00"),       // no such day
		[]byte("\xa1\x6acreated_at\x782026-11-26T11:10:48,5Z"),              // a comma
		[]byte("\xa1\x6acreated_at\x76\x32\x30\x32\x36-11-26T24:00:00Z"),    // hour 24
		[]byte("\xbf\x62id\x61a\xff"),                                       // indefinite length
		[]byte("\xa1\x6dcallback_port\x1b\x80\x00\x00\x00\x00\x00\x00\x00"), // past int64
		[]byte("\xa2\x66scopes\x82\x61a\x61b\x62id\x61\xff"),                // a bad string after the scopes
	)
	for i, a := range seeds {
		f.Add(a, seeds[(i+1)%len(seeds)])
		f.Add(a, a)
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var ed entryDecoder
		var sd stateDecoder
		for _, rec := range [][]byte{first, second, first} {
			var fe keyEntry
			if fastDecode(fastEntry(), rec, unsafe.Pointer(&fe), &ed.share) {
				var le keyEntry
				if err := recordDec().Unmarshal(rec, &le); err != nil || !reflect.DeepEqual(fe, le) {
					t.Fatalf("entry: fast %+v, library %+v, %v", fe, le, err)
				}
			}
			var fs keyState
			if fastDecode(fastState(), rec, unsafe.Pointer(&fs), &sd.share) {
				var ls keyState
				if err := recordDec().Unmarshal(rec, &ls); err != nil || !reflect.DeepEqual(fs, ls) {
					t.Fatalf("state: fast %+v, library %+v, %v", fs, ls, err)
				}
			}
		}
	})
}

// FuzzRecordTime: the fast decoder reads a time without copying its text
// (time.Time.UnmarshalText); what it reads is what the library's
// time.Parse(time.RFC3339, …) reads, in the same location, and what it
// refuses the library reads itself.
func FuzzRecordTime(f *testing.F) {
	for _, s := range []string{"2026-11-26T11:10:48Z", "2026-11-26T11:10:48.123456789Z", "2026-11-26T11:10:48+05:30",
		"2026-11-26T11:10:48.5-02:00", "2026-11-26T11:10:48+00:00", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999+23:59",
		"2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-26T24:00:00Z", "2026-11-26T11:10:60Z", "2026-11-26T11:10:48,5Z",
		"2026-11-26T11:10:48z", "2026-11-26 11:10:48Z", "2026-11-26T11:10:48.Z", "2026-11-26T1:10:48Z", "2026-11-26T11:10:48+24:00",
		"2026-11-26T11:10:48.0000000001Z", time.Date(2026, 6, 1, 12, 0, 0, 0, time.Local).Format(time.RFC3339Nano)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var fast time.Time
		if fast.UnmarshalText([]byte(s)) != nil {
			return
		}
		lib, err := time.Parse(time.RFC3339, s)
		again, _ := time.Parse(time.RFC3339, s)
		// == too where the library's location is one value (UTC, Local,
		// a whole hour's offset), not a new one each time.
		if err != nil || !reflect.DeepEqual(fast, lib) || (lib == again) != (fast == lib) {
			t.Fatalf("%q: fast %v (%p), library %v (%p), %v", s, fast, fast.Location(), lib, lib.Location(), err)
		}
	})
}

// walkRecords are n keys' entry and state records as a store of generated
// keys holds them (storetest.Generate's: one connection, a token each).
func walkRecords(n int) (entries, states [][]byte) {
	now := time.Date(2026, 11, 26, 11, 10, 48, 0, time.UTC)
	conn := auth.Connection{AuthURL: "https://auth.example.com", Realm: "shipping", ClientID: "shipping-api", Scopes: []string{"email", "profile"}}
	for i := range n {
		e := keyEntry{ID: fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15), Label: fmt.Sprintf("key-%07d", i),
			Definition: Definition{Connection: conn, Username: fmt.Sprintf("user%d", i)}, CreatedAt: now.Add(-time.Duration(i) * time.Second)}
		var ks keyState
		ks.setToken(&auth.TokenSet{AccessToken: fmt.Sprintf("eyJhbGciOiJub25lIn0.eyJzdWIiOiJrZXktJWQifQ.%d", i),
			RefreshToken: "r", TokenType: "Bearer", Scope: "email profile", ExpiresIn: 365 * 24 * 3600, RefreshExpiresIn: 1800,
			SessionState: fmt.Sprintf("session-%d", i), ObtainedAt: now, AccessExpiresAt: now.Add(365 * 24 * time.Hour),
			RefreshExpiresAt: now.Add(30 * time.Minute)})
		ks.Secrets = BackendFile
		entries, states = append(entries, encodeEntry(e)), append(states, encodeState(ks))
	}
	return entries, states
}

// A walk's decoders share what repeats from key to key (the connection,
// the token's type and scope) and copy the rest into an arena, many keys'
// to an allocation: for 100 keys a few arenas, where there were sixteen
// allocations a key. Each key's records decode as the library decodes them.
func TestWalkDecodeSharesArenas(t *testing.T) {
	t.Parallel()
	entries, states := walkRecords(100)
	var ed entryDecoder
	var sd stateDecoder
	es, kss := make([]keyEntry, len(entries)), make([]keyState, len(states))
	for i := range entries {
		var err error
		if es[i], err = ed.decode(entries[i]); err != nil {
			t.Fatal(err)
		}
		if kss[i], err = sd.decode(states[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Compared once all are read: a key's strings stay as they were read.
	for i := range entries {
		le, lerr := libraryDecode[keyEntry](entries[i])
		if lerr != nil || !reflect.DeepEqual(es[i], le) {
			t.Fatalf("key %d: entry %+v; the library's %+v, %v", i, es[i], le, lerr)
		}
		ls, lerr := libraryDecode[keyState](states[i])
		if lerr != nil || !reflect.DeepEqual(kss[i], ls) {
			t.Fatalf("key %d: state %+v; the library's %+v, %v", i, kss[i], ls, lerr)
		}
	}
	if ed.slow != 0 || sd.slow != 0 {
		t.Errorf("the fast decoder left %d entries and %d states of %d keys to the library", ed.slow, sd.slow, len(entries))
	}
	if arenas := ed.share.arenas + sd.share.arenas; arenas == 0 || arenas > len(entries)/10 {
		t.Errorf("%d keys' strings took %d arenas; want a few (an arena holds about fifty keys' strings)", len(entries), arenas)
	}
}

// BenchmarkDecodeWalk decodes keys' records as a walk does: one decoder
// pair, key after key.
func BenchmarkDecodeWalk(b *testing.B) {
	entries, states := walkRecords(1000)
	var ed entryDecoder
	var sd stateDecoder
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i % len(entries)
		if _, err := ed.decode(entries[j]); err != nil {
			b.Fatal(err)
		}
		if _, err := sd.decode(states[j]); err != nil {
			b.Fatal(err)
		}
	}
}
