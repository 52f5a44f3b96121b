package store

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// fillEvery sets every field of the struct v points to (embedded structs
// included) to a distinct non-zero value, so a field that an encoding drops
// comes back zero and differs. A field of a kind it cannot fill fails the
// test: teach it the kind rather than leave the field unchecked.
func fillEvery(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, *n%60, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s is unexported: the definition's encodings see only exported fields", path, f.Name)
			}
			fillEvery(t, v.Field(i), path+"."+f.Name, n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(1000 + *n))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fillEvery(t, s.Index(0), path+"[0]", n)
		fillEvery(t, s.Index(1), path+"[1]", n)
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillEvery(t, p.Elem(), path, n)
		v.Set(p)
	default:
		t.Fatalf("%s: fillEvery cannot fill a %s", path, v.Kind())
	}
}

// diffFields names the leaf fields where got differs from want.
func diffFields(path string, want, got reflect.Value) []string {
	if want.Kind() == reflect.Struct && want.Type() != reflect.TypeFor[time.Time]() {
		var out []string
		for i := range want.NumField() {
			out = append(out, diffFields(path+"."+want.Type().Field(i).Name, want.Field(i), got.Field(i))...)
		}
		return out
	}
	if !reflect.DeepEqual(want.Interface(), got.Interface()) {
		return []string{fmt.Sprintf("%s: got %v, want %v", path, got.Interface(), want.Interface())}
	}
	return nil
}

func filledEntry(t *testing.T) keyEntry {
	var e keyEntry
	n := 0
	fillEvery(t, reflect.ValueOf(&e).Elem(), "keyEntry", &n)
	e.ID, e.Label = "id-1", "label 1"     // validated on load
	e.Grant = auth.GrantClientCredentials // validated on load
	e.CallbackPort = 8765                 // a TCP port
	e.ClientAuth = auth.PrivateKeyJWT     // validated on load
	return e
}

// A key's definition is keyEntry; every encoding of it must keep every
// field. Adding a field to keyEntry (or to auth.Connection) without
// teaching encodeEntry/decode, config.toml's tags or makeKey fails here.
func TestKeyEntryEveryFieldPersists(t *testing.T) {
	t.Parallel()
	want := filledEntry(t)

	t.Run("index record", func(t *testing.T) {
		var d entryDecoder
		got, err := d.decode(encodeEntry(want))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffFields("keyEntry", reflect.ValueOf(want), reflect.ValueOf(got)) {
			t.Errorf("the index record drops %s", d)
		}
	})

	t.Run("config.toml", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), configFileName)
		c := newConfigFile()
		c.Keys = []keyEntry{want}
		if err := saveConfig(path, c); err != nil {
			t.Fatal(err)
		}
		back, err := loadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffFields("keyEntry", reflect.ValueOf(want), reflect.ValueOf(back.Keys[0])) {
			t.Errorf("config.toml drops %s", d)
		}
	})

	t.Run("Key", func(t *testing.T) {
		// Every field of the definition reaches the Key callers see, under
		// its own name (the embedded Connection as Conn).
		k := reflect.ValueOf(makeKey(want, keyState{}, ""))
		ev := reflect.ValueOf(want)
		for i := range ev.NumField() {
			name := ev.Type().Field(i).Name
			if name == "Connection" {
				name = "Conn"
			}
			kf := k.FieldByName(name)
			if !kf.IsValid() {
				t.Errorf("store.Key has no field %s for keyEntry.%s", name, ev.Type().Field(i).Name)
				continue
			}
			if !reflect.DeepEqual(kf.Interface(), ev.Field(i).Interface()) {
				t.Errorf("makeKey drops keyEntry.%s: got %v", ev.Type().Field(i).Name, kf.Interface())
			}
		}
	})
}

// The state record keeps every field of keyState but the token's secrets.
func TestKeyStateEveryFieldPersists(t *testing.T) {
	t.Parallel()
	var want keyState
	n := 0
	fillEvery(t, reflect.ValueOf(&want).Elem(), "keyState", &n)
	want.Token = want.Token.Redacted() // never stored
	var d stateDecoder
	got, err := d.decode(encodeState(want))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffFields("keyState", reflect.ValueOf(want), reflect.ValueOf(got)) {
		t.Errorf("the state record drops %s", d)
	}
}

// The whole way: a definition written through the store, the store
// reopened by another Store (config.toml and state.db read again), and the
// definition compared field by field.
func TestKeyEntryReopenCompare(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(Options{})
	want := filledEntry(t)
	want.CreatedAt = want.CreatedAt.Truncate(time.Second)
	if err := s.update(context.Background(), func(t *tx) error { return t.addKeys(want) }); err != nil {
		t.Fatal(err)
	}
	s2 := e.open(Options{})
	got, _, err := s2.find(want.Label)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffFields("keyEntry", reflect.ValueOf(want), reflect.ValueOf(got)) {
		t.Errorf("reopened store drops %s", d)
	}
	// Import takes the Definition whole.
	imported := want
	imported.Label = "imported"
	imported.AuthURL, imported.TokenURL, imported.Issuer = "https://auth.example.com", "https://auth.example.com/token", "https://auth.example.com/auth/realms/r" // validated by Import
	if err := s2.Import(context.Background(), []ImportKey{{Label: imported.Label, Definition: imported.Definition, CreatedAt: imported.CreatedAt}}); err != nil {
		t.Fatal(err)
	}
	got, _, err = s2.find(imported.Label)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffFields("Definition", reflect.ValueOf(imported.Definition), reflect.ValueOf(got.Definition)) {
		t.Errorf("Import drops %s", d)
	}
	// And when the index is rebuilt from config.toml alone.
	if err := removeFile(s2.dbPath()); err != nil {
		t.Fatal(err)
	}
	s3 := e.open(Options{})
	got, _, err = s3.find(want.Label)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffFields("keyEntry", reflect.ValueOf(want), reflect.ValueOf(got)) {
		t.Errorf("rebuilt index drops %s", d)
	}
}

// A version 2 record (every index written before the records were CBOR)
// decodes whole, the client authentication it held for a while included.
func TestRecordVersion2StillDecodes(t *testing.T) {
	t.Parallel()
	e := filledEntry(t)
	e.ClientAuth = ""
	e.ClientKeyID, e.DPoP, e.NoPAR, e.APIURL = "", false, false, "" // newer than version 2
	e.AssertionFile, e.AssertionCmd, e.ClientAssertionFile, e.ClientAssertionCmd = "", "", "", ""
	var d entryDecoder
	got, err := d.decode(legacyEncodeEntry(e))
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("v2 entry decoded as %+v, %v", got, err)
	}
	e.ClientAuth = auth.ClientSecretBasic
	w := recWriter{b: legacyEncodeEntry(e)}
	w.str(string(e.ClientAuth))
	if got, err := d.decode(w.b); err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("v2 entry with client_auth decoded as %+v, %v", got, err)
	}
	var want keyState
	n := 0
	fillEvery(t, reflect.ValueOf(&want).Elem(), "keyState", &n)
	want.Token = want.Token.Redacted()
	var sd stateDecoder
	gotState, err := sd.decode(legacyEncodeState(want))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffFields("keyState", reflect.ValueOf(want), reflect.ValueOf(gotState)) {
		t.Errorf("the v2 state record drops %s", d)
	}
}

// A version 1 record (every index written before grants) decodes as the
// password grant with a refresh token held.
func TestRecordVersion1StillDecodes(t *testing.T) {
	t.Parallel()
	e := filledEntry(t)
	v2 := legacyEncodeEntry(e)
	// A version 1 record is the version 2 one without its last three fields.
	tail := len(encodeTail(e))
	v1 := append([]byte{1}, v2[1:len(v2)-tail]...)
	var d entryDecoder
	got, err := d.decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	e.Grant, e.CallbackPort, e.PublicClient, e.ClientAuth = "", 0, false, ""
	e.ClientKeyID, e.DPoP, e.NoPAR, e.APIURL = "", false, false, ""
	e.AssertionFile, e.AssertionCmd, e.ClientAssertionFile, e.ClientAssertionCmd = "", "", "", ""
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("v1 entry decoded as %+v", got)
	}
	st := keyState{Masked: "ab…cd", Secrets: "keyring", NoRefresh: true}
	sv2 := legacyEncodeState(st)
	sv1 := append([]byte{1}, sv2[1:len(sv2)-1]...)
	var sd stateDecoder
	gotState, err := sd.decode(sv1)
	if err != nil {
		t.Fatal(err)
	}
	if gotState.NoRefresh || gotState.Masked != st.Masked {
		t.Fatalf("v1 state decoded as %+v", gotState)
	}
}

// encodeTail is what version 2 appended to an entry record.
func encodeTail(e keyEntry) []byte {
	w := recWriter{}
	w.str(string(e.Grant))
	w.int(int64(e.CallbackPort))
	w.bool(e.PublicClient)
	return w.b
}
