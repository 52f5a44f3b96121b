package keys

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shipkey/shipkey/store"
)

// tokenCarrier stands for the API client's transport: it adds the key's
// token to every request it is given, as auth's API client does.
type tokenCarrier struct {
	sent atomic.Int32 // requests that carried the token
}

func (c *tokenCarrier) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer the-token")
	c.sent.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

// A key with an API URL sends its token to that origin only: another host,
// another port, the user@host form and a redirect elsewhere are refused
// before the token leaves, unless the host is allowed; a key without an API
// URL sends it where it is asked to.
func TestTokenGoesOnlyToTheKeysAPI(t *testing.T) {
	t.Parallel()
	var otherGot atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			otherGot.Add(1)
		}
	}))
	defer other.Close()
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, other.URL+"/page2", http.StatusFound)
		}
	}))
	defer home.Close()
	key := store.Key{Label: "prod", Definition: store.Definition{APIURL: home.URL + "/v1"}}
	otherHost := strings.TrimPrefix(other.URL, "http://")
	sameHostOtherPort := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	for _, tc := range []struct {
		name    string
		url     string
		allow   []string
		refused bool
	}{
		{"its API", home.URL + "/v1/shipments", nil, false},
		{"another port", other.URL + "/x", nil, true},
		{"another host name", sameHostOtherPort + "/x", nil, true},
		{"user@host", "http://" + strings.TrimPrefix(home.URL, "http://") + "@" + otherHost + "/x", nil, true},
		{"a redirect elsewhere", home.URL + "/redirect", nil, true},
		{"another port, allowed", other.URL + "/x", []string{otherHost}, false},
		{"a redirect to an allowed host", home.URL + "/redirect", []string{otherHost}, false},
	} {
		carrier := &tokenCarrier{}
		c := guardHosts(&http.Client{Transport: carrier}, key, tc.allow)
		before := otherGot.Load()
		resp, err := c.Get(tc.url)
		if resp != nil {
			resp.Body.Close()
		}
		var hre *HostRefusedError
		switch {
		case tc.refused && !errors.As(err, &hre):
			t.Errorf("%s: %v, want refused", tc.name, err)
		case tc.refused && (strings.Contains(hre.Error(), "\n") || !strings.Contains(hre.Error(), "--allow-host")):
			t.Errorf("%s: %q is not one line naming --allow-host", tc.name, hre.Error())
		case !tc.refused && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.refused && otherGot.Load() != before {
			t.Errorf("%s: the other host got the token", tc.name)
		}
	}

	// No API URL: no home, no guard.
	carrier := &tokenCarrier{}
	c := guardHosts(&http.Client{Transport: carrier}, store.Key{Label: "dev"}, nil)
	resp, err := c.Get(other.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if carrier.sent.Load() != 1 {
		t.Errorf("a key without api_url: %d requests sent", carrier.sent.Load())
	}
}
