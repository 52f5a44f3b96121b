package store

import (
	"errors"
	"reflect"
	"testing"
)

// TestEachKeyMatchesKeys: the streamed walk yields exactly what Keys lists
// (label order, default, state), and an error from fn ends it.
func TestEachKeyMatchesKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	for _, l := range []string{"gamma", "alpha", "beta"} {
		e.create(s, l, false)
	}
	if err := s.SetDefault("beta"); err != nil {
		t.Fatal(err)
	}
	e.token(s, "gamma") // Last Used and a state record
	if _, err := s.Logout(t.Context(), "alpha"); err != nil {
		t.Fatal(err)
	}

	want, err := s.Keys()
	if err != nil {
		t.Fatal(err)
	}
	var got []Key
	if err := s.EachKey(func(k Key) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EachKey:\n%+v\nKeys:\n%+v", got, want)
	}

	stop := errors.New("stop")
	n := 0
	if err := s.EachKey(func(Key) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("EachKey with an error from fn = %v after %d keys", err, n)
	}
}
