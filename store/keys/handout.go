package keys

import (
	"cmp"
	"fmt"
	"os"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store/audit"
)

// HandOut says that a token leaves shipkey, and how: the service records it
// in the audit trail (Options.Audit) before the caller hands it over, one
// entry for each hand-out.
type HandOut struct {
	What audit.What
	// Via is the way it goes (audit.Entry.Via): the command, the socket,
	// the app.
	Via string
	// To describes the receiver, asked when the entry is written; nil: the
	// service's Options.Receiver.
	To func() audit.Receiver
}

// Record writes the hand-out of token (an access token of the key name, or
// one exchanged for x) to the audit trail. It does nothing when the
// trail is off. Its error means the entry could not be written: the token
// must not be handed out (every hand-out has an entry).
func (s *Service) Record(name string, x auth.Exchange, h HandOut, token string) error {
	if s.audit == nil || token == "" {
		return nil
	}
	to := s.receiver
	if h.To != nil {
		to = h.To
	}
	e := audit.Entry{Time: s.now(), Key: name, Audience: cmp.Or(x.Audience, x.Resource), What: h.What, Via: h.Via,
		Fingerprint: audit.Fingerprint(token), By: os.Getpid()}
	if to != nil {
		e.To = to()
	}
	if _, err := s.audit.Append(e); err != nil {
		return fmt.Errorf("the audit trail in %s cannot be written (%v): the token was not handed out; fix the directory (space, permissions) or turn the trail off with SHIPKEY_AUDIT=off", s.audit.Dir(), err)
	}
	return nil
}

// Audit is the audit trail the service records in; nil when it is off.
func (s *Service) Audit() *audit.Log { return s.audit }

// RecordApp records what the app hands out of the key label's own access
// token (a copy, a reveal), received by the service's receiver (the app
// itself): the app's Backend records through it (tui's handOutRecorder).
func (s *Service) RecordApp(label string, what audit.What, token string) error {
	return s.Record(label, auth.Exchange{}, HandOut{What: what, Via: "app " + string(what)}, token)
}
