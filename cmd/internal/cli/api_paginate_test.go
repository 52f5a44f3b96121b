package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
)

// pagedAPI is a resource server for the demo key of testStore, and a run of
// shipkey api against it.
func pagedAPI(t *testing.T) (*authtest.ResourceServer, func(o apiOptions) (string, error)) {
	t.Helper()
	st, srv := testStore(t, time.Now)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret})
	t.Cleanup(rs.Close)
	if err := st.SetAPIURL("demo", rs.URL()); err != nil {
		t.Fatal(err)
	}
	return rs, func(o apiOptions) (string, error) {
		ios, out, _ := testIO("")
		o.IO, o.Now, o.Secrets = ios, time.Now, &secretSet{}
		o.Store = func() (*store.Store, error) { return st, nil }
		o.Client = func(s auth.APISource, _ *auth.DPoPKey) (*http.Client, error) {
			return auth.NewAPIClient(auth.APIOptions{Source: s})
		}
		o.Target = rs.URL() + o.Target
		err := apiRun(context.Background(), &o)
		return out.String(), err
	}
}

// --paginate follows the Link header through three pages: their arrays
// come out as one, with --jq one stream, and every page was asked once.
func TestAPIPaginateLinkHeader(t *testing.T) {
	t.Parallel()
	rs, run := pagedAPI(t)
	out, err := run(apiOptions{Target: "/test/pages?pages=3&per=2", Paginate: true})
	if err != nil {
		t.Fatal(err)
	}
	var items []authtest.PageItem
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("not one JSON array: %v\n%s", err, out)
	}
	if len(items) != 6 || items[0].ID != 0 || items[5].ID != 5 {
		t.Fatalf("items %+v, want ids 0 to 5", items)
	}
	if n := rs.Count("accepted"); n != 3 {
		t.Errorf("%d requests accepted, want 3 (one a page)", n)
	}

	out, err = run(apiOptions{Target: "/test/pages?pages=3&per=2", Paginate: true, JQ: ".[].name"})
	if want := "item-000\nitem-001\nitem-002\nitem-003\nitem-004\nitem-005\n"; err != nil || out != want {
		t.Fatalf("--jq over the pages: %q, %v; want %q", out, err, want)
	}
	// An empty last page, and a single page, are still one array.
	out, err = run(apiOptions{Target: "/test/pages?pages=1&per=1", Paginate: true, JQ: "length"})
	if err != nil || out != "1\n" {
		t.Fatalf("one page: %q, %v", out, err)
	}
	out, err = run(apiOptions{Target: "/test/pages?pages=2&per=0", Paginate: true})
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty pages: %q, %v", out, err)
	}
}

// --paginate-next reads the next page from the body: a cursor set as a
// query parameter, or a URL.
func TestAPIPaginateNextFromBody(t *testing.T) {
	t.Parallel()
	_, run := pagedAPI(t)
	for _, next := range []string{"{cursor: .next_cursor}", ".next"} {
		out, err := run(apiOptions{Target: "/test/pages?body&pages=3&per=2", PaginateNext: next, Paginate: true, JQ: ".items[].id"})
		if want := "0\n1\n2\n3\n4\n5\n"; err != nil || out != want {
			t.Errorf("--paginate-next %s: %q, %v; want %q", next, out, err, want)
		}
	}
	_, err := run(apiOptions{Target: "/test/pages?body", PaginateNext: ".items", Paginate: true})
	if err == nil || !strings.Contains(err.Error(), "give a URL, a path, or an object of query parameters") {
		t.Errorf("an array for the next page: %v", err)
	}
}

// A next link to another origin is not followed (the token would go
// there), nor one back to a page already fetched, nor more than the bound;
// what came before is printed whole.
func TestAPIPaginateRefuses(t *testing.T) {
	t.Parallel()
	rs, run := pagedAPI(t)
	other := strings.Replace(rs.URL(), "127.0.0.1", "localhost", 1) + "/test/pages?page=1"
	for _, tc := range []struct {
		name, target, want string
		max                int
	}{
		{"another host", "/test/pages?pages=2&next=" + other, "page 2's next link goes to http://localhost:", 0},
		{"a loop", "/test/pages?page=1&pages=3&loop", "page 3's next link leads back to page 1", 0},
		{"the bound", "/test/pages?pages=5", "stopped after 2 pages", 2},
	} {
		before := rs.Count("requests")
		out, err := run(apiOptions{Target: tc.target, Paginate: true, MaxPages: tc.max})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || exitCode(err) != exitFailure {
			t.Errorf("%s: %v (exit %d), want one line with %q, exit 1", tc.name, err, exitCode(err), tc.want)
		}
		var items []authtest.PageItem
		if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) == 0 {
			t.Errorf("%s: the pages before are not one JSON array: %v\n%s", tc.name, err, out)
		}
		pages := len(items) / 2
		if got := rs.Count("requests") - before; got != pages {
			t.Errorf("%s: %d requests for %d pages", tc.name, got, pages)
		}
	}
	if _, err := run(apiOptions{Target: "/test/pages", Paginate: true, Method: "POST"}); exitCode(err) != exitUsage {
		t.Errorf("--paginate with POST: %v, want usage", err)
	}
}
