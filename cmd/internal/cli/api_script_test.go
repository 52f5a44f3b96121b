package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/shipkey/shipkey/auth/authtest"
)

// apiKey is the Env.Values key of a script's *apiHolder.
type apiKey struct{}

// apiHolder is a script's resource server, once started.
type apiHolder struct{ rs *authtest.ResourceServer }

// cmdAPIServer runs and controls a resource server (authtest.ResourceServer)
// that trusts the script's realm:
//
//	apiserver start            start it ($API_URL)
//	apiserver refuse N         answer the next N requests 401 invalid_token
//	apiserver count NAME N     assert a count (requests, accepted, refused, introspections)
//	apiserver revoke FILE      revoke the access token in FILE at the realm (RFC 7009)
func cmdAPIServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: apiserver start|refuse|count|revoke ...")
	}
	r := scriptRealm(ts)
	holder := ts.Value(apiKey{}).(*apiHolder)
	rs := holder.rs
	if args[0] != "start" && rs == nil {
		ts.Fatalf("apiserver: not started")
	}
	switch args[0] {
	case "start":
		r.mu.Lock()
		issuer := r.srv.Issuer()
		r.mu.Unlock()
		rs = authtest.NewResourceServer(authtest.ResourceConfig{Issuer: issuer, ClientID: scriptClient, ClientSecret: r.clientSecret})
		ts.Defer(rs.Close)
		holder.rs = rs
		ts.Setenv("API_URL", rs.URL())
	case "refuse":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		rs.RefuseNext(n)
	case "count":
		if len(args) != 3 {
			ts.Fatalf("usage: apiserver count NAME N")
		}
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		if got := rs.Count(args[1]); got != want {
			ts.Fatalf("apiserver count %s = %d, want %d", args[1], got, want)
		}
	case "revoke":
		tok := strings.TrimSpace(ts.ReadFile(args[1]))
		r.mu.Lock()
		issuer := r.srv.Issuer()
		r.mu.Unlock()
		resp, err := http.PostForm(issuer+"/protocol/openid-connect/revoke", url.Values{
			"token": {tok}, "client_id": {scriptClient}, "client_secret": {r.clientSecret},
		})
		ts.Check(err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			ts.Fatalf("revoke: HTTP %d", resp.StatusCode)
		}
	default:
		ts.Fatalf("apiserver: unknown subcommand %q", args[0])
	}
}

// cmdBigJSON writes a JSON array of N objects to FILE.
//
//	bigjson FILE N
func cmdBigJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: bigjson FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"ref":"P%06d","weight":%d.5,"note":"ünïcode"}`, i, i%40)
	}
	b.WriteString("]\n")
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o600))
}

// cmdSameBody asserts that the resource server's echo in ECHO describes
// FILE: the same length and SHA-256.
//
//	samebody ECHO FILE
func cmdSameBody(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: samebody ECHO FILE")
	}
	var e authtest.Echo
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &e))
	data := []byte(ts.ReadFile(args[1]))
	sum := sha256.Sum256(data)
	if e.BodyBytes != int64(len(data)) || e.BodySHA256 != hex.EncodeToString(sum[:]) {
		ts.Fatalf("the body arrived as %d bytes (sha256 %s); %s has %d bytes (sha256 %x)", e.BodyBytes, e.BodySHA256, args[1], len(data), sum)
	}
}
