package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
//	apiserver start [op] [nonce] [aud=NAME]  start it ($API_URL); op: trusting oidc-provider ($OP_ISSUER);
//	                           nonce: DPoP proofs need the server's nonce;
//	                           aud=NAME: taking only tokens whose aud names NAME
//	apiserver refuse N         answer the next N requests 401 invalid_token
//	apiserver count NAME N     assert a count (requests, accepted, refused, introspections, dpop)
//	apiserver revoke FILE [op] revoke the access token in FILE at the realm (RFC 7009)
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
		cfg := authtest.ResourceConfig{ClientID: scriptClient, ClientSecret: r.clientSecret}
		r.mu.Lock()
		cfg.Issuer = r.srv.Issuer()
		r.mu.Unlock()
		for _, opt := range args[1:] {
			switch opt {
			case "op":
				cfg = authtest.ResourceConfig{Issuer: ts.Getenv("OP_ISSUER"), ClientID: ts.Getenv("OP_CLIENT_ID"), ClientSecret: ts.Getenv("OP_CLIENT_SECRET"), DPoPNonce: cfg.DPoPNonce, Audience: cfg.Audience}
			case "nonce":
				cfg.DPoPNonce = true
			default:
				aud, ok := strings.CutPrefix(opt, "aud=")
				if !ok {
					ts.Fatalf("apiserver start: unknown option %q (op, nonce, aud=NAME)", opt)
				}
				cfg.Audience = aud
			}
		}
		rs = authtest.NewResourceServer(cfg)
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
		endpoint := r.srv.Issuer() + "/protocol/openid-connect/revoke"
		r.mu.Unlock()
		id, secret := scriptClient, r.clientSecret
		if len(args) > 2 && args[2] == "op" {
			id, secret = ts.Getenv("OP_CLIENT_ID"), ts.Getenv("OP_CLIENT_SECRET")
			resp, err := http.Get(ts.Getenv("OP_ISSUER") + "/.well-known/openid-configuration")
			ts.Check(err)
			var doc struct {
				Revocation string `json:"revocation_endpoint"`
			}
			ts.Check(json.NewDecoder(resp.Body).Decode(&doc))
			resp.Body.Close()
			endpoint = doc.Revocation
		}
		resp, err := http.PostForm(endpoint, url.Values{"token": {tok}, "client_id": {id}, "client_secret": {secret}})
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

// childSocketToken is a job that outlives its token: it asks
// $SHIPKEY_SOCKET for a token (with QUERY added to min_valid=1), waits until
// that token has expired (at most 10 s), asks again, and calls URL with the
// second token. It prints the socket's path, whether the two tokens differ
// and the API's status.
//
//	sockettoken URL [QUERY]
func childSocketToken() {
	sock := os.Getenv("SHIPKEY_SOCKET")
	fmt.Println("socket:", sock)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	query := "min_valid=1"
	if len(os.Args) > 2 {
		query += "&" + os.Args[2]
	}
	get := func() tokenDoc {
		resp, err := c.Get("http://shipkey/v1/token?" + query)
		if err != nil {
			fmt.Println("socket error:", err)
			os.Exit(1)
		}
		defer resp.Body.Close()
		var d tokenDoc
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&d) != nil {
			fmt.Println("socket answered", resp.Status)
			os.Exit(1)
		}
		return d
	}
	first := get()
	exp, err := time.Parse(time.RFC3339, first.ExpiresAt)
	if err != nil {
		fmt.Println("no expiry:", first.ExpiresAt)
		os.Exit(1)
	}
	time.Sleep(min(time.Until(exp)+500*time.Millisecond, 10*time.Second))
	second := get()
	fmt.Println("fresh:", second.AccessToken != first.AccessToken)
	fmt.Println("audience:", second.Audience)
	req, _ := http.NewRequest(http.MethodGet, os.Args[1], nil)
	req.Header.Set("Authorization", "Bearer "+second.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println("api error:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	fmt.Println("api:", resp.StatusCode)
}

// cmdSocketGone asserts that the socket named on a "socket: PATH" line of
// FILE, and its directory, no longer exist.
//
//	socketgone FILE
func cmdSocketGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: socketgone FILE")
	}
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if p, ok := strings.CutPrefix(line, "socket: "); ok {
			for _, q := range []string{p, filepath.Dir(p)} {
				if _, err := os.Lstat(q); !errors.Is(err, fs.ErrNotExist) {
					ts.Fatalf("%s is still there (%v)", q, err)
				}
			}
			return
		}
	}
	ts.Fatalf("%s names no socket", args[0])
}

// childEnvTokenAPI calls URL with $SHIPKEY_TOKEN as its bearer token and
// prints the API's status.
//
//	envtokenapi URL
func childEnvTokenAPI() {
	req, _ := http.NewRequest(http.MethodGet, os.Args[1], nil)
	req.Header.Set("Authorization", "Bearer "+os.Getenv("SHIPKEY_TOKEN"))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		fmt.Println("api error:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	fmt.Println("api:", resp.StatusCode)
}
