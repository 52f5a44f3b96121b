package text_test

import (
	"testing"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/internal/text/texttest"
)

const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		jwt:                              jwt,
		"  Bearer " + jwt + "\n":         jwt,
		"Authorization: Bearer " + jwt:   jwt,
		"authorization:   bearer " + jwt: jwt,
		"opaque":                         "opaque",
	} {
		if got := text.BearerToken(in); got != want {
			t.Errorf("BearerToken(%q) = %q", in, got)
		}
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	if got := text.Mask(jwt); got != "eyJhbG…QuYzJs"[:0]+jwt[:6]+"…"+jwt[len(jwt)-6:] {
		t.Errorf("Mask = %q", got)
	}
	if got := text.Mask("short"); got != "••••••" {
		t.Errorf("Mask(short) = %q", got)
	}
	texttest.RequireSafe(t, "Mask", text.Mask("abcdef\x1b[31mxxxxxxxxxxxx\x1b]52;c;"))
}
