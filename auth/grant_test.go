package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// Every grant of the table is found by its name, and only those.
func TestGrantTable(t *testing.T) {
	t.Parallel()
	for _, name := range Grants() {
		g, err := GrantFor(name)
		if err != nil || g.Type() != name {
			t.Errorf("GrantFor(%q) = %v, %v", name, g, err)
		}
	}
	if g, err := GrantFor(""); err != nil || g.Type() != GrantPassword {
		t.Errorf("the empty grant is %v, %v; want the password grant", g, err)
	}
	if _, err := GrantFor("implicit"); KindOf(err) != KindConfig {
		t.Errorf("an unknown grant: %v", err)
	}
	unattended := map[GrantType]bool{GrantPassword: false, GrantClientCredentials: true, GrantDeviceCode: false, GrantAuthCode: false, GrantJWTBearer: true}
	for name, want := range unattended {
		g, _ := GrantFor(name)
		if got := g.Unattended(Kept{}); got != want {
			t.Errorf("%s.Unattended = %v, want %v", name, got, want)
		}
	}
	if g, _ := GrantFor(GrantPassword); !g.Unattended(Kept{Password: true}) {
		t.Error("the password grant with a remembered password must run unattended")
	}
}

func TestClientCredentialsGrant(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, func(c *authtest.Config) {
		c.Clients = append(c.Clients, authtest.Client{ID: "no-sa", Secret: "s2"})
	})
	c := cliNewClient(t, Options{Now: clock.Now})
	req := Request{Conn: cliConn(s), ClientAuth: ClientAuth{Secret: authtest.DemoClientSecret}}
	ts, err := c.Obtain(cliCtx(t), GrantClientCredentials, req)
	if err != nil {
		t.Fatal(err)
	}
	if ts.AccessToken == "" || ts.RefreshToken != "" || ts.RefreshExpirySource != RefreshExpiryUnstated {
		t.Fatalf("token set %+v: want an access token and no refresh token", ts.Redacted())
	}
	for _, basic := range []bool{false, true} {
		r := req
		r.Conn.BasicAuth = basic
		if _, err := c.Obtain(cliCtx(t), GrantClientCredentials, r); err != nil {
			t.Fatalf("basic=%v: %v", basic, err)
		}
	}
	r := req
	r.ClientAuth.Secret = "wrong"
	_, err = c.Obtain(cliCtx(t), GrantClientCredentials, r)
	cliDemoSafe(t, err, KindInvalidClient, "wrong")
	r = Request{Conn: cliConn(s), ClientAuth: ClientAuth{Secret: "s2"}}
	r.Conn.ClientID = "no-sa"
	_, err = c.Obtain(cliCtx(t), GrantClientCredentials, r)
	if e := cliDemoSafe(t, err, KindGrantNotAllowed, "s2"); !strings.Contains(e.Hint, "Service accounts") {
		t.Errorf("hint %q does not name Keycloak's switch", e.Hint)
	}
}

// deviceServer is a scripted RFC 8628 server: it records how the device
// authorization request authenticated the client and answers the polls from
// answers in order (then success).
type deviceServer struct {
	*httptest.Server
	deviceAuth atomic.Value // "form:<secret>" or "basic:<header>"
	polls      atomic.Int32
	answers    []string // error codes for the first polls
	pollTimes  chan time.Time
}

func newDeviceServer(t *testing.T, interval any, answers ...string) *deviceServer {
	d := &deviceServer{answers: answers, pollTimes: make(chan time.Time, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /realms/r/protocol/openid-connect/auth/device", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if h := r.Header.Get("Authorization"); h != "" {
			d.deviceAuth.Store("basic:" + h)
		} else {
			d.deviceAuth.Store("form:" + r.PostForm.Get("client_secret"))
		}
		w.Header().Set("Content-Type", "application/json")
		body := `{"device_code":"dc-1","user_code":"WDJB-MJHT","verification_uri":"` + d.URL + `/device","verification_uri_complete":"` + d.URL + `/device?user_code=WDJB-MJHT","expires_in":600,"interval":` + fmt.Sprint(interval) + `}`
		_, _ = w.Write([]byte(body))
	})
	mux.HandleFunc("POST /realms/r/protocol/openid-connect/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" || r.PostForm.Get("device_code") != "dc-1" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		d.pollTimes <- time.Now()
		n := int(d.polls.Add(1))
		w.Header().Set("Content-Type", "application/json")
		if n <= len(d.answers) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"` + d.answers[n-1] + `","error_description":"scripted"}`))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"at-device","token_type":"Bearer","expires_in":300,"refresh_token":"rt-device"}`))
	})
	d.Server = httptest.NewServer(mux)
	t.Cleanup(d.Close)
	return d
}

// deviceDiscovery serves discovery beside d, so the device endpoint is
// found as it is on a real server.
func deviceDiscovery(t *testing.T, interval any, answers ...string) (*deviceServer, Connection) {
	d := newDeviceServer(t, interval, answers...)
	mux := d.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("GET /realms/r/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		base := d.URL + "/realms/r/protocol/openid-connect"
		_, _ = w.Write([]byte(`{"issuer":"` + d.URL + `/realms/r","token_endpoint":"` + base + `/token","device_authorization_endpoint":"` + base + `/auth/device"}`))
	})
	return d, Connection{Issuer: d.URL + "/realms/r", ClientID: "cli"}
}

func TestDeviceCodeGrant(t *testing.T) {
	t.Parallel()
	t.Run("client authentication", func(t *testing.T) {
		t.Parallel()
		for _, basic := range []bool{false, true} {
			d, conn := deviceDiscovery(t, 1)
			conn.BasicAuth = basic
			var got Prompt
			c := cliNewClient(t, Options{})
			ts, err := c.Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "sekret"}, Prompt: func(p Prompt) { got = p }})
			if err != nil {
				t.Fatal(err)
			}
			if ts.AccessToken != "at-device" || ts.RefreshToken != "rt-device" {
				t.Fatalf("tokens %+v", ts)
			}
			want := "form:sekret"
			if basic {
				want = "basic:Basic " + base64.StdEncoding.EncodeToString([]byte("cli:sekret"))
			}
			if a := d.deviceAuth.Load(); a != want {
				t.Errorf("basic=%v: device authorization request authenticated as %q, want %q", basic, a, want)
			}
			if got.UserCode != "WDJB-MJHT" || got.VerificationURI != d.URL+"/device" || got.VerificationURIComplete != d.URL+"/device?user_code=WDJB-MJHT" || got.OpenURL() != got.VerificationURIComplete {
				t.Errorf("prompt %+v", got)
			}
		}
	})
	t.Run("pending then slow_down widens the interval", func(t *testing.T) {
		t.Parallel()
		d, conn := deviceDiscovery(t, 1, "authorization_pending", "slow_down")
		c := cliNewClient(t, Options{})
		if _, err := c.Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "sekret-123"}, Prompt: func(Prompt) {}}); err != nil {
			t.Fatal(err)
		}
		if n := d.polls.Load(); n != 3 {
			t.Fatalf("%d polls, want 3", n)
		}
		p1, p2, p3 := <-d.pollTimes, <-d.pollTimes, <-d.pollTimes
		// After slow_down the wait grows by 5 s (RFC 8628 §3.5): the next
		// poll comes at least 1+5 s after the server answered it. A lower
		// bound only (a loaded machine lengthens any gap), not a comparison
		// with the gap before, which load can stretch as well.
		if gap := p3.Sub(p2); gap < 6*time.Second {
			t.Errorf("gaps %v then %v: slow_down did not widen the interval to 6 s", p2.Sub(p1), gap)
		}
	})
	for _, tc := range []struct {
		answer string
		want   ErrorKind
	}{{"access_denied", KindAccessDenied}, {"expired_token", KindExpired}} {
		t.Run(tc.answer, func(t *testing.T) {
			t.Parallel()
			_, conn := deviceDiscovery(t, 1, tc.answer)
			c := cliNewClient(t, Options{})
			_, err := c.Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "sekret-123"}, Prompt: func(Prompt) {}})
			cliSafeErr(t, err, tc.want, "sekret-123", "dc-1")
		})
	}
	t.Run("no person", func(t *testing.T) {
		t.Parallel()
		_, conn := deviceDiscovery(t, 1)
		_, err := cliNewClient(t, Options{}).Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "sekret-123"}})
		cliSafeErr(t, err, KindInteractionRequired)
	})
	t.Run("a huge interval is clamped, not a panic", func(t *testing.T) {
		t.Parallel()
		for _, interval := range []string{"9223372037", "1e18", `"9223372037"`} {
			_, conn := deviceDiscovery(t, interval, "authorization_pending")
			ctx, cancel := context.WithCancel(cliCtx(t))
			var got Prompt
			_, err := cliNewClient(t, Options{}).Obtain(ctx, GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "sekret-123"}, Prompt: func(p Prompt) { got = p; cancel() }})
			if err == nil {
				t.Fatalf("interval %s: a cancelled wait succeeded", interval)
			}
			if got.Interval != maxDeviceInterval {
				t.Errorf("interval %s: the prompt says polls every %v, want %v", interval, got.Interval, maxDeviceInterval)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		_, conn := deviceDiscovery(t, 1, "authorization_pending", "authorization_pending", "authorization_pending")
		ctx, cancel := context.WithCancel(cliCtx(t))
		_, err := cliNewClient(t, Options{}).Obtain(ctx, GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: "sekret-123"}, Prompt: func(Prompt) { cancel() }})
		if err == nil || ctx.Err() == nil {
			t.Fatalf("a cancelled wait returned %v", err)
		}
	})
}

// authorize plays the browser for an authcode prompt against authtest.
func authorize(t *testing.T, p Prompt, action string, edit func(url.Values)) {
	t.Helper()
	u, err := url.Parse(p.AuthURL)
	if err != nil {
		t.Error(err)
		return
	}
	if edit != nil {
		q := u.Query()
		edit(q)
		u.RawQuery = q.Encode()
	}
	form := url.Values{"username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}, "action": {action}}
	go func() {
		resp, err := http.PostForm(u.String(), form)
		if err == nil {
			resp.Body.Close()
		}
	}()
}

func TestAuthCodeGrant(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	conn := cliConn(s)
	conn.Scopes = []string{"openid"}
	conn.NoPAR = true // the whole request in the URL, which these tests read and edit (PAR: hardened_test.go)
	run := func(t *testing.T, r Request, prompt Prompter) (*TokenSet, error) {
		r.Conn, r.ClientAuth.Secret, r.Prompt = conn, authtest.DemoClientSecret, prompt
		if r.Wait == 0 {
			r.Wait = 20 * time.Second
		}
		return cliNewClient(t, Options{Now: clock.Now}).Obtain(cliCtx(t), GrantAuthCode, r)
	}
	t.Run("approved", func(t *testing.T) {
		t.Parallel()
		var p Prompt
		ts, err := run(t, Request{}, func(got Prompt) { p = got; authorize(t, got, "approve", nil) })
		if err != nil {
			t.Fatal(err)
		}
		if ts.IDToken == "" || !strings.HasPrefix(p.RedirectURI, "http://127.0.0.1:") || !strings.HasSuffix(p.RedirectURI, "/callback") {
			t.Fatalf("tokens %+v, prompt %+v", ts.Redacted(), p)
		}
		q, _ := url.Parse(p.AuthURL)
		if q.Query().Get("code_challenge_method") != "S256" || q.Query().Get("nonce") == "" || q.Query().Get("state") == "" {
			t.Errorf("authorization URL lacks PKCE S256, nonce or state: %s", p.AuthURL)
		}
	})
	t.Run("wrong PKCE verifier refused", func(t *testing.T) {
		t.Parallel()
		sum := sha256.Sum256([]byte("not the verifier"))
		_, err := run(t, Request{}, func(got Prompt) {
			authorize(t, got, "approve", func(q url.Values) { q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:])) })
		})
		if e := cliDemoSafe(t, err, KindServer); !strings.Contains(e.Description, "PKCE") {
			t.Fatalf("refusal %v does not name PKCE", err)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, Request{}, func(got Prompt) { authorize(t, got, "deny", nil) })
		cliDemoSafe(t, err, KindAccessDenied)
	})
	t.Run("another sign-in's state is ignored, then the wait ends", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, Request{Wait: 2 * time.Second}, func(got Prompt) {
			authorize(t, got, "approve", func(q url.Values) { q.Set("state", "forged") })
		})
		cliDemoSafe(t, err, KindExpired)
	})
	t.Run("iss of another issuer refused", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, Request{}, func(got Prompt) {
			go func() {
				u, _ := url.Parse(got.AuthURL)
				cb := got.RedirectURI + "?code=x&state=" + url.QueryEscape(u.Query().Get("state")) + "&iss=" + url.QueryEscape("https://evil.example")
				if resp, err := http.Get(cb); err == nil {
					resp.Body.Close()
				}
			}()
		})
		if e := cliDemoSafe(t, err, KindConfig); !strings.Contains(e.Msg, "evil.example") {
			t.Fatalf("mix-up not explained: %v", err)
		}
	})
	t.Run("fixed callback port", func(t *testing.T) {
		t.Parallel()
		ln := freeLoopbackPort(t)
		var p Prompt
		if _, err := run(t, Request{CallbackPort: ln}, func(got Prompt) { p = got; authorize(t, got, "approve", nil) }); err != nil {
			t.Fatal(err)
		}
		if p.RedirectURI != "http://127.0.0.1:"+strconv.Itoa(ln)+"/callback" {
			t.Fatalf("redirect %q", p.RedirectURI)
		}
	})
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(srv.URL)
	srv.Close()
	port, _ := strconv.Atoi(u.Port())
	return port
}
