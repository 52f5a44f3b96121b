package cli

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/shipkey/shipkey/internal/optest"
)

// childBrowser is a scripted $BROWSER: it completes authtest's device or
// authorization page for the URL it is given, as a person would, with
// $USERNAME and $PASSWORD, and follows the redirect back to shipkey's
// loopback callback. $BROWSER_ACTION says what the person does:
//
//	approve      sign in and allow (the default)
//	deny         press Deny
//	ignore       nothing (shipkey's wait runs out)
//	interrupt    ctrl+c: SIGINT to shipkey (its parent)
//	inject-pkce  an attacker's code: the authorization is completed with
//	             another PKCE challenge, and its code handed to shipkey,
//	             which the server must refuse at the exchange
//	twice        the one-time start URL is fetched twice (another local
//	             user who read it got there first), then signs in
//
// A one-time start URL (http://127.0.0.1:PORT/start/…) is fetched once for
// the authorization URL it redirects to, as a browser would.
// Each visit is appended to $BROWSER_LOG (when set): "visit <action> <status>";
// the browser's arguments to $BROWSER_ARGS (when set), one line per run.
func childBrowser() {
	target := os.Args[len(os.Args)-1]
	logArgs()
	action := os.Getenv("BROWSER_ACTION")
	if action == "" {
		action = "approve"
	}
	status := "-"
	defer func() { logVisit(action, status) }()
	switch action {
	case "ignore":
		return
	case "interrupt":
		_ = signalPid(os.Getppid(), syscall.SIGINT)
		return
	}
	if action == "twice" {
		_, _ = startTarget(target)
		action = "approve"
	}
	u, err := startTarget(target)
	if err != nil {
		status = "start " + err.Error()
		return
	}
	if action == "inject-pkce" {
		injectChallenge(u)
		action = "approve"
	}
	form := url.Values{"username": {os.Getenv("USERNAME")}, "password": {os.Getenv("PASSWORD")}, "action": {action}}
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Post(u.String(), "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		status = "error"
		os.Exit(91)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	status = fmt.Sprint(resp.StatusCode)
}

// startTarget is where target leads: the Location of a one-time start
// URL's redirect (fetched once), else target itself.
func startTarget(target string) (*url.URL, error) {
	u, err := url.Parse(target)
	if err != nil || !strings.HasPrefix(u.Path, "/start/") {
		return u, err
	}
	c := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(target)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("%d", resp.StatusCode)
	}
	return url.Parse(resp.Header.Get("Location"))
}

// logArgs appends the browser's arguments to $BROWSER_ARGS when it is set.
func logArgs() {
	path := os.Getenv("BROWSER_ARGS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintln(f, strings.Join(os.Args[1:], " "))
		f.Close()
	}
}

// logVisit appends "visit <action> <status>" to $BROWSER_LOG when it is set.
func logVisit(action, status string) {
	path := os.Getenv("BROWSER_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintf(f, "visit %s %s\n", action, status)
		f.Close()
	}
}

// injectChallenge replaces the authorization URL's PKCE challenge with an
// attacker's: the code the server then issues is bound to a verifier
// shipkey does not hold.
func injectChallenge(u *url.URL) {
	q := u.Query()
	sum := sha256.Sum256([]byte("an attacker's verifier, not shipkey's"))
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	u.RawQuery = q.Encode()
}

// childOPBrowser is the scripted $BROWSER for the real OpenID provider
// (internal/optest): it completes oidc-provider's device, login and consent
// pages through optest.Browser, following the redirect back to shipkey's
// loopback callback. $BROWSER_ACTION is approve (the default), deny (the
// pages' abort), ignore or inject-pkce, as for childBrowser; it signs in
// as $USERNAME (alice when unset); the visit is
// logged to $BROWSER_LOG with "ok" or "error" for its status.
func childOPBrowser() {
	action := os.Getenv("BROWSER_ACTION")
	if action == "" {
		action = "approve"
	}
	status := "-"
	defer func() { logVisit(action, status) }()
	if action == "ignore" {
		return
	}
	logArgs()
	u, err := startTarget(os.Args[len(os.Args)-1])
	if err != nil {
		status = "error"
		return
	}
	if action == "inject-pkce" {
		injectChallenge(u)
	}
	status = "ok"
	b := optest.Browser{Deny: action == "deny", Login: os.Getenv("USERNAME")}
	if pemCA, err := os.ReadFile(os.Getenv("SHIPKEY_CA_FILE")); err == nil {
		// A verification URL at the provider's mTLS listener.
		b.Roots = x509.NewCertPool()
		b.Roots.AppendCertsFromPEM(pemCA)
	}
	if _, _, err := b.Visit(u.String()); err != nil {
		status = "error"
	}
}
