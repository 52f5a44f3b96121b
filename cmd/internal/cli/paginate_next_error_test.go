package cli

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
)

// A --paginate-next expression that fails on a page is named as such, not
// as --jq (which may not even be given).
func TestPaginateNextErrorNamesItsFlag(t *testing.T) {
	t.Parallel()
	q, err := gojq.Parse(".cursor")
	if err != nil {
		t.Fatal(err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://api.example/v1/items")
	resp := &http.Response{Request: &http.Request{URL: base}, Header: http.Header{}}
	_, err = nextPage(resp, []any{1.0}, code, 1, true)
	if err == nil || !strings.HasPrefix(err.Error(), "--paginate-next: on page 1: ") {
		t.Fatalf("a failing --paginate-next: %v, want it named", err)
	}
}
