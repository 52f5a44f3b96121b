package cli

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
)

// exchangeFlags are --audience, --resource, --scope and
// --requested-token-type: a token for another service, obtained by token
// exchange (RFC 8693) with the key's own token, instead of the key's own.
// The commands that hand out a token (token, header, api, curl, exec) share
// them.
type exchangeFlags struct {
	Audience           string
	Resource           string
	Scopes             []string
	RequestedTokenType string
}

// exchangeFlagsHelp is the help paragraph of the commands that take them.
const exchangeFlagsHelp = `With --audience AUD (or --resource URI), the token is not the key's own but
one for that other service (AUD: its client id at the realm), obtained by
token exchange (RFC 8693) with the key's token and client authentication;
--scope and --requested-token-type narrow what is asked. It is kept with the
key's secrets until it expires, then exchanged again; a server without
token exchange says so in one line (exit 1).`

// add defines the flags on fl; scope is false where the command already has
// a --scope of its own (token's, for --no-store), which then serves both.
func (x *exchangeFlags) add(fl *pflag.FlagSet, scope bool) {
	fl.StringVar(&x.Audience, "audience", "", "a token for this other service (its client id) by token exchange, not the key's own")
	fl.StringVar(&x.Resource, "resource", "", "a token for this resource URI by token exchange (RFC 8707)")
	if scope {
		fl.StringArrayVar(&x.Scopes, "scope", nil, "with --audience: the scopes to ask for (repeatable, or space-separated)")
	}
	fl.StringVar(&x.RequestedTokenType, "requested-token-type", "", "with --audience: the token type URN to ask for (default: an access token)")
}

// set reports whether a token exchange was asked for.
func (x exchangeFlags) set() bool { return x.Audience != "" || x.Resource != "" }

// check refuses --scope or --requested-token-type without an audience or
// resource.
func (x exchangeFlags) check(cmd *cobra.Command) error {
	switch {
	case x.set():
		return nil
	case x.RequestedTokenType != "":
		return usageErrorf("--requested-token-type goes with --audience or --resource (see: %s --help)", cmd.CommandPath())
	case len(x.Scopes) > 0:
		return usageErrorf("--scope goes with --audience or --resource: the key's own token has the key's scopes (see: %s --help)", cmd.CommandPath())
	}
	return nil
}

// exchange is what the flags ask for.
func (x exchangeFlags) exchange() auth.Exchange {
	var scopes []string
	for _, s := range x.Scopes {
		scopes = append(scopes, strings.Fields(s)...)
	}
	return auth.Exchange{Audience: x.Audience, Resource: x.Resource, Scopes: scopes, RequestedTokenType: x.RequestedTokenType}
}

// exchangeFromQuery reads a token socket's ?audience=, ?resource=, ?scope=
// and ?requested_token_type=; the zero Exchange when none is given.
func exchangeFromQuery(q url.Values) auth.Exchange {
	return exchangeFlags{
		Audience: q.Get("audience"), Resource: q.Get("resource"),
		Scopes: q["scope"], RequestedTokenType: q.Get("requested_token_type"),
	}.exchange()
}

// exchanged answers a token socket's request for a token exchange
// (?audience=…): the derived token as "token --json" prints it, cached as
// for the CLI, valid for at least minValid. min_valid is not capped below
// the derived token's life as the key's own is: a derived token no
// longer-lived than asked is exchanged again.
func (h *tokenHandler) exchanged(w http.ResponseWriter, r *http.Request, label string, x auth.Exchange, minValid time.Duration) {
	if err := x.Check(); err != nil {
		writeServeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	ts, err := h.svc.KeyToken(r.Context(), store.Key{Label: label}, keys.TokenOptions{Exchange: x, MinValid: minValid, HandOut: h.handOut(r)})
	if err != nil {
		status, code := serveErrorStatus(err)
		writeServeError(w, status, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = writeJSON(w, newTokenDoc(label, ts).exchanged(x))
}

// withExchange makes x the default of a token socket's requests (exec
// --serve --audience): one that names no audience or resource gets the
// token x asks for, as the command's $SHIPKEY_TOKEN is.
func withExchange(next http.Handler, x auth.Exchange) http.Handler {
	if x.IsZero() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if exchangeFromQuery(q).IsZero() {
			q.Set("audience", x.Audience)
			q.Set("resource", x.Resource)
			q["scope"] = x.Scopes
			q.Set("requested_token_type", x.RequestedTokenType)
			r = r.Clone(r.Context())
			r.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, r)
	})
}
