package auth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// APISource hands out the token an API request carries: the key's current
// token, or with force a renewed one (the API refused the last one as
// invalid). Its errors are returned from the request as they are, so a
// caller can tell "only a login can help" from a network failure.
type APISource func(ctx context.Context, force bool) (*TokenSet, error)

// APIOptions configure NewAPIClient.
type APIOptions struct {
	// Source hands out the tokens (required).
	Source APISource
	// CAFile is a PEM bundle of extra roots for private CAs.
	CAFile string
	// DialTimeout bounds connecting (default 10 s); HeaderTimeout bounds the
	// wait for an answer's headers (default 30 s). Bodies are not bounded:
	// they stream for as long as they take.
	DialTimeout, HeaderTimeout time.Duration
	// Logger receives one debug line per request (method, URL without
	// query, status); never a header or a body. Nil discards.
	Logger *slog.Logger
	// Base replaces the transport NewAPIClient builds (tests).
	Base http.RoundTripper
	// DPoP is the key's DPoP key: a token of type DPoP is sent with the
	// DPoP scheme and a fresh proof for each request (RFC 9449 §7.1),
	// carrying the nonce the API last asked for. Nil: the key has none (a
	// DPoP-bound token is then an error, before anything is sent).
	DPoP *DPoPKey
	// Now is the clock of the proofs (default time.Now).
	Now func() time.Time
}

// NewAPIClient returns an HTTP client for calling an API with a key's
// token: every request carries "Authorization: <token_type> <token>" from
// Source; plain http is refused to hosts that are not loopback; redirects are
// not followed (a redirect would carry the token elsewhere); and a 401 whose
// challenge says the token is invalid (RFC 6750 error="invalid_token") makes
// it renew the token once, forced, and send the request once more, when the
// request's body can be sent again (a body with GetBody, or a stream of
// which nothing was read yet: such requests go out with Expect:
// 100-continue). With a DPoP key, a DPoP-bound token goes out with a proof
// per request; a 401 asking for a DPoP nonce (use_dpop_nonce, with a
// DPoP-Nonce header) is answered by one more request with a proof carrying
// it, and does not count as the renewal. Nothing else is ever retried: a
// second invalid-token 401 is the answer.
func NewAPIClient(opts APIOptions) (*http.Client, error) {
	if opts.Source == nil {
		return nil, errors.New("auth: NewAPIClient needs a Source")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base := opts.Base
	if base == nil {
		header := opts.HeaderTimeout
		if header <= 0 {
			header = DefaultTimeout
		}
		t, err := newBaseTransport(opts.DialTimeout, header, opts.CAFile)
		if err != nil {
			return nil, err
		}
		t.ExpectContinueTimeout = time.Second
		base = t
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &http.Client{
		Transport:     &apiTransport{source: opts.Source, base: base, logger: logger, dpop: opts.DPoP, now: now},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// apiTransport adds the token and renews once on an invalid-token 401.
type apiTransport struct {
	source APISource
	base   http.RoundTripper
	logger *slog.Logger
	dpop   *DPoPKey
	nonces DPoPNonces
	now    func() time.Time
}

// errNoDPoPKey: the server bound the token to a DPoP key this client lacks.
var errNoDPoPKey = &Error{Kind: KindConfig, Msg: "the access token is DPoP-bound but the key has no DPoP key to sign proofs with", Hint: "log in again"}

func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sendsTokenTo(req.URL) {
		closeBody(req)
		return nil, errInsecureURL
	}
	ts, err := t.source(req.Context(), false)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// A body that cannot be asked for again is watched: if nothing of it
	// was read when the 401 came, it can still be sent whole.
	var stream *watchedBody
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		stream = &watchedBody{rc: req.Body}
	}
	var tries retries
	for {
		r, err := t.prepare(req, ts, stream)
		if err != nil {
			return nil, err
		}
		resp, err := t.send(r)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			return resp, err
		}
		nonce := t.askedNonce(req, ts, resp)
		if !tries.again(nonce, resp.Header) {
			return resp, nil // the 401 stands
		}
		var whole bool
		if req, stream, whole = rewind(req, stream); !whole {
			return resp, nil
		}
		drain(resp)
		if nonce {
			continue // the same token, a proof with the nonce
		}
		if ts, err = t.source(req.Context(), true); err != nil {
			return nil, err
		}
	}
}

// sendsTokenTo reports whether a token may be sent to u: https, or http to
// a loopback host.
func sendsTokenTo(u *url.URL) bool {
	return u.Scheme == "https" || (u.Scheme == "http" && IsLoopback(u.Hostname()))
}

// askedNonce reports whether resp, a 401 to a DPoP-bound request, asks for
// a DPoP nonce (which is remembered for the request's URL).
func (t *apiTransport) askedNonce(req *http.Request, ts *TokenSet, resp *http.Response) bool {
	return t.dpop != nil && isDPoP(ts) && t.nonces.Remember(req.URL.String(), resp.Header) && asksNonce(resp.Header)
}

// retries are the second tries of one request after a 401: one with the
// nonce the server asked for, one with a renewed token.
type retries struct{ nonce, renewed bool }

// again reports whether a 401 (asking for a nonce, or with header h) is
// worth sending again, and counts the try.
func (r *retries) again(nonce bool, h http.Header) bool {
	switch {
	case nonce && !r.nonce:
		r.nonce = true
	case !r.renewed && InvalidTokenChallenge(h):
		r.renewed = true
	default:
		return false
	}
	return true
}

// rewind makes req's body whole again to send it again: asked for anew, or
// the watched stream when none of it was read. whole is false when it
// cannot be.
func rewind(req *http.Request, stream *watchedBody) (_ *http.Request, _ *watchedBody, whole bool) {
	switch {
	case req.GetBody != nil:
		body, err := req.GetBody()
		if err != nil {
			return req, stream, false
		}
		req = req.Clone(req.Context())
		req.Body = body
	case stream != nil:
		if !stream.detach() {
			return req, stream, false // part of the body went out: it cannot be sent whole again
		}
		stream = &watchedBody{rc: stream.rc}
	}
	return req, stream, true
}

func isDPoP(ts *TokenSet) bool { return strings.EqualFold(ts.TokenType, DPoPTokenType) }

// asksNonce reports whether a challenge asks for a DPoP nonce.
func asksNonce(h http.Header) bool {
	for _, c := range ParseChallenges(h.Values("WWW-Authenticate")) {
		if strings.EqualFold(c.Scheme, DPoPTokenType) && c.Params["error"] == "use_dpop_nonce" {
			return true
		}
	}
	return false
}

// prepare is req with the token's Authorization header (and DPoP proof),
// and, for a watched stream, the stream as its body and Expect:
// 100-continue.
func (t *apiTransport) prepare(req *http.Request, ts *TokenSet, stream *watchedBody) (*http.Request, error) {
	r := req.Clone(req.Context())
	if isDPoP(ts) {
		if t.dpop == nil {
			return nil, errNoDPoPKey
		}
		target := req.URL.String()
		proof, err := t.dpop.Proof(req.Method, target, ts.AccessToken, t.nonces.Get(target), t.now())
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", DPoPTokenType+" "+ts.AccessToken)
		r.Header.Set("DPoP", proof)
	} else {
		r.Header.Set("Authorization", authorizationValue(ts))
	}
	if stream != nil {
		r.Body = stream
		r.Header.Set("Expect", "100-continue")
	}
	return r, nil
}

func (t *apiTransport) send(r *http.Request) (*http.Response, error) {
	logURL := r.URL.Scheme + "://" + r.URL.Host + r.URL.Path
	resp, err := t.base.RoundTrip(r)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	t.logger.Debug("api request", "method", r.Method, "url", logURL, "status", status)
	return resp, err
}

// authorizationValue is the Authorization header for ts: its token type
// ("Bearer" when the server said none or "bearer") and the token.
func authorizationValue(ts *TokenSet) string {
	typ := ts.TokenType
	if typ == "" || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	return typ + " " + ts.AccessToken
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// drain reads a little of an answer that is dropped, so the connection can
// be reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// watchedBody is a request body read from a stream: it records whether the
// transport read any of it and can be detached once the answer came without
// a read. It ignores Close: the transport closes a body it decides not to
// send, and the stream may yet be sent again, so a stream body (standard
// input) stays the caller's to close.
type watchedBody struct {
	rc       io.ReadCloser
	mu       sync.Mutex
	read     bool
	detached bool
}

var errDetached = errors.New("request body detached: the request is sent again")

func (w *watchedBody) Read(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.detached {
		return 0, errDetached
	}
	n, err := w.rc.Read(p)
	if n > 0 || err != nil {
		w.read = true
	}
	return n, err
}

func (w *watchedBody) Close() error { return nil }

// detach reports whether nothing was read, and if so stops the first
// request from reading any of it.
func (w *watchedBody) detach() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.read {
		return false
	}
	w.detached = true
	return true
}

// InvalidTokenChallenge reports whether the WWW-Authenticate challenges in h
// say the token sent was refused as invalid (RFC 6750 §3.1
// error="invalid_token", for the Bearer or the DPoP scheme) or ask for a
// DPoP nonce (RFC 9449 §9 error="use_dpop_nonce"): the cases in which a
// renewed token (or proof) can help.
func InvalidTokenChallenge(h http.Header) bool {
	for _, c := range ParseChallenges(h.Values("WWW-Authenticate")) {
		if !strings.EqualFold(c.Scheme, "bearer") && !strings.EqualFold(c.Scheme, DPoPTokenType) {
			continue
		}
		switch c.Params["error"] {
		case "invalid_token", "use_dpop_nonce":
			return true
		}
	}
	return false
}

// Challenge is one WWW-Authenticate challenge (RFC 9110 §11.6.1): a scheme
// and its auth-params (names lower-cased), or its token68.
type Challenge struct {
	Scheme  string
	Params  map[string]string
	Token68 string
}

// ParseChallenges reads the challenges of WWW-Authenticate header values.
// It is lenient: what it cannot read ends the value it is in.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		p := challengeParser{s: v}
		out = append(out, p.all()...)
	}
	return out
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func isTokenChar(c byte) bool {
	return c > 0x20 && c < 0x7f && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, rune(c))
}

func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && (isTokenChar(p.s[p.i]) || p.s[p.i] == '/') {
		p.i++
	}
	return p.s[start:p.i]
}

// token68 reads a token68 (RFC 9110 §11.2) that is the whole rest of a
// challenge; it leaves p as it was when there is none.
func (p *challengeParser) token68() (string, bool) {
	save := p.i
	p.skipSpace()
	start := p.i
	for p.i < len(p.s) && (isAlnumByte(p.s[p.i]) || strings.IndexByte("-._~+/", p.s[p.i]) >= 0) {
		p.i++
	}
	if p.i == start {
		p.i = save
		return "", false
	}
	for p.i < len(p.s) && p.s[p.i] == '=' {
		p.i++
	}
	end := p.i
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] != ',' {
		p.i = save
		return "", false
	}
	return p.s[start:end], true
}

func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *challengeParser) quoted() (string, bool) {
	var b strings.Builder
	p.i++ // the opening quote
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '\\':
			if p.i < len(p.s) {
				b.WriteByte(p.s[p.i])
				p.i++
			}
		case '"':
			return b.String(), true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

func (p *challengeParser) all() []Challenge {
	var out []Challenge
	for {
		p.skipSpace()
		for p.at(',') {
			p.i++
			p.skipSpace()
		}
		scheme := p.token()
		if scheme == "" {
			return out
		}
		c := Challenge{Scheme: scheme, Params: map[string]string{}}
		if t68, ok := p.token68(); ok {
			c.Token68 = t68
			out = append(out, c)
			continue
		}
		whole := p.params(c.Params)
		out = append(out, c)
		if !whole || p.i >= len(p.s) {
			return out
		}
	}
}

// at reports whether the next byte is c.
func (p *challengeParser) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

// params reads auth-params into params: name=value pairs separated by
// commas, until a token that is not followed by '=' (the next challenge's
// scheme). whole is false when a quoted value does not end (the rest is
// not read).
func (p *challengeParser) params(params map[string]string) (whole bool) {
	for {
		p.skipSpace()
		save := p.i
		name := p.token()
		p.skipSpace()
		if name == "" || !p.at('=') {
			p.i = save
			return true
		}
		p.i++
		p.skipSpace()
		val := ""
		if p.at('"') {
			v, ok := p.quoted()
			if !ok {
				return false
			}
			val = v
		} else {
			val = p.token()
		}
		params[strings.ToLower(name)] = val
		p.skipSpace()
		if p.at(',') {
			p.i++
		}
	}
}
