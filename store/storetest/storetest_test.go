package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shipkey/shipkey/store"
)

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	s := Store{ConfigDir: filepath.Join(dir, "c"), StateDir: filepath.Join(dir, "s"), Backend: store.BackendPlaintext, N: 30}
	Generate(t, s)
	st, err := store.Open(s.Options())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.Keys()
	if err != nil || len(keys) != 30 || keys[0].Label != Label(0) || !keys[0].Default {
		t.Fatalf("Keys = %d, %v", len(keys), err)
	}
	ts, err := st.Token(context.Background(), Label(17), store.TokenOptions{MarkUsed: true})
	if err != nil || ts.AccessToken == "" {
		t.Fatalf("Token = %v", err)
	}
}
