package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key's api_url is set, kept in config.toml and the index (a new process
// sees it), cleared with ""; a value that is not an https base URL (or
// http to loopback) is refused in one line and nothing changes.
func TestSetAPIURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", false)

	if err := s.SetAPIURL("prod", "https://api.example.com/v1/"); err != nil {
		t.Fatal(err)
	}
	if k := mustKey(t, s, "prod"); k.APIURL != "https://api.example.com/v1" {
		t.Fatalf("APIURL = %q", k.APIURL)
	}
	data, err := os.ReadFile(filepath.Join(e.cfgDir, configFileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `api_url = 'https://api.example.com/v1'`) && !strings.Contains(string(data), `api_url = "https://api.example.com/v1"`) {
		t.Errorf("config.toml has no api_url:\n%s", data)
	}
	s.Close()
	s = e.open(Options{})
	defer s.Close()
	if k := mustKey(t, s, "prod"); k.APIURL != "https://api.example.com/v1" {
		t.Fatalf("after reopening, APIURL = %q", k.APIURL)
	}

	for _, bad := range []string{"api.example.com", "http://api.example.com", "https://api.example.com/v1?x=1", "ftp://x/", "https://u:p@api.example.com", "https://api.example.com/\x1b[2J"} {
		err := s.SetAPIURL("prod", bad)
		if err == nil || strings.ContainsAny(err.Error(), "\x1b\n") {
			t.Errorf("SetAPIURL(%q) = %v", bad, err)
		}
	}
	if k := mustKey(t, s, "prod"); k.APIURL != "https://api.example.com/v1" {
		t.Fatalf("a refused value changed APIURL to %q", k.APIURL)
	}
	if err := s.SetAPIURL("prod", "http://127.0.0.1:8080"); err != nil {
		t.Errorf("loopback http: %v", err)
	}
	if err := s.SetAPIURL("prod", ""); err != nil {
		t.Fatal(err)
	}
	if k := mustKey(t, s, "prod"); k.APIURL != "" {
		t.Fatalf("cleared APIURL = %q", k.APIURL)
	}
	if err := s.SetAPIURL("nope", "https://x.example"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetAPIURL(nope) = %v", err)
	}
	e.check(s)
}
