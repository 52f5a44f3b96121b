package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// dpopHeaders reads a token and its DPoP proof from what token or header
// --dpop-proof printed: token --json's access_token and dpop_proof, the two
// header lines of header, or token's two lines (the token, the proof).
func dpopHeaders(data string) (tok, proof string, err error) {
	var doc struct {
		AccessToken string `json:"access_token"`
		DPoPProof   string `json:"dpop_proof"`
	}
	if json.Unmarshal([]byte(data), &doc) == nil {
		return doc.AccessToken, doc.DPoPProof, nil
	}
	lines := strings.Split(strings.TrimSpace(data), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("%d lines, want 2", len(lines))
	}
	a, b := strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
	if t, ok := strings.CutPrefix(a, "Authorization: DPoP "); ok {
		p, ok := strings.CutPrefix(b, "DPoP: ")
		if !ok {
			return "", "", fmt.Errorf("second line %q is not a DPoP header", b)
		}
		return t, p, nil
	}
	return a, b, nil
}

// sendDPoP sends method url with the token (DPoP scheme) and the proof; it
// returns the status and the WWW-Authenticate and DPoP-Nonce headers.
func sendDPoP(method, url, tok, proof string) (int, string, string, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Authorization", "DPoP "+tok)
	req.Header.Set("DPoP", proof)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("DPoP-Nonce"), nil
}

// cmdDPoPSend sends a request by hand, as another tool would, with the
// token and proof in FILE (see dpopHeaders), and asserts the answer's
// status and, when given, the error code of its challenge. Sending the same
// file twice replays the proof.
//
//	dpopsend FILE METHOD URL STATUS [ERROR]
func cmdDPoPSend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 || len(args) > 5 {
		ts.Fatalf("usage: dpopsend FILE METHOD URL STATUS [ERROR]")
	}
	tok, proof, err := dpopHeaders(ts.ReadFile(args[0]))
	ts.Check(err)
	want, err := strconv.Atoi(args[3])
	ts.Check(err)
	status, challenge, _, err := sendDPoP(args[1], args[2], tok, proof)
	ts.Check(err)
	if status != want {
		ts.Fatalf("dpopsend: HTTP %d (%s), want %d", status, challenge, want)
	}
	if len(args) == 5 && !strings.Contains(challenge, `error="`+args[4]+`"`) {
		ts.Fatalf("dpopsend: WWW-Authenticate %q, want error=%q", challenge, args[4])
	}
}

// childSocketProof is a program that signs nothing itself: it asks
// $SHIPKEY_SOCKET for a token and a DPoP proof for GET URL (POST /v1/proof),
// calls URL with them, and when the API asks for a nonce asks for a proof
// carrying it and calls again; then it sends its last proof once more.
// It prints "socket: PATH", "api: STATUS", "nonce: yes|no" and
// "replay: STATUS ERROR".
//
//	socketproof URL
func childSocketProof() {
	sock, target := os.Getenv("SHIPKEY_SOCKET"), os.Args[1]
	fmt.Println("socket:", sock)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	fail := func(f string, a ...any) {
		fmt.Printf(f+"\n", a...)
		os.Exit(1)
	}
	ask := func(nonce string) (tok, proof string) {
		body, _ := json.Marshal(map[string]string{"method": "GET", "url": target, "nonce": nonce})
		resp, err := c.Post("http://shipkey/v1/proof", "application/json", bytes.NewReader(body))
		if err != nil {
			fail("socket error: %v", err)
		}
		defer resp.Body.Close()
		var d struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
			DPoPProof   string `json:"dpop_proof"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&d) != nil || d.DPoPProof == "" {
			fail("socket answered %s", resp.Status)
		}
		if d.TokenType != "DPoP" {
			fail("token_type %q", d.TokenType)
		}
		return d.AccessToken, d.DPoPProof
	}
	tok, proof := ask("")
	status, _, nonce, err := sendDPoP(http.MethodGet, target, tok, proof)
	if err != nil {
		fail("api error: %v", err)
	}
	asked := status == http.StatusUnauthorized && nonce != ""
	if asked {
		tok, proof = ask(nonce)
		if status, _, _, err = sendDPoP(http.MethodGet, target, tok, proof); err != nil {
			fail("api error: %v", err)
		}
	}
	fmt.Println("api:", status)
	fmt.Println("nonce:", map[bool]string{true: "yes", false: "no"}[asked])
	status, challenge, _, err := sendDPoP(http.MethodGet, target, tok, proof)
	if err != nil {
		fail("api error: %v", err)
	}
	code := "-"
	if _, after, ok := strings.Cut(challenge, `error="`); ok {
		code, _, _ = strings.Cut(after, `"`)
	}
	fmt.Println("replay:", status, code)
}
