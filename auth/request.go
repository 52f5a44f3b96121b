package auth

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
)

// formRequest is one form POST that authenticates the client: a token
// request of any grant, a refresh, the device authorization request, a
// pushed authorization request, revocation, introspection, logout. Every one
// goes through Client.send, the one place client authentication is applied.
type formRequest struct {
	Op       string // names the operation in errors
	Endpoint string
	Form     url.Values // without client authentication: send adds it
	// Header, when set, adds headers to each attempt (a DPoP proof); it is
	// called again for every retry, with the request about to go out.
	Header func(req *http.Request) error
}

// formResponse is the server's answer: status, headers and the body, capped
// at MaxBodySize.
type formResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// ok reports a 2xx answer.
func (r formResponse) ok() bool { return r.Status >= 200 && r.Status < 300 }

// serverError reads the RFC 6749 §5.2 error of a refusal: JSON, or a form
// body (some servers answer application/x-www-form-urlencoded or
// text/plain, which x/oauth2 also reads).
func (r formResponse) serverError() serverError {
	se := parseServerError(r.Body)
	if se.Code == "" && formEncoded(r.Header) {
		if v, err := url.ParseQuery(string(r.Body)); err == nil {
			se = serverError{Code: v.Get("error"), Description: v.Get("error_description")}
		}
	}
	return se
}

// refusal is the *Error of a non-2xx answer to op.
func (r formResponse) refusal(op string, secrets []string) *Error {
	se := r.serverError()
	return mapStatus(op, r.Status, se.Code, se.Description, r.Body, secrets)
}

// send POSTs req.Form to req.Endpoint with conn's client authentication ca
// applied, and returns the answer. A failure to get an answer is an *Error
// (mapTransportError); any answer, a refusal included, is returned for the
// caller to read.
//
// When the method was not chosen (ca and conn both say ""), the secret goes
// in the form body; if the server answers invalid_client, the request is
// sent once more with HTTP Basic, and when Basic is not refused the client
// remembers it for conn (LearnedClientAuth), as x/oauth2's AuthStyleAutoDetect
// does.
func (c *Client) send(ctx context.Context, conn Connection, ca ClientAuth, req formRequest) (formResponse, error) {
	m := ca.method(conn)
	auto := m == "" && ca.Secret != ""
	if auto {
		if learned := c.LearnedClientAuth(conn); learned != "" {
			m, auto = learned, false
		}
	}
	resp, err := c.sendWith(ctx, conn, ca, m, req)
	if err != nil || !auto || !invalidClient(resp) {
		return resp, err
	}
	c.logger.Debug("invalid_client with the secret in the form; trying HTTP Basic", "op", req.Op)
	basic, err := c.sendWith(ctx, conn, ca, ClientSecretBasic, req)
	if err != nil {
		return resp, nil // the first answer says more than a failed retry
	}
	if !invalidClient(basic) {
		c.learn(conn, ClientSecretBasic)
	}
	return basic, nil
}

// invalidClient reports whether the answer refuses the client's credentials.
func invalidClient(r formResponse) bool {
	return (r.Status == http.StatusBadRequest || r.Status == http.StatusUnauthorized) && r.serverError().Code == "invalid_client"
}

// sendWith is one attempt of send with method m.
func (c *Client) sendWith(ctx context.Context, conn Connection, ca ClientAuth, m ClientAuthMethod, r formRequest) (formResponse, error) {
	form := cloneValues(r.Form)
	var user, pass string
	if err := c.applyClientAuth(ctx, conn, ca, m, r.Endpoint, form, func(u, p string) { user, pass = u, p }); err != nil {
		return formResponse{}, withOp(err, r.Op)
	}
	hc, err := c.httpFor(ca, m)
	if err != nil {
		return formResponse{}, withOp(err, r.Op)
	}
	if ca.Cert != nil {
		r.Endpoint = c.mtlsAlias(ctx, conn, r.Endpoint)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return formResponse{}, mapTransportError(ctx, r.Op, r.Endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	if r.Header != nil {
		if err := r.Header(req); err != nil {
			return formResponse{}, withOp(err, r.Op)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return formResponse{}, mapTransportError(ctx, r.Op, r.Endpoint, err)
	}
	body, err := readBody(resp)
	if err != nil {
		return formResponse{}, mapTransportError(ctx, r.Op, r.Endpoint, err)
	}
	return formResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// httpFor is the HTTP client that carries ca's method: the client's own, or,
// when ca has a certificate (the TLS methods need one), one that presents it.
func (c *Client) httpFor(ca ClientAuth, m ClientAuthMethod) (*http.Client, error) {
	if ca.Cert != nil {
		return c.certClient(ca.Cert)
	}
	if m.Needs().Cert {
		return nil, configError("the key has no client certificate for "+string(m), "create it again with {{client-cert FILE}} {{client-key FILE}}")
	}
	return c.http, nil
}

// learnKey names conn's client at its realm for LearnedClientAuth.
func learnKey(conn Connection) string {
	return conn.ClientID + "\x00" + conn.IssuerURL() + "\x00" + conn.TokenURL
}

// LearnedClientAuth is the method send found to work for conn's client when
// none was chosen ("" when nothing was learned). The store keeps it with the
// key, so that the next process goes straight to it.
func (c *Client) LearnedClientAuth(conn Connection) ClientAuthMethod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.learned[learnKey(conn)]
}

func (c *Client) learn(conn Connection, m ClientAuthMethod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.learned == nil {
		c.learned = map[string]ClientAuthMethod{}
	}
	c.learned[learnKey(conn)] = m
}

// tokenCall is one request to the token endpoint.
type tokenCall struct {
	Op       string
	Endpoint string
	Form     url.Values
	Secrets  []string // besides ca's, what must not appear in an error
	Header   func(req *http.Request) error
	// NotAccessToken accepts token_type N_A: the answer of a token
	// exchange may issue a token that is not an access token.
	NotAccessToken bool
}

// token sends a token request through send and checks the answer: a
// refusal is the *Error mapStatus makes of it (its Code is the server's
// error code), an answer that is not a token response is
// KindMalformedResponse, and a token response becomes a TokenSet
// (tokenSet's checks).
func (c *Client) token(ctx context.Context, conn Connection, ca ClientAuth, call tokenCall) (*TokenSet, error) {
	resp, err := c.sendProved(ctx, conn, ca, formRequest{Op: call.Op, Endpoint: call.Endpoint, Form: call.Form, Header: call.Header})
	if err != nil {
		return nil, err
	}
	if !resp.ok() || resp.serverError().Code != "" {
		// A 200 with an error code is a refusal too, as x/oauth2 reads it.
		return nil, c.nameTheSwitch(ctx, conn, ca, resp.refusal(call.Op, ca.secrets(conn, call.Secrets...)))
	}
	tok, err := parseToken(call.Op, resp)
	if err != nil {
		return nil, err
	}
	na := call.NotAccessToken && strings.EqualFold(tok.TokenType, TokenTypeNotApplicable)
	if na {
		tok.TokenType = ""
	}
	ts, err := c.tokenSet(call.Op, tok, ca.DPoP != nil)
	if na && ts != nil {
		ts.TokenType = TokenTypeNotApplicable
	}
	return ts, err
}

// parseToken reads a 2xx token response, JSON or form-encoded (as x/oauth2
// reads it), into an *oauth2.Token whose Extra holds every field. A body
// that is not a token response is never excerpted: it may hold tokens of
// any shape.
func parseToken(op string, resp formResponse) (*oauth2.Token, error) {
	notToken := func(msg string) error {
		e := &Error{Kind: KindMalformedResponse, Op: op, Msg: msg, Hint: "check that the auth URL points at the realm (…/auth/realms/<realm>)"}
		if ct := mediaType(resp.Header.Get("Content-Type")); ct != "" {
			e.Msg += " (content type " + ct + ")"
		}
		return e
	}
	var tok *oauth2.Token
	if formEncoded(resp.Header) {
		v, err := url.ParseQuery(string(resp.Body))
		if err != nil {
			return nil, notToken("the answer was not a token response")
		}
		tok = (&oauth2.Token{AccessToken: v.Get("access_token"), TokenType: v.Get("token_type"), RefreshToken: v.Get("refresh_token")}).WithExtra(v)
	} else {
		var raw map[string]any
		var typed struct {
			AccessToken  string `json:"access_token"`
			TokenType    string `json:"token_type"`
			RefreshToken string `json:"refresh_token"`
		}
		if json.Unmarshal(resp.Body, &raw) != nil || json.Unmarshal(resp.Body, &typed) != nil {
			return nil, notToken("the answer was not a token response")
		}
		tok = (&oauth2.Token{AccessToken: typed.AccessToken, TokenType: typed.TokenType, RefreshToken: typed.RefreshToken}).WithExtra(raw)
	}
	if tok.AccessToken == "" {
		return nil, notToken("the answer carried no access token")
	}
	return tok, nil
}

// formEncoded reports an answer x/oauth2 reads as a form body.
func formEncoded(h http.Header) bool {
	switch mediaType(h.Get("Content-Type")) {
	case "application/x-www-form-urlencoded", "text/plain":
		return true
	}
	return false
}

// mediaType is the media type of a Content-Type header, at most 64 bytes.
func mediaType(ct string) string {
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	if len(ct) > 64 {
		ct = ct[:64]
	}
	return ct
}
