package keys

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// A key with an API URL sends its token (and its DPoP proofs) to that
// scheme, host and port only: a URL taken from an answer (a pagination
// link, a Location, a pre-signed download) names any host, and the key's
// token is no business of another. Another origin is refused before any
// token is read, unless the caller allows its host (api --allow-host), as
// gh adds a token only for the request's own host and curl drops
// Authorization on a redirect to another host or port. A key without an
// API URL names no home: its calls go where they are sent. Every request
// of the client is checked, redirects included (each goes through the
// transport again).

// HostRefusedError is a request to another origin than the key's API URL.
type HostRefusedError struct {
	Label  string
	Origin string // the request's scheme://host:port
	Home   string // the key's API origin
	Host   string // the request's host (and port when not the scheme's)
}

func (e *HostRefusedError) Error() string {
	return text.Cleanf("API key %s sends its token to its API at %s only, not to %s; to allow it: --allow-host %s",
		e.Label, e.Home, e.Origin, text.ShellQuote(e.Host)).String()
}

// Origin is u's scheme://host:port, the port spelled out: two URLs with the
// same origin go to the same server.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// hostGuard refuses requests to another origin than home's, unless their
// host (or host:port) is allowed.
type hostGuard struct {
	next  http.RoundTripper
	label string
	home  *url.URL
	allow []string // lower-cased hosts or host:port
}

func (g *hostGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if Origin(req.URL) == Origin(g.home) {
		return g.next.RoundTrip(req)
	}
	host := strings.ToLower(req.URL.Host)
	if slices.Contains(g.allow, host) || slices.Contains(g.allow, strings.ToLower(req.URL.Hostname())) {
		return g.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, &HostRefusedError{Label: g.label, Origin: Origin(req.URL), Home: Origin(g.home), Host: host}
}

// guardHosts wraps c's transport with key's host guard when the key has
// an API URL.
func guardHosts(c *http.Client, key store.Key, allow []string) *http.Client {
	if key.APIURL == "" {
		return c
	}
	checked, err := store.CheckAPIURL(key.APIURL)
	home, perr := url.Parse(checked)
	if err != nil || perr != nil || home.Host == "" {
		return c // a broken api_url is said where a path is resolved against it
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	lower := make([]string, len(allow))
	for i, h := range allow {
		lower[i] = strings.ToLower(strings.TrimSpace(h))
	}
	guarded := *c
	guarded.Transport = &hostGuard{next: next, label: key.Label, home: home, allow: lower}
	return &guarded
}
