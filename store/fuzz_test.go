package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// FuzzRecordCodec: any bytes in state.db's entry and state records decode to
// a value or an error, never a panic; a value that decodes encodes back to a
// record that decodes to the same value.
func FuzzRecordCodec(f *testing.F) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	nbp := int64(3)
	f.Add(encodeState(keyState{LastUsed: now, Masked: "abc…xyz", Secrets: BackendFile, EndPending: now,
		Token: auth.TokenSet{TokenType: "Bearer", ExpiresIn: 300, NotBeforePolicy: &nbp, ObtainedAt: now}}))
	f.Add(encodeState(keyState{}))
	f.Add(legacyEncodeState(keyState{LastUsed: now, Masked: "abc…xyz", Secrets: BackendFile}))
	f.Add(legacyEncodeEntry(keyEntry{ID: "0123456789abcdef", Label: "prod", CreatedAt: now}))
	f.Add(encodeEntry(keyEntry{ID: "0123456789abcdef", Label: "prod", CreatedAt: now,
		Definition: Definition{Username: "me", Connection: auth.Connection{AuthURL: "https://auth.example.com", ClientID: "c", Scopes: []string{"a", "b"}}}}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		if ks, err := (&stateDecoder{}).decode(rec); err == nil {
			again := encodeState(ks)
			ks2, err := (&stateDecoder{}).decode(again)
			if err != nil || !bytes.Equal(encodeState(ks2), again) {
				t.Fatalf("state %+v does not survive a round trip: %v", ks, err)
			}
		}
		if e, err := (&entryDecoder{}).decode(rec); err == nil {
			again := encodeEntry(e)
			e2, err := (&entryDecoder{}).decode(again)
			if err != nil || !bytes.Equal(encodeEntry(e2), again) {
				t.Fatalf("entry %+v does not survive a round trip: %v", e, err)
			}
		}
	})
}

// FuzzConfigParser: any config.toml parses to a valid configuration or to
// one error line naming the file, never a panic; a configuration that
// parses is written back and read again unchanged.
func FuzzConfigParser(f *testing.F) {
	f.Add("default = 'k'\nsecrets = 'file'\n[[keys]]\nid = '0123456789abcdef'\nlabel = 'k'\nauth_url = 'https://a.example'\nclient_id = 'c'\nusername = 'u'\n")
	f.Add("clipboard_clear = 'never'\nauto_refresh = false\n")
	f.Add("[[keys]]\nid = 'x'\n[[keys]]\nid = 'x'\n")
	f.Add("null\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data string) {
		path := filepath.Join(dir, configFileName)
		if err := os.WriteFile(path, []byte(data), filePerm); err != nil {
			t.Fatal(err)
		}
		c, err := loadConfig(path)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, configFileName) || strings.ContainsAny(msg, "\n\x1b") {
				t.Fatalf("not one safe line naming the file: %q", msg)
			}
			return
		}
		if err := c.validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
		out := filepath.Join(dir, "again.toml")
		if err := saveConfig(out, c); err != nil {
			t.Fatalf("a parsed config does not save: %v", err)
		}
		c2, err := loadConfig(out)
		if err != nil {
			t.Fatalf("a saved config does not parse again: %v", err)
		}
		if len(c2.Keys) != len(c.Keys) || c2.Default != c.Default || c2.Secrets != c.Secrets {
			t.Fatalf("round trip changed the config: %+v -> %+v", c, c2)
		}
	})
}
