// Package keys is the key service: it turns a key address (a label of this
// machine, TEAM/LABEL, SHIPKEY_KEY, the default key) into the key, its
// token, its DPoP proof signer and an HTTP client that carries them, for a
// key of this machine and a team key alike; and it logs keys in and out,
// renames and removes them, makes one the default and replaces a client
// secret. The CLI's commands and the app's screens ask it and never branch
// on where a key lives (cli/cli's factory hands its commands an
// authenticated HttpClient the same way: pkg/cmd/factory/default.go).
//
// It never prints, prompts or reads standard input: what to ask a person
// and how to print what happened is the caller's. What differs between a
// key of this machine and a team key in what a command says is the
// service's: a Subject names the key and whom a change reached, and a
// change's result says what was done. It knows no team engine of
// its own: Options.Engine hands one over, and a program that links none gets
// ErrNoTeamEngine for a team key (cmd/shipkey then hands the command to
// shipkey-team).
package keys

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/team"
)

// ErrNoTeamEngine: a team key (or a team) needs the team engine and this
// program links none (cmd/shipkey; its caller hands the command on to the
// program that does).
var ErrNoTeamEngine = errors.New("this shipkey was built without the team engine")

// UsageError is a request the service refuses for the key it names: a team
// key asked for what only a key of this machine has (a forced renewal, a
// token exchange, a DPoP proof, the default). The CLI exits 2 with it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: text.Cleanf(format, args...).String()}
}

// ClientBuilder builds the HTTP client that sends the tokens source hands
// out, signing a DPoP proof per request with dpop when it is not nil
// (auth.NewAPIClient with the program's CA roots, timeouts and log).
type ClientBuilder func(source auth.APISource, dpop *auth.DPoPKey) (*http.Client, error)

// Options configure a Service.
type Options struct {
	Store *store.Store // required
	// Engine returns the team engine; nil: this program links none, and a
	// team key gets ErrNoTeamEngine.
	Engine func() (team.Engine, error)
	Now    func() time.Time // default time.Now
	// Warn takes the one-line warnings of a token handed out (a --min-valid
	// the server's tokens cannot meet; a team listed from its cache); nil
	// discards them.
	Warn io.Writer
	// Handled is told of every secret the service hands out or takes (the
	// debug log hides them); nil: nobody.
	Handled func(secrets ...string)
	// Client builds the HTTP clients of Client; nil: Client fails.
	Client ClientBuilder
	// Audit is the audit trail each hand-out is recorded in (HandOut);
	// nil: none is.
	Audit *audit.Log
	// Receiver describes who takes a hand-out that names none (the calling
	// process: audit.Caller); nil: an entry names no receiver.
	Receiver func() audit.Receiver
}

// Service is the key service over one store (and the teams it joined).
type Service struct {
	st      *store.Store
	engine  func() (team.Engine, error)
	now     func() time.Time
	warn    io.Writer
	handled func(...string)
	client  ClientBuilder
	// audit and receiver record hand-outs (handout.go).
	audit    *audit.Log
	receiver func() audit.Receiver
	// gen counts team changes seen (Watch) and made (so the app's Stamp
	// changes with them).
	gen atomic.Int64
}

// New returns the service over opts.Store.
func New(opts Options) *Service {
	s := &Service{st: opts.Store, engine: opts.Engine, now: opts.Now, warn: opts.Warn, handled: opts.Handled, client: opts.Client,
		audit: opts.Audit, receiver: opts.Receiver}
	if s.now == nil {
		s.now = time.Now
	}
	if s.warn == nil {
		s.warn = io.Discard
	}
	if s.handled == nil {
		s.handled = func(...string) {}
	}
	return s
}

// Store is the store the service works on.
func (s *Service) Store() *store.Store { return s.st }

// Engine is the team engine (ErrNoTeamEngine in a program without one).
func (s *Service) Engine() (team.Engine, error) {
	if s.engine == nil {
		return nil, ErrNoTeamEngine
	}
	return s.engine()
}

// EngineLinked reports whether this program links the team engine.
func (s *Service) EngineLinked() bool { return s.engine != nil }

// tokens tells Handled of a token set's secrets.
func (s *Service) tokens(ts *auth.TokenSet) {
	if ts != nil {
		s.handled(ts.AccessToken, ts.RefreshToken, ts.IDToken)
	}
}
