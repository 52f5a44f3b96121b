package cli

import (
	"time"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// newKeys is the key service (store/keys) a command works through, over st:
// engine is the team engine (nil in a program that links none: a team key
// then gets keys.ErrNoTeamEngine, and runWith hands the command on), its
// warnings go to ios's stderr, the secrets it hands out join secrets (the
// debug log hides them), and client builds its HTTP clients (nil: none).
// Its hand-outs go to the audit trail (auditTrail), received by the process
// that ran this one unless the command names another.
func newKeys(st *store.Store, engine func() (team.Engine, error), ios *iostreams, secrets *secretSet, now func() time.Time, client keys.ClientBuilder) *keys.Service {
	o := keys.Options{Store: st, Engine: engine, Now: now, Audit: auditTrail(st), Receiver: audit.Caller}
	if ios != nil {
		o.Warn = ios.ErrOut
	}
	if secrets != nil {
		o.Handled = secrets.Add
	}
	if client != nil {
		o.Client = client
	}
	return keys.New(o)
}

// engine is Team when this program links the team engine, nil otherwise:
// what newKeys takes.
func (f *factory) engine() func() (team.Engine, error) {
	if newTeamEngine == nil {
		return nil
	}
	return f.Team
}
