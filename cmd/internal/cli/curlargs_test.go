package cli

import (
	"errors"
	"strings"
	"testing"
)

// The method and the one URL of curl's arguments, as curl itself reads
// them; arguments that do not tell them are refused for a DPoP proof, and
// a path goes under the key's api_url.
func TestCurlTarget(t *testing.T) {
	t.Parallel()
	base := func(p string) (string, error) { return "https://api.example.com/v1" + p, nil }
	for _, tc := range []struct {
		args         string
		method, url  string
		refused      string // part of the refusal
		rewrittenArg string // the args after resolving
	}{
		{args: "-sS https://a.example/x", method: "GET", url: "https://a.example/x"},
		{args: "-sS --data-binary @- -H Content-Type:application/json https://a.example/x", method: "POST", url: "https://a.example/x"},
		{args: "-XPATCH -d {} https://a.example/x", method: "PATCH", url: "https://a.example/x"},
		{args: "-sSX DELETE https://a.example/x?y=1", method: "DELETE", url: "https://a.example/x?y=1"},
		{args: "-I https://a.example/x", method: "HEAD", url: "https://a.example/x"},
		{args: "-G -d q=1 https://a.example/x", method: "GET", url: "https://a.example/x"},
		{args: "-T file.bin https://a.example/x", method: "PUT", url: "https://a.example/x"},
		{args: "--json {} https://a.example/x", method: "POST", url: "https://a.example/x"},
		{args: "-F f=@a.pdf https://a.example/x", method: "POST", url: "https://a.example/x"},
		{args: "-e https://referer.example -o out.json -x http://proxy:3128 https://a.example/x", method: "GET", url: "https://a.example/x"},
		{args: "-H X:1 -sSo out.json https://a.example/x", method: "GET", url: "https://a.example/x"},
		{args: "-sS /shipments?page=2", method: "GET", url: "https://api.example.com/v1/shipments?page=2", rewrittenArg: "-sS https://api.example.com/v1/shipments?page=2"},
		{args: "-g https://a.example/x[1]", method: "GET", url: "https://a.example/x[1]"},
		{args: "https://a.example/x https://a.example/y", refused: "2 URLs"},
		{args: "-sS", refused: "no URL"},
		{args: "https://a.example/x[1-3]", refused: "glob"},
		{args: "https://a.example/x -: https://a.example/y", refused: "several requests"},
		{args: "-K more.cfg https://a.example/x", refused: "-K reads curl options"},
		{args: "--url https://a.example/x", refused: "--url"},
		{args: "a.example/x", refused: "not a full http(s) URL"},
		{args: "--some-new-option value https://a.example/x", refused: "2 URLs"}, // unknown options fail safe
		// A proof cannot follow a redirect, nor sign for another target.
		{args: "-L https://a.example/x", refused: "cannot follow a redirect"},
		{args: "-sSL https://a.example/x", refused: "cannot follow a redirect"},
		{args: "--location https://a.example/x", refused: "cannot follow a redirect"},
		{args: "--location-trusted https://a.example/x", refused: "cannot follow a redirect"},
		{args: "--request-target * -X OPTIONS https://a.example/x", refused: "--request-target"},
		{args: "--no-location https://a.example/x", method: "GET", url: "https://a.example/x"},
	} {
		args := strings.Fields(tc.args)
		method, url, err := curlTarget(args, base, true)
		if tc.refused != "" {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.refused) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: err = %v, want a usage error with %q", tc.args, err, tc.refused)
			}
			continue
		}
		if err != nil || method != tc.method || url != tc.url {
			t.Errorf("%s: %q %q %v, want %q %q", tc.args, method, url, err, tc.method, tc.url)
		}
		if tc.rewrittenArg != "" && strings.Join(args, " ") != tc.rewrittenArg {
			t.Errorf("%s: args became %q", tc.args, args)
		}
	}
	// Not strict (a bearer token): only a path is resolved; curl drops the
	// Authorization header itself on a redirect to another host or port.
	if _, _, err := curlTarget([]string{"-L", "https://a.example/x"}, base, false); err != nil {
		t.Errorf("bearer -L: %v", err)
	}
	args := []string{"-sS", "/x", "https://b.example/"}
	if _, _, err := curlTarget(args, base, false); err != nil || args[1] != "https://api.example.com/v1/x" {
		t.Errorf("bearer: %v %q", err, args)
	}
	// A path without api_url: the resolver's one line.
	noBase := func(string) (string, error) { return "", errors.New("no api_url") }
	if _, _, err := curlTarget([]string{"/x"}, noBase, false); err == nil || err.Error() != "no api_url" {
		t.Errorf("no api_url: %v", err)
	}
}
