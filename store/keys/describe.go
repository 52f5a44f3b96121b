package keys

import (
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// Subject names a key in what a command says of it, and says whom a change
// of it reaches, so that a command words its messages without asking where
// the key lives: a key of this machine is "API key L" and a change of it is
// this machine's; a team key is "team key T/L" and a change of it (a login,
// a logout, a new label or secret, its removal) is made for every member.
type Subject struct {
	// Label is the key's address (L, or T/L for a team key); Team is set
	// for a team key.
	Label, Team string
}

// SubjectOf is the subject of key k (a key of this machine, or a team key
// as the service lists it).
func SubjectOf(k store.Key) Subject { return Subject{Label: k.Label, Team: k.Team} }

// Subject is the subject of the key ref names.
func (r Ref) Subject() Subject { return Subject{Label: r.Label, Team: r.Team} }

// String is the key as a sentence names it: "API key L" or "team key T/L",
// the label cleaned for a terminal.
func (s Subject) String() string {
	if s.Team != "" {
		return "team key " + text.Safe(s.Label)
	}
	return "API key " + text.Safe(s.Label)
}

// Title is String at the start of a sentence: "API key L", "Team key T/L".
func (s Subject) Title() string {
	if s.Team != "" {
		return "Team key " + text.Safe(s.Label)
	}
	return s.String()
}

// Reach is whom a change of the key reached, as it ends a sentence: "" for
// a key of this machine, " for every member" for a team key.
func (s Subject) Reach() string {
	if s.Team != "" {
		return " for every member"
	}
	return ""
}

// SecretsBackend names where the key's secrets are kept, as status --json
// and keys show --json say it: the store's backend (keyring, file,
// plaintext; "" when none were written) for a key of this machine, "team"
// (the team's etcd) for a team key.
func SecretsBackend(k store.Key) string {
	if k.Team != "" {
		return "team"
	}
	return k.Secrets
}
