package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Default timeouts of the transport NewClient builds.
const (
	DefaultDialTimeout = 10 * time.Second
	DefaultTimeout     = 30 * time.Second
)

// errBodyTooLarge is returned by a response body that grew past MaxBodySize.
var errBodyTooLarge = fmt.Errorf("response body larger than %d bytes", MaxBodySize)

// errInsecureURL is returned, before anything is sent, for plain http to a
// host that is not loopback.
var errInsecureURL = errors.New("refusing plain http to a host that is not loopback")

// idleConnTimeout is how long the client keeps an idle connection for reuse:
// under the 5 s that many servers keep one open (Node's http.Server
// keepAliveTimeout, Apache's KeepAliveTimeout) and that the device grant
// polls at by default (RFC 8628 §3.2). A connection reused just as the server
// closes it fails a POST that was already on the wire (Go retries only
// idempotent requests): seen against oidc-provider as "the connection closed
// before an answer came" on a device poll.
const idleConnTimeout = 4 * time.Second

// buildHTTPClient returns the *http.Client auth uses: the caller's client (or a
// fresh one with timeouts, TLS 1.2+ and verification on, CAFile added to the
// system roots, proxies from the environment) wrapped in guardTransport.
// Redirects are never followed unless a caller-supplied client decides so.
func buildHTTPClient(opts Options, logger *slog.Logger) (*http.Client, error) {
	var hc http.Client
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	} else {
		timeout := opts.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		t, err := newBaseTransport(opts.DialTimeout, timeout, opts.CAFile)
		if err != nil {
			return nil, err
		}
		hc = http.Client{Timeout: timeout, Transport: t}
	}
	if hc.CheckRedirect == nil {
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &guardTransport{base: base, logger: logger, waiting: opts.Waiting}
	return &hc, nil
}

// newBaseTransport is the transport auth talks through: dialTimeout bounds
// connecting and the TLS handshake (default DefaultDialTimeout),
// headerTimeout the wait for an answer's headers; TLS 1.2+ with verification
// on, caFile's roots added to the system's, proxies from the environment.
func newBaseTransport(dialTimeout, headerTimeout time.Duration, caFile string) (*http.Transport, error) {
	if dialTimeout <= 0 {
		dialTimeout = DefaultDialTimeout
	}
	roots, err := rootPool(caFile)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: headerTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       idleConnTimeout,
	}, nil
}

// SetTimeout bounds every later request to d (the whole request, and the
// wait for the answer's headers on the transport auth built); d <= 0 keeps
// the current bound. Call it before the client is shared: it is not
// synchronized with requests in flight.
func (c *Client) SetTimeout(d time.Duration) {
	if d <= 0 {
		return
	}
	c.http.Timeout = d
	if g, ok := c.http.Transport.(*guardTransport); ok {
		if t, ok := g.base.(*http.Transport); ok {
			t = t.Clone()
			t.ResponseHeaderTimeout = d
			g.base = t
		}
	}
}

// Timeout is the bound of a whole request (0: none).
func (c *Client) Timeout() time.Duration { return c.http.Timeout }

// rootPool is the system roots plus the PEM certificates in caFile (nil, the
// system default, when caFile is empty).
func rootPool(caFile string) (*x509.CertPool, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, &Error{Kind: KindConfig, Msg: "cannot read the CA file " + caFile, Hint: "check the path of the PEM bundle", Err: err}
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &Error{Kind: KindConfig, Msg: "the CA file " + caFile + " holds no PEM certificate", Hint: "pass a PEM bundle (-----BEGIN CERTIFICATE-----)"}
	}
	return pool, nil
}

// guardTransport refuses plain http to remote hosts, caps response bodies at
// MaxBodySize and logs one debug line per request (method, URL without query,
// status). It never logs headers or bodies.
type guardTransport struct {
	base    http.RoundTripper
	logger  *slog.Logger
	waiting func() (done func()) // Options.Waiting; nil: nobody asks
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	logURL := req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
	if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && IsLoopback(req.URL.Hostname())) {
		if req.Body != nil {
			req.Body.Close()
		}
		g.logger.Debug("http request refused", "method", req.Method, "url", logURL)
		return nil, errInsecureURL
	}
	var done func()
	if g.waiting != nil {
		done = g.waiting()
	}
	resp, err := g.base.RoundTrip(req)
	if done != nil {
		done()
	}
	if err != nil {
		g.logger.Debug("http request", "method", req.Method, "url", logURL, "status", 0)
		return nil, err
	}
	g.logger.Debug("http request", "method", req.Method, "url", logURL, "status", resp.StatusCode)
	tr, _ := req.Context().Value(trackerKey{}).(*bodyTracker)
	if resp.ContentLength > MaxBodySize {
		resp.Body.Close()
		tr.markOver()
		return nil, errBodyTooLarge
	}
	tr.setContentType(resp.Header.Get("Content-Type"))
	resp.Body = &cappedBody{rc: resp.Body, tracker: tr}
	return resp, nil
}

// trackerKey is the context key of a *bodyTracker.
type trackerKey struct{}

// bodyTracker records, for a call whose body is read by code that hides the
// read error (x/oauth2 formats it with %v), whether the body went past
// MaxBodySize, and keeps its first bytes for a sanitized excerpt.
type bodyTracker struct {
	mu          sync.Mutex
	over        bool
	head        []byte
	contentType string
}

const headSize = 512

func (t *bodyTracker) markOver() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.over = true
	t.mu.Unlock()
}

func (t *bodyTracker) record(p []byte) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if n := headSize - len(t.head); n > 0 {
		if len(p) < n {
			n = len(p)
		}
		t.head = append(t.head, p[:n]...)
	}
	t.mu.Unlock()
}

func (t *bodyTracker) setContentType(ct string) {
	if t == nil {
		return
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	if len(ct) > 64 {
		ct = ct[:64]
	}
	t.mu.Lock()
	t.contentType = ct
	t.mu.Unlock()
}

// ContentType is the media type of the answer ("" when none came).
func (t *bodyTracker) ContentType() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.contentType
}

// Over reports whether the body went past MaxBodySize.
func (t *bodyTracker) Over() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.over
}

// Head is the first bytes of the body.
func (t *bodyTracker) Head() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.head...)
}

// cappedBody delivers at most MaxBodySize bytes; when the body holds more, the
// read that reaches the cap fails with errBodyTooLarge (even when the reader
// asked for exactly MaxBodySize bytes, as x/oauth2 does).
type cappedBody struct {
	rc      io.ReadCloser
	n       int64
	over    bool
	tracker *bodyTracker
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, errBodyTooLarge
	}
	if b.n >= MaxBodySize {
		if b.moreAvailable() {
			return 0, errBodyTooLarge
		}
		return 0, io.EOF
	}
	if rest := MaxBodySize - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.rc.Read(p)
	b.tracker.record(p[:n])
	b.n += int64(n)
	if b.n >= MaxBodySize && err == nil {
		if b.moreAvailable() {
			return n, errBodyTooLarge
		}
		return n, io.EOF
	}
	return n, err
}

// moreAvailable reads ahead one byte to see whether the body goes on past the
// cap, marking the body over when it does.
func (b *cappedBody) moreAvailable() bool {
	var one [1]byte
	for range 64 {
		k, err := b.rc.Read(one[:])
		if k > 0 {
			b.over = true
			b.tracker.markOver()
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// readBody reads a whole response body (already capped by guardTransport).
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, MaxBodySize+1))
}
