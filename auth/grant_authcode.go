package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
	"golang.org/x/oauth2"
)

// authCodeGrant is the authorization code grant with PKCE S256 (RFC 7636)
// on a loopback redirect (RFC 8252 §7.3): shipkey listens on 127.0.0.1 (an
// ephemeral port, or Request.CallbackPort), hands the authorization URL to
// the Prompter (which opens a browser and prints it), and waits for the
// browser to come back to /callback. It checks state, the nonce when openid
// is requested, and iss (RFC 9207) when the server sends it or says it
// will.
type authCodeGrant struct{}

// GrantAuthCode names the authorization code grant.
const GrantAuthCode GrantType = "authcode"

// DefaultBrowserWait is how long the authorization code grant waits for the
// browser when Request.Wait is zero.
const DefaultBrowserWait = 5 * time.Minute

func (authCodeGrant) Type() GrantType { return GrantAuthCode }

func (authCodeGrant) Unattended(Kept) bool { return false }

// callbackResult is what the browser brought back.
type callbackResult struct {
	code string
	err  error
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (authCodeGrant) Obtain(ctx context.Context, c *Client, r Request) (*TokenSet, error) {
	const op = "authcode"
	ep, discovered, err := c.interactiveEndpoints(ctx, r, op, "signing in with a browser needs a person",
		"authorization", func(e *Endpoints) *string { return &e.Authorization })
	if err != nil {
		return nil, err
	}
	tokenURL, err := c.tokenEndpoint(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	ln, err := listenCallback(r.CallbackPort)
	if err != nil {
		return nil, err
	}
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	a, err := c.authorizationURL(ctx, r, ep, grantScopes(r.Conn, ep, discovered), redirect)
	if err != nil {
		ln.Close()
		return nil, err
	}
	code, err := c.awaitCallback(ctx, r, ep, ln, a)
	if err != nil {
		return nil, err
	}
	ts, err := c.token(ctx, r.Conn, r.ClientAuth, tokenCall{Op: op, Endpoint: tokenURL, Secrets: []string{code, a.verifier}, Form: url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirect},
		"code_verifier": {a.verifier},
	}})
	if err != nil {
		return nil, err
	}
	if a.nonce != "" {
		if err := checkNonce(ts.IDToken, a.nonce, c.now()); err != nil {
			return nil, &Error{Kind: KindMalformedResponse, Op: op, Msg: err.Error(), Hint: "nothing was stored; run the command again"}
		}
	}
	if err := c.checkSignedIn(ctx, r, ts, op); err != nil {
		return nil, err
	}
	return ts, nil
}

// listenCallback listens on 127.0.0.1 at port (0: any) for the browser.
func listenCallback(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		hint := "try again"
		if port != 0 {
			hint = "free the port, or register another callback port and pass it with {{callback-port}}"
		}
		return nil, &Error{Kind: KindConfig, Op: "authcode", Msg: "cannot listen on 127.0.0.1:" + strconv.Itoa(port), Hint: hint, Err: err}
	}
	return ln, nil
}

// authorization is one sign-in's authorization request: the URL the
// browser is sent to and what checking the answer needs.
type authorization struct {
	url, redirect, state, verifier string
	nonce                          string // "" unless openid is asked for
}

// authorizationURL builds the authorization request (PKCE S256, a nonce
// when openid is asked for, the login hint, DPoP's key thumbprint), pushed
// first (PAR, RFC 9126) when the server offers it and the connection allows.
func (c *Client) authorizationURL(ctx context.Context, r Request, ep Endpoints, scopes []string, redirect string) (authorization, error) {
	cfg := &oauth2.Config{ClientID: r.Conn.ClientID, Endpoint: oauth2.Endpoint{AuthURL: ep.Authorization}, RedirectURL: redirect, Scopes: scopes}
	a := authorization{redirect: redirect, state: randomString(), verifier: oauth2.GenerateVerifier()}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(a.verifier)}
	if slices.Contains(scopes, "openid") {
		a.nonce = randomString()
		opts = append(opts, oauth2.SetAuthURLParam("nonce", a.nonce))
	}
	if u := strings.TrimSpace(r.Username); u != "" {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", u)) // the person who must sign in
	}
	if r.ClientAuth.DPoP != nil {
		opts = append(opts, oauth2.SetAuthURLParam("dpop_jkt", r.ClientAuth.DPoP.JKT()))
	}
	a.url = cfg.AuthCodeURL(a.state, opts...)
	if ep.PAR != "" && !r.Conn.NoPAR {
		var err error
		if a.url, err = c.pushAuthorization(ctx, r.Conn, r.ClientAuth, ep, a.url); err != nil {
			return authorization{}, err
		}
	}
	return a, nil
}

// awaitCallback serves ln (the start link and /callback), prompts the person
// and waits for the browser to come back with a code; ln is closed when it
// returns.
func (c *Client) awaitCallback(ctx context.Context, r Request, ep Endpoints, ln net.Listener, a authorization) (string, error) {
	const op = "authcode"
	issuer := ep.Issuer
	if issuer == "" {
		issuer = r.Conn.IssuerURL()
	}
	results := make(chan callbackResult, 1)
	start := newStartLink(op, a.url)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: callbackHandler(start, results, a.state, issuer, ep.IssParameter)}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	wait := r.Wait
	if wait <= 0 {
		wait = DefaultBrowserWait
	}
	r.Prompt(Prompt{Grant: GrantAuthCode, AuthURL: a.url, StartURL: start.url(ln.Addr().(*net.TCPAddr).Port), RedirectURI: a.redirect, PortFixed: r.CallbackPort != 0, ExpiresAt: c.now().Add(wait)})

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var res callbackResult
	select {
	case <-ctx.Done():
		return "", mapTransportError(ctx, op, ep.Authorization, ctx.Err())
	case <-timer.C:
		return "", &Error{Kind: KindExpired, Op: op, Msg: "no browser came back within " + text.Span(wait), Hint: "run the command again and finish signing in in the browser"}
	case err := <-start.aborted:
		return "", err
	case res = <-results:
	}
	var e *Error
	if errors.As(res.err, &e) {
		return "", c.nameTheSwitch(ctx, r.Conn, r.ClientAuth, e)
	}
	return res.code, res.err
}

// callbackHandler answers the browser: the start link, and /callback, whose
// first answer for this sign-in (state) goes to results.
func callbackHandler(start *startLink, results chan<- callbackResult, state, issuer string, issRequired bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if start.serve(w, req) {
			return
		}
		if req.URL.Path != "/callback" {
			http.NotFound(w, req)
			return
		}
		res := readCallback(req, state, issuer, issRequired)
		closePage(w, res.err)
		if res.err != nil && errors.Is(res.err, errWrongState) {
			return // not our browser's answer: keep waiting
		}
		select {
		case results <- res:
		default:
		}
	})
}

var errWrongState = errors.New("the callback's state does not match this sign-in")

// readCallback checks the browser's redirect: state first (an answer for
// another sign-in is ignored), then iss (RFC 9207), then error or code.
func readCallback(req *http.Request, state, issuer string, issRequired bool) callbackResult {
	const op = "authcode"
	q := req.URL.Query()
	if q.Get("state") != state {
		return callbackResult{err: errWrongState}
	}
	if iss := q.Get("iss"); iss != "" || issRequired {
		if strings.TrimRight(iss, "/") != strings.TrimRight(issuer, "/") {
			return callbackResult{err: &Error{Kind: KindConfig, Op: op, Msg: "the authorization answer came from issuer " + iss + ", not " + issuer, Hint: "nothing was stored; check the connection's issuer (RFC 9207 mix-up protection)"}}
		}
	}
	if code := q.Get("error"); code != "" {
		return callbackResult{err: refuse(attempt{op: op, callback: true}, said{http.StatusBadRequest, text.Safe(code), text.Safe(q.Get("error_description"))}, nil, nil)}
	}
	if q.Get("code") == "" {
		return callbackResult{err: &Error{Kind: KindMalformedResponse, Op: op, Msg: "the browser came back without a code", Hint: "run the command again"}}
	}
	return callbackResult{code: q.Get("code")}
}

// closePage answers the browser: done, or what went wrong; either way the
// tab may be closed.
func closePage(w http.ResponseWriter, err error) {
	title, msg := "Signed in", "shipkey got the sign-in. You can close this tab."
	status := http.StatusOK
	if err != nil {
		title, msg, status = "Sign-in failed", err.Error()+" — you can close this tab.", http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>shipkey: %s</title></head><body><h1>%s</h1><p>%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}

// checkNonce checks that the ID token carries the nonce sent.
func checkNonce(idToken, nonce string, now time.Time) error {
	if idToken == "" {
		return errors.New("openid was requested but the server sent no ID token")
	}
	d, err := Decode(idToken, now)
	if err != nil || d.Raw == nil {
		return errors.New("the ID token does not decode")
	}
	if got, _ := d.Raw["nonce"].(string); got != nonce {
		return errors.New("the ID token's nonce does not match the one sent (a replayed or injected answer)")
	}
	return nil
}
