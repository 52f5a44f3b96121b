package auth

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/url"
)

// The request path's part for hardened realms: the audience and algorithm
// of client assertions, the transport that presents a client certificate
// and the mTLS endpoint aliases (RFC 8705), and DPoP proofs with the
// server's nonces on token requests (RFC 9449).

// hardening is what a discovery document says about hardened clients.
type hardening struct {
	// AssertionAlgs are the algorithms the server takes client assertions
	// signed with; DPoPAlgs those of DPoP proofs (empty: not DPoP-capable).
	AssertionAlgs []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	DPoPAlgs      []string `json:"dpop_signing_alg_values_supported"`
	// AuthMethods are the client authentication methods its token
	// endpoint takes (RFC 8414 §2).
	AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	// MTLSAliases are the endpoints to use with a client certificate (RFC
	// 8705 §5), by metadata name (token_endpoint, revocation_endpoint…).
	MTLSAliases map[string]string `json:"mtls_endpoint_aliases"`
}

// keepHardening reads the hardened-client fields of a discovery document
// (body) of issuer; aliases that fail CheckURL are dropped.
func (c *Client) keepHardening(issuer string, body []byte) {
	var h hardening
	if json.Unmarshal(body, &h) != nil {
		return
	}
	for name, u := range h.MTLSAliases {
		if CheckURL(u) != nil {
			delete(h.MTLSAliases, name)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hardening == nil {
		c.hardening = map[string]hardening{}
	}
	c.hardening[issuer] = h
}

// hardeningOf is what conn's discovery said of hardened clients (zero when
// it was not fetched).
func (c *Client) hardeningOf(conn Connection) hardening {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hardening[conn.IssuerURL()]
}

// cachedEndpoints is conn's discovery document if it was fetched already.
func (c *Client) cachedEndpoints(conn Connection) (Endpoints, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ep, ok := c.discovered[conn.IssuerURL()]
	return ep, ok
}

// assertionAudience is the aud of conn's client assertions: the token
// endpoint (RFC 7523 §3; Keycloak and oidc-provider accept it for every
// endpoint that authenticates the client).
func (c *Client) assertionAudience(conn Connection) string {
	if conn.TokenURL != "" {
		return conn.TokenURL
	}
	if ep, ok := c.cachedEndpoints(conn); ok && ep.Token != "" {
		return ep.Token
	}
	return conn.KeycloakEndpoints().Token
}

// assertionAlgs is what the realm said it accepts client assertions signed
// with (nil when it did not say, or was not asked).
func (c *Client) assertionAlgs(conn Connection) []string {
	return c.hardeningOf(conn).AssertionAlgs
}

// certClient is an HTTP client like the client's own that presents cert in
// the TLS handshake, one per certificate.
func (c *Client) certClient(cert *tls.Certificate) (*http.Client, error) {
	if len(cert.Certificate) == 0 {
		return nil, configError("the key's client certificate is empty", "create it again with {{client-cert FILE}} {{client-key FILE}}")
	}
	id := CertificateThumbprint(cert.Certificate[0])
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.certHTTP[id]; ok {
		return hc, nil
	}
	g, ok := c.http.Transport.(*guardTransport)
	var base *http.Transport
	if ok {
		base, ok = g.base.(*http.Transport)
	}
	if !ok {
		return nil, configError("this HTTP client cannot present a client certificate", "use shipkey's own transport")
	}
	t := base.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// Presented whatever CAs the server's certificate request names: Go
	// would send none when the list leaves the certificate out, as it does a
	// self-signed one (self_signed_tls_client_auth) or one whose CA the
	// server does not list (the realm then says why, in its own words).
	t.TLSClientConfig.Certificates = nil
	t.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	hc := *c.http
	hc.Transport = &guardTransport{base: t, logger: g.logger, waiting: g.waiting}
	if c.certHTTP == nil {
		c.certHTTP = map[string]*http.Client{}
	}
	c.certHTTP[id] = &hc
	return &hc, nil
}

// mtlsAlias is the endpoint to use for endpoint with a client certificate:
// its alias in discovery's mtls_endpoint_aliases, else endpoint itself.
func (c *Client) mtlsAlias(ctx context.Context, conn Connection, endpoint string) string {
	ep, ok := c.cachedEndpoints(conn)
	if !ok && conn.IssuerURL() != "" {
		ep, _, _ = c.endpoints(ctx, conn) // a realm without discovery has no aliases
	}
	aliases := c.hardeningOf(conn).MTLSAliases
	if len(aliases) == 0 {
		return endpoint
	}
	for name, plain := range map[string]string{
		"token_endpoint": ep.Token, "revocation_endpoint": ep.Revocation, "introspection_endpoint": ep.Introspection,
		"device_authorization_endpoint": ep.DeviceAuthorization, "pushed_authorization_request_endpoint": ep.PAR,
		"end_session_endpoint": ep.Logout, "userinfo_endpoint": ep.Userinfo,
	} {
		if alias := aliases[name]; alias != "" && plain == endpoint {
			return alias
		}
	}
	return endpoint
}

// sendProved is send with a DPoP proof on each attempt when ca has a DPoP
// key: the proof names the URL the request really goes to and carries the
// nonce that server last asked for; an answer use_dpop_nonce with a new
// nonce is tried once more (RFC 9449 §8).
func (c *Client) sendProved(ctx context.Context, conn Connection, ca ClientAuth, req formRequest) (formResponse, error) {
	if ca.DPoP == nil {
		if conn.DPoP {
			return formResponse{}, &Error{Kind: KindConfig, Op: req.Op, Msg: "the key's DPoP key is missing or damaged", Hint: "create the key again with {{dpop}}"}
		}
		return c.send(ctx, conn, ca, req)
	}
	var sentTo string
	inner := req.Header
	req.Header = func(r *http.Request) error {
		if inner != nil {
			if err := inner(r); err != nil {
				return err
			}
		}
		sentTo = r.URL.String()
		proof, err := ca.DPoP.Proof(r.Method, sentTo, "", c.nonces.Get(sentTo), c.now())
		if err != nil {
			return err
		}
		r.Header.Set("DPoP", proof)
		return nil
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, conn, ca, req)
		if err != nil {
			return resp, err
		}
		before := c.nonces.Get(sentTo)
		c.nonces.Remember(sentTo, resp.Header)
		if attempt > 0 || resp.ok() || resp.serverError().Code != "use_dpop_nonce" || c.nonces.Get(sentTo) == before {
			return resp, nil
		}
		c.logger.Debug("the server asks for a DPoP nonce; sending the request again", "op", req.Op)
	}
}

// pushAuthorization sends the authorization request in authURL to the
// realm's PAR endpoint (RFC 9126), authenticated as every request is and
// with a DPoP proof when the key has one, and returns the short URL the
// browser opens instead: client_id and request_uri.
func (c *Client) pushAuthorization(ctx context.Context, conn Connection, ca ClientAuth, ep Endpoints, authURL string) (string, error) {
	const op = "par"
	u, err := url.Parse(authURL)
	if err != nil {
		return "", &Error{Kind: KindConfig, Op: op, Msg: "the authorization URL does not parse", Err: err}
	}
	resp, err := c.sendProved(ctx, conn, ca, formRequest{Op: op, Endpoint: ep.PAR, Form: u.Query()})
	if err != nil {
		return "", err
	}
	if !resp.ok() {
		return "", c.nameTheSwitch(ctx, conn, ca, resp.refusal(op, ca.secrets(conn)))
	}
	var pushed struct {
		RequestURI string `json:"request_uri"`
	}
	if json.Unmarshal(resp.Body, &pushed) != nil || pushed.RequestURI == "" {
		return "", &Error{Kind: KindMalformedResponse, Op: op, Msg: "the PAR endpoint answered without a request_uri", Hint: "turn pushing off with {{par=false}}, or check the realm"}
	}
	q := url.Values{"client_id": {conn.ClientID}, "request_uri": {pushed.RequestURI}}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// nameTheSwitch rewrites a refusal caused by a hardened realm's switch so
// that its one line names the switch and the flag that meets it
// (switchRefusals): DPoP required, PAR required, a refused client assertion
// or certificate. Other refusals keep their line, less the guess that a
// scope is missing when the request carried one.
//
// What the realm takes (DPoP, client authentication methods) is read from
// its discovery document, fetched now if no request fetched it before (a
// key with an auth URL goes straight to Keycloak's token path): one more
// request, on a refusal only.
func (c *Client) nameTheSwitch(ctx context.Context, conn Connection, ca ClientAuth, e *Error) *Error {
	if e == nil {
		return nil
	}
	if _, ok := c.cachedEndpoints(conn); !ok && conn.IssuerURL() != "" {
		_, _, _ = c.discoverAny(ctx, conn) // a realm without discovery says nothing of its switches
	}
	h := c.hardeningOf(conn)
	m := ca.method(conn)
	if m == "" {
		m = c.LearnedClientAuth(conn)
	}
	a := attempt{op: e.Op, method: m, secret: ca.Secret != "", key: ca.Key != nil, cert: ca.Cert != nil, dpop: ca.DPoP != nil,
		noPAR: conn.NoPAR, dpopCapable: len(h.DPoPAlgs) > 0, realmMethods: knownMethods(h.AuthMethods)}
	if i := firstRefusal(switchRefusals, a, said{e.Status, e.Code, e.Description}); i >= 0 {
		switchRefusals[i].apply(e, a)
		if ca.Assertion != nil {
			_ = nameSource(e, clientAssertion, ca.Assertion.From)
		}
		return e
	}
	if len(conn.Scopes) > 0 {
		e.withoutScopeCause() // the request carried a scope
	}
	return e
}
