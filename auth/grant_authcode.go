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
	if err := r.Conn.Validate(); err != nil {
		return nil, withOp(err, op)
	}
	if r.Prompt == nil {
		return nil, &Error{Kind: KindInteractionRequired, Op: op, Msg: "signing in with a browser needs a person", Hint: "run the command in a terminal"}
	}
	ep, discovered, err := c.endpoints(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	if ep.Authorization == "" {
		ep.Authorization = r.Conn.KeycloakEndpoints().Authorization
	}
	if ep.Authorization == "" {
		return nil, &Error{Kind: KindConfig, Op: op, Msg: "the server offers no authorization endpoint", Hint: "use another grant, or set the auth URL of a Keycloak realm"}
	}
	tokenURL, err := c.tokenEndpoint(ctx, r.Conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	issuer := ep.Issuer
	if issuer == "" {
		issuer = r.Conn.IssuerURL()
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.CallbackPort)))
	if err != nil {
		hint := "try again"
		if r.CallbackPort != 0 {
			hint = "free the port, or register another callback port and pass it with {{callback-port}}"
		}
		return nil, &Error{Kind: KindConfig, Op: op, Msg: "cannot listen on 127.0.0.1:" + strconv.Itoa(r.CallbackPort), Hint: hint, Err: err}
	}
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	scopes := grantScopes(r.Conn, ep, discovered)
	cfg := &oauth2.Config{ClientID: r.Conn.ClientID, Endpoint: oauth2.Endpoint{AuthURL: ep.Authorization}, RedirectURL: redirect, Scopes: scopes}

	state, verifier := randomString(), oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	nonce := ""
	if slices.Contains(scopes, "openid") {
		nonce = randomString()
		opts = append(opts, oauth2.SetAuthURLParam("nonce", nonce))
	}
	if u := strings.TrimSpace(r.Username); u != "" {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", u)) // the person who must sign in
	}
	if r.ClientAuth.DPoP != nil {
		opts = append(opts, oauth2.SetAuthURLParam("dpop_jkt", r.ClientAuth.DPoP.JKT()))
	}
	authURL := cfg.AuthCodeURL(state, opts...)
	if ep.PAR != "" && !r.Conn.NoPAR {
		if authURL, err = c.pushAuthorization(ctx, r.Conn, r.ClientAuth, ep, authURL); err != nil {
			return nil, err
		}
	}

	results := make(chan callbackResult, 1)
	start := newStartLink(op, authURL)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if start.serve(w, req) {
				return
			}
			if req.URL.Path != "/callback" {
				http.NotFound(w, req)
				return
			}
			res := readCallback(req, state, issuer, ep.IssParameter)
			closePage(w, res.err)
			if res.err != nil && errors.Is(res.err, errWrongState) {
				return // not our browser's answer: keep waiting
			}
			select {
			case results <- res:
			default:
			}
		}),
	}
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
	r.Prompt(Prompt{Grant: GrantAuthCode, AuthURL: authURL, StartURL: start.url(ln.Addr().(*net.TCPAddr).Port), RedirectURI: redirect, PortFixed: r.CallbackPort != 0, ExpiresAt: c.now().Add(wait)})

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var res callbackResult
	select {
	case <-ctx.Done():
		return nil, mapTransportError(ctx, op, ep.Authorization, ctx.Err())
	case <-timer.C:
		return nil, &Error{Kind: KindExpired, Op: op, Msg: "no browser came back within " + text.Span(wait), Hint: "run the command again and finish signing in in the browser"}
	case err := <-start.aborted:
		return nil, err
	case res = <-results:
	}
	if res.err != nil {
		var e *Error
		if errors.As(res.err, &e) {
			return nil, c.nameTheSwitch(ctx, r.Conn, r.ClientAuth, e)
		}
		return nil, res.err
	}

	ts, err := c.token(ctx, r.Conn, r.ClientAuth, tokenCall{Op: op, Endpoint: tokenURL, Secrets: []string{res.code, verifier}, Form: url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {res.code},
		"redirect_uri":  {redirect},
		"code_verifier": {verifier},
	}})
	if err != nil {
		return nil, err
	}
	if nonce != "" {
		if err := checkNonce(ts.IDToken, nonce, c.now()); err != nil {
			return nil, &Error{Kind: KindMalformedResponse, Op: op, Msg: err.Error(), Hint: "nothing was stored; run the command again"}
		}
	}
	if err := c.checkSignedIn(ctx, r, ts, op); err != nil {
		return nil, err
	}
	return ts, nil
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
