package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// credentialRequest is a request that carries a credential everywhere one
// can hide: headers by name and by value, the URL's user and query, the
// body's fields.
func credentialRequest() Request {
	return Request{Method: "POST", URL: "https://alice:hunter2@api.example.com/v1/shipments?access_token=tok-in-query&page=2&api_key=k-in-query",
		Headers: []string{
			"X-Trace: abc",
			"Cookie: session=cookie-value",
			"X-Api-Key: api-key-value",
			"Proxy-Authorization: Basic cHJveHk6cGFzcw==",
			"DPoP: dpop-proof-value",
			"X-Forwarded-Thing: Bearer bearer-value-123456",
			"X-Client-Secret: client-secret-value",
			"X-Jwt: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
		},
		Body: `{"ref":"A1","user":{"password":"body-password"}}`}
}

// credentialValues are the values of credentialRequest that must never be
// kept.
var credentialValues = []string{"hunter2", "tok-in-query", "k-in-query", "cookie-value", "api-key-value", "cHJveHk6cGFzcw", "dpop-proof-value",
	"bearer-value-123456", "client-secret-value", "eyJhbGciOiJSUzI1NiJ9", "body-password"}

// The history survives a restart (a new RequestHistory on the same file,
// as a new process), newest first, a repeat not kept twice; saved
// requests are kept by name; the file is 0600 and holds no credential.
func TestRequestHistorySurvivesARestartWithoutCredentials(t *testing.T) {
	t.Parallel()
	c := newClock()
	path := filepath.Join(t.TempDir(), "state", RequestsFile)
	h := NewRequestHistory(path, c.Now)
	for i := range 3 {
		c.Advance(time.Minute)
		if _, err := h.Record("demo", Request{Method: "GET", URL: fmt.Sprintf("/v1/shipments/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(time.Minute)
	kr, err := h.Record("demo", credentialRequest())
	if err != nil {
		t.Fatal(err)
	}
	got := kr.History[0]
	if got.URL != "https://api.example.com/v1/shipments?page=2" || strings.Join(got.Headers, "|") != "X-Trace: abc" || got.Body != "" {
		t.Fatalf("kept %+v", got)
	}
	for _, want := range []string{"the Cookie header", "the X-Api-Key header", "the URL's user information", "the query parameter access_token", "the body (it holds a credential-like field)"} {
		if !strings.Contains(strings.Join(got.LeftOut, "; "), want) {
			t.Errorf("left out %q, missing %q", got.LeftOut, want)
		}
	}
	c.Advance(time.Minute)
	if _, err := h.Record("demo", Request{Method: "GET", URL: "/v1/shipments/1"}); err != nil { // again: moved up
		t.Fatal(err)
	}
	if _, err := h.Save("demo", Request{Name: "create", Method: "POST", URL: "/v1/shipments", Body: `{"ref":"A1"}`, Headers: []string{"Authorization: Bearer x-saved-token"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Record("staging", Request{Method: "DELETE", URL: "/v1/shipments/7"}); err != nil {
		t.Fatal(err)
	}

	all, err := NewRequestHistory(path, c.Now).Load() // a new process
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, q := range all["demo"].History {
		urls = append(urls, q.URL)
	}
	if want := "/v1/shipments/1 https://api.example.com/v1/shipments?page=2 /v1/shipments/2 /v1/shipments/0"; strings.Join(urls, " ") != want {
		t.Fatalf("history %q, want %q", urls, want)
	}
	if s := all["demo"].Saved; len(s) != 1 || s[0].Name != "create" || s[0].Body != `{"ref":"A1"}` || len(s[0].Headers) != 0 {
		t.Fatalf("saved %+v", s)
	}
	if h := all["staging"].History; len(h) != 1 || h[0].Method != "DELETE" {
		t.Fatalf("staging %+v", h)
	}
	requireNoCredentialOnDisk(t, filepath.Dir(path), append(credentialValues, "x-saved-token"))
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("requests.json: %v, mode %v", err, fi.Mode())
	}
}

// requireNoCredentialOnDisk fails when a file under dir holds one of
// values, or any Authorization-like header.
func requireNoCredentialOnDisk(t *testing.T, dir string, values []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, v := range append(values, "Authorization:", "Cookie:", "X-Api-Key:", "Bearer ", "password") {
			if strings.Contains(string(data), v) {
				t.Errorf("%s holds %q:\n%s", p, v, data)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The history keeps the newest MaxRequestHistory per key, bodies up to
// MaxRequestBody (a larger one is left out, and said).
func TestRequestHistoryBounds(t *testing.T) {
	t.Parallel()
	c := newClock()
	h := NewRequestHistory(filepath.Join(t.TempDir(), RequestsFile), c.Now)
	var kr *KeyRequests
	var err error
	for i := range MaxRequestHistory + 7 {
		c.Advance(time.Second)
		if kr, err = h.Record("demo", Request{Method: "GET", URL: fmt.Sprint("/v1/", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(kr.History) != MaxRequestHistory || kr.History[0].URL != fmt.Sprint("/v1/", MaxRequestHistory+6) || kr.History[MaxRequestHistory-1].URL != "/v1/7" {
		t.Fatalf("%d kept, newest %q, oldest %q", len(kr.History), kr.History[0].URL, kr.History[len(kr.History)-1].URL)
	}
	kr, err = h.Record("demo", Request{Method: "POST", URL: "/big", Body: `"` + strings.Repeat("x", MaxRequestBody) + `"`})
	if err != nil {
		t.Fatal(err)
	}
	if q := kr.History[0]; q.Body != "" || len(q.LeftOut) != 1 || !strings.Contains(q.LeftOut[0], "over 16.0 KiB") {
		t.Fatalf("a large body: %d bytes kept, left out %q", len(q.Body), q.LeftOut)
	}
	body := `"` + strings.Repeat("x", MaxRequestBody-2) + `"`
	if kr, err = h.Record("demo", Request{Method: "POST", URL: "/fits", Body: body}); err != nil || kr.History[0].Body != body {
		t.Fatalf("a body of 16 KiB was not kept: %v", err)
	}
}

// A damaged file is moved aside, said in one error naming both places;
// the history starts again and the next write works.
func TestRequestHistoryDamagedFileMovedAside(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{"not JSON": "{\"version\":1,\"keys\":{", "other version": `{"version":7,"keys":{}}`} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, RequestsFile)
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			h := NewRequestHistory(path, newClock().Now)
			all, err := h.Load()
			if !errors.Is(err, ErrRequestsDamaged) || len(all) != 0 || all == nil {
				t.Fatalf("Load: %v, %v", all, err)
			}
			if msg := err.Error(); strings.Count(msg, "\n") > 0 || !strings.Contains(msg, "moved aside to ") || !strings.Contains(msg, RequestsFile+".damaged-20260301T120000Z") {
				t.Fatalf("error %q", msg)
			}
			aside, err := os.ReadFile(path + ".damaged-20260301T120000Z")
			if err != nil || string(aside) != data {
				t.Fatalf("the damaged file was not kept aside: %v", err)
			}
			kr, err := h.Record("demo", Request{Method: "GET", URL: "/v1"})
			if err != nil || len(kr.History) != 1 {
				t.Fatalf("Record after the damage: %v, %+v", err, kr)
			}
			if _, err := h.Load(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Saved requests are replaced by name and forgotten by name; a history
// entry is forgotten by its time.
func TestRequestHistorySaveAndForget(t *testing.T) {
	t.Parallel()
	c := newClock()
	h := NewRequestHistory(filepath.Join(t.TempDir(), RequestsFile), c.Now)
	if _, err := h.Save("demo", Request{Name: "  ", Method: "GET", URL: "/a"}); err == nil {
		t.Fatal("a blank name was taken")
	}
	if _, err := h.Save("demo", Request{Name: "list", Method: "GET", URL: "/a"}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	kr, err := h.Save("demo", Request{Name: "list", Method: "GET", URL: "/b"})
	if err != nil || len(kr.Saved) != 1 || kr.Saved[0].URL != "/b" {
		t.Fatalf("%v %+v", err, kr)
	}
	_, _ = h.Record("demo", Request{Method: "GET", URL: "/c"})
	kr, _ = h.Record("demo", Request{Method: "GET", URL: "/d"}) // at the same time
	if kr, err = h.Forget("demo", kr.History[1]); err != nil || len(kr.History) != 1 || kr.History[0].URL != "/d" || len(kr.Saved) != 1 {
		t.Fatalf("%v %+v", err, kr)
	}
	if kr, err = h.Forget("demo", Request{Name: "list"}); err != nil || len(kr.Saved) != 0 {
		t.Fatalf("%v %+v", err, kr)
	}
}

// CleanRequest keeps what carries no credential as it is.
func TestCleanRequestKeepsTheRest(t *testing.T) {
	t.Parallel()
	q := Request{Method: "PATCH", URL: "https://api.example.com/v1/shipments?page=2&sort=ref#top", Audience: "billing",
		Headers: []string{"X-Trace: abc", "Content-Type: application/json", "If-Match: \"v1\""}, Body: "{\n  \"ref\": \"A1\"\n}"}
	if got := CleanRequest(q); !got.Same(q) || len(got.LeftOut) != 0 {
		t.Fatalf("CleanRequest changed %+v to %+v", q, got)
	}
	for _, c := range []struct{ body, left string }{
		{"grant_type=password&username=u&password=p", "credential-like"},
		{`[{"nested":{"client_secret":"s"}}]`, "credential-like"},
		{"text with eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.x inside", "credential-like"},
	} {
		if got := CleanRequest(Request{Method: "POST", URL: "/x", Body: c.body}); got.Body != "" || !strings.Contains(strings.Join(got.LeftOut, ""), c.left) {
			t.Errorf("body %q: kept %q, left out %q", c.body, got.Body, got.LeftOut)
		}
	}
}

// A renamed key keeps its history (it is kept by label); a store with no
// history gets no file from a rename, and a damaged one is left in place
// for the app to say.
func TestRequestHistoryFollowsARename(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", false)
	e.create(s, "dev", false)
	if err := s.Rename("dev", "dev2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, RequestsFile+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a rename with no history made the lock file: %v", err)
	}
	if _, err := s.Requests().Record("prod", Request{Method: "GET", URL: "/v1/a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename("prod", "production"); err != nil {
		t.Fatal(err)
	}
	all, err := s.Requests().Load()
	if err != nil || all["prod"] != nil || all["production"] == nil || all["production"].History[0].URL != "/v1/a" {
		t.Fatalf("after the rename: %v %+v", err, all)
	}
	path := filepath.Join(e.stateDir, RequestsFile)
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename("production", "prod"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "{" {
		t.Fatalf("the damaged file was changed by a rename: %v %q", err, data)
	}
}

// A history that cannot be read and was not moved aside (here: larger than
// the reader takes) is not written over: a new request is refused, in one
// line, and every key's requests stay in the file.
func TestRequestHistoryUnreadableNotOverwritten(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), RequestsFile)
	h := NewRequestHistory(path, newClock().Now)
	for i := range 5 {
		if _, err := h.Record(fmt.Sprintf("key%d", i), Request{Method: "GET", URL: "/v1/shipments"}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h.limit = int64(len(before)) - 1
	_, err = h.Record("key9", Request{Method: "GET", URL: "/v1/other"})
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Record on a history it cannot read: %v, want one line", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("the history was written over:\n%s", after)
	}
}
