package auth_test

// Tests of the grants against a real third-party OpenID provider: the npm
// package oidc-provider, pinned in testdata/oidcprovider/package-lock.json
// and driven by testdata/oidcprovider/server.js. Its development login and
// consent pages are completed by formBrowser, a few lines of HTTP that fill
// and submit each page's form as a person would.
//
// Setup: npm ci --prefix auth/testdata/oidcprovider

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopOP()
	os.Exit(code)
}

// openIDProvider is the running oidc-provider, shared by the tests of the
// package: it starts once, on first use.
type openIDProvider struct {
	Issuer                 string
	ClientID, ClientSecret string
	PublicClientID         string
}

var (
	opOnce  sync.Once
	op      *openIDProvider
	opErr   string
	opStop  func()
	opMutex sync.Mutex
)

func stopOP() {
	opMutex.Lock()
	defer opMutex.Unlock()
	if opStop != nil {
		opStop()
	}
}

// startOP returns the shared provider, starting it on first use; it skips
// (fails under CI=true) when node or the package is missing.
func startOP(t *testing.T) *openIDProvider {
	t.Helper()
	opOnce.Do(func() { op, opErr = launchOP() })
	if op == nil {
		if os.Getenv("CI") == "true" || !strings.HasPrefix(opErr, "missing:") {
			t.Fatal(opErr)
		}
		t.Skip(opErr)
	}
	return op
}

func launchOP() (*openIDProvider, string) {
	dir := filepath.Join("testdata", "oidcprovider")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "oidc-provider", "package.json"))
	}
	if err != nil {
		return nil, "missing: the real OpenID provider needs node and its package: run `npm ci --prefix auth/testdata/oidcprovider` (" + err.Error() + ")"
	}
	p := &openIDProvider{ClientID: "shipping-api", ClientSecret: "op-" + fmt.Sprint(time.Now().UnixNano()), PublicClientID: "shipping-cli"}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "server.js"))
	cmd.Env = append(os.Environ(), "SHIPKEY_OP_CLIENT_ID="+p.ClientID, "SHIPKEY_OP_CLIENT_SECRET="+p.ClientSecret,
		"SHIPKEY_OP_PUBLIC_CLIENT_ID="+p.PublicClientID)
	cmd.WaitDelay = 5 * time.Second
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err.Error()
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err.Error()
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, "start node: " + err.Error()
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	opMutex.Lock()
	opStop = func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		cancel()
		<-exited
	}
	opMutex.Unlock()
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "http://127.0.0.1:") {
			return nil, fmt.Sprintf("server.js printed %q, want its issuer; stderr: %s", line, stderr.String())
		}
		p.Issuer = line
	case <-exited:
		return nil, "server.js exited before printing its issuer; stderr: " + stderr.String()
	case <-time.After(60 * time.Second):
		return nil, "server.js printed no issuer in time; stderr: " + stderr.String()
	}
	return p, ""
}

// formBrowser completes oidc-provider's pages as a person would: it fills
// each page's first form (login and password, the user code's confirmation,
// consent) and submits it, following redirects with cookies, until a page
// without a form (the device's success page, or shipkey's "you can close
// this tab" page after the redirect to the loopback callback). With deny it
// presses the page's abort instead.
type formBrowser struct {
	deny bool
}

var (
	formRe   = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`)
	inputRe  = regexp.MustCompile(`(?is)<(?:input|button)\b([^>]*)>`)
	attrRe   = regexp.MustCompile(`(?is)([a-z_-]+)="([^"]*)"`)
	abortRe  = regexp.MustCompile(`(?is)href="([^"]*/abort)"`)
	titleTag = regexp.MustCompile(`(?is)<title>(.*?)</title>`)
)

func attrs(s string) map[string]string {
	m := map[string]string{}
	for _, a := range attrRe.FindAllStringSubmatch(s, -1) {
		m[strings.ToLower(a[1])] = html.UnescapeString(a[2])
	}
	return m
}

// visit opens start and walks the pages; it returns the last page's title.
func (b formBrowser) visit(start string) (string, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(start)
	for step := 0; ; step++ {
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		page, base := string(body), resp.Request.URL
		title := ""
		if m := titleTag.FindStringSubmatch(page); m != nil {
			title = strings.TrimSpace(m[1])
		}
		if step > 8 {
			return title, fmt.Errorf("still at %q after %d pages", title, step)
		}
		f := formRe.FindStringSubmatch(page)
		if b.deny {
			if m := abortRe.FindStringSubmatch(page); m != nil {
				u, _ := base.Parse(html.UnescapeString(m[1]))
				resp, err = c.Get(u.String())
				continue
			}
		}
		if f == nil {
			return title, nil
		}
		fa := attrs(f[1])
		form := url.Values{}
		for _, in := range inputRe.FindAllStringSubmatch(f[2], -1) {
			a := attrs(in[1])
			switch name := a["name"]; {
			case name == "":
			case name == "login":
				form.Set(name, "alice")
			case name == "password":
				form.Set(name, "any password")
			case name == "abort":
				if b.deny {
					form.Set(name, a["value"])
				}
			default:
				form.Set(name, a["value"])
			}
		}
		action, _ := base.Parse(fa["action"])
		resp, err = c.PostForm(action.String(), form)
	}
}

// browse runs the browser on the prompt's URL in the background, as a
// $BROWSER would; its outcome is reported on the returned channel.
func browse(b formBrowser, edit func(string) string) (auth.Prompter, <-chan error) {
	done := make(chan error, 1)
	return func(p auth.Prompt) {
		u := p.OpenURL()
		if edit != nil {
			u = edit(u)
		}
		go func() { _, err := b.visit(u); done <- err }()
	}, done
}

func opClient(t *testing.T) *auth.Client {
	t.Helper()
	c, err := auth.NewClient(auth.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenIDProviderClientCredentials(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID}
	ts, err := c.Obtain(opCtx(t), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientSecret: p.ClientSecret})
	if err != nil {
		t.Fatal(err)
	}
	if ts.AccessToken == "" || ts.RefreshToken != "" || ts.AccessExpiresAt.IsZero() {
		t.Fatalf("token set %+v", ts.Redacted())
	}
	res, err := c.EndSession(opCtx(t), conn, p.ClientSecret, ts)
	if err != nil || res.Via != "revocation" {
		t.Fatalf("logout: %+v, %v", res, err)
	}
	_, err = c.Obtain(opCtx(t), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientSecret: "wrong-secret-123"})
	if auth.KindOf(err) != auth.KindInvalidClient {
		t.Fatalf("wrong secret: %v", err)
	}
	assertNoSecrets(t, err, p.ClientSecret, "wrong-secret-123")
}

func TestOpenIDProviderDeviceCode(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID, Scopes: []string{"openid"}}
	t.Run("approved, refreshed, logged out", func(t *testing.T) {
		t.Parallel()
		prompt, browsed := browse(formBrowser{}, nil)
		ts, err := c.Obtain(opCtx(t), auth.GrantDeviceCode, auth.Request{Conn: conn, ClientSecret: p.ClientSecret, Prompt: prompt})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-browsed; err != nil {
			t.Fatal(err)
		}
		if ts.AccessToken == "" || ts.RefreshToken == "" {
			t.Fatalf("token set %+v", ts.Redacted())
		}
		ts2, err := c.Refresh(opCtx(t), conn, p.ClientSecret, ts)
		if err != nil || ts2.AccessToken == ts.AccessToken {
			t.Fatalf("refresh: %v", err)
		}
		if _, err := c.EndSession(opCtx(t), conn, p.ClientSecret, ts2); err != nil {
			t.Fatalf("logout: %v", err)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		prompt, _ := browse(formBrowser{deny: true}, nil)
		_, err := c.Obtain(opCtx(t), auth.GrantDeviceCode, auth.Request{Conn: conn, ClientSecret: p.ClientSecret, Prompt: prompt})
		if auth.KindOf(err) != auth.KindAccessDenied {
			t.Fatalf("denied device request: %v", err)
		}
		assertNoSecrets(t, err, p.ClientSecret)
	})
}

func TestOpenIDProviderAuthCode(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID, Scopes: []string{"openid"}}
	public := auth.Connection{Issuer: p.Issuer, ClientID: p.PublicClientID, Scopes: []string{"openid"}, PublicClient: true}
	for name, tc := range map[string]struct {
		conn   auth.Connection
		secret string
	}{"confidential": {conn, p.ClientSecret}, "public": {public, ""}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prompt, browsed := browse(formBrowser{}, nil)
			ts, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: tc.conn, ClientSecret: tc.secret, Prompt: prompt, Wait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-browsed; err != nil {
				t.Fatal(err)
			}
			if ts.AccessToken == "" || ts.IDToken == "" {
				t.Fatalf("token set %+v", ts.Redacted())
			}
		})
	}
	t.Run("wrong PKCE verifier refused", func(t *testing.T) {
		t.Parallel()
		sum := sha256.Sum256([]byte("an attacker's verifier, long enough to be one: 0123456789abcdef"))
		inject := func(u string) string {
			pu, _ := url.Parse(u)
			q := pu.Query()
			q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
			pu.RawQuery = q.Encode()
			return pu.String()
		}
		prompt, _ := browse(formBrowser{}, inject)
		_, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: conn, ClientSecret: p.ClientSecret, Prompt: prompt, Wait: time.Minute})
		var ae *auth.Error
		if err == nil || !asAuthError(err, &ae) || ae.Code != "invalid_grant" {
			t.Fatalf("an injected code was not refused: %v", err)
		}
		assertNoSecrets(t, err, p.ClientSecret)
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		prompt, _ := browse(formBrowser{deny: true}, nil)
		_, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: conn, ClientSecret: p.ClientSecret, Prompt: prompt, Wait: time.Minute})
		if auth.KindOf(err) != auth.KindAccessDenied {
			t.Fatalf("denied sign-in: %v", err)
		}
	})
	t.Run("no browser comes back", func(t *testing.T) {
		t.Parallel()
		_, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: conn, ClientSecret: p.ClientSecret, Prompt: func(auth.Prompt) {}, Wait: time.Second})
		if auth.KindOf(err) != auth.KindExpired {
			t.Fatalf("timed-out wait: %v", err)
		}
	})
}

func asAuthError(err error, target **auth.Error) bool { return errors.As(err, target) }
