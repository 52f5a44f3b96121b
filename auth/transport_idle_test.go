package auth

import (
	"net/http"
	"testing"
	"time"
)

// The client drops idle connections before a server that keeps them 5 s
// would, and before the device grant's default 5 s poll reuses one: a POST
// on a connection the server is closing fails and is not retried.
func TestIdleConnectionsDroppedBeforeFiveSeconds(t *testing.T) {
	t.Parallel()
	hc, err := buildHTTPClient(Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := hc.Transport.(*guardTransport)
	if !ok {
		t.Fatalf("transport %T, want *guardTransport", hc.Transport)
	}
	tr, ok := g.base.(*http.Transport)
	if !ok {
		t.Fatalf("base transport %T, want *http.Transport", g.base)
	}
	if tr.IdleConnTimeout <= 0 || tr.IdleConnTimeout >= 5*time.Second {
		t.Fatalf("IdleConnTimeout %v, want under the 5 s servers keep idle connections and the device grant polls at", tr.IdleConnTimeout)
	}
}
