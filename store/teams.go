package store

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// TeamConn is one [[teams]] table of config.toml: how this machine reaches a
// team's etcd cluster. It holds no secret: the member identity and the etcd
// password live in the secrets backend (see PutSecret), under TeamSecretID.
type TeamConn struct {
	Name      string   `toml:"name"`
	Endpoints []string `toml:"etcd"`
	CA        string   `toml:"etcd_ca,omitempty"`   // PEM file that signs the servers' certificates
	Cert      string   `toml:"etcd_cert,omitempty"` // client certificate (PEM file)
	Key       string   `toml:"etcd_key,omitempty"`  // its private key (PEM file)
	User      string   `toml:"etcd_user,omitempty"` // etcd RBAC user; the password is a secret
	// Timeout bounds every etcd round trip of a command ("3s"); empty: the
	// team engine's default.
	Timeout string `toml:"timeout,omitempty"`
	// Insecure allows plain http:// endpoints that are not loopback (the etcd
	// password and every request in the clear): --etcd-insecure.
	Insecure bool `toml:"etcd_insecure,omitempty"`
	// Recipient is this machine's age recipient in the team (public).
	Recipient string    `toml:"recipient"`
	JoinedAt  time.Time `toml:"joined_at"`
}

// TeamSecretID is the secrets-backend id under which a team's local secrets
// (member identity, etcd password) are kept.
func TeamSecretID(team string) string { return "team-" + team }

// ValidTeamName reports whether name can name a team: letters, digits, - and
// _, at most 40, so that "T/LABEL" splits at the first slash and the name can
// name a file and an etcd prefix.
func ValidTeamName(name string) bool {
	return len(name) <= 40 && validID(name)
}

// Teams lists the teams this machine belongs to (config.toml), by name.
// They are read from the index, which records them whenever it is rebuilt
// from config.toml: a hand edit is seen as any other (index.go), and a
// config.toml of 100,000 keys is not parsed to find a team.
func (s *Store) Teams() ([]TeamConn, error) {
	var teams []TeamConn
	err := s.view(func(t *tx) (err error) {
		teams, err = t.teams()
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(teams, func(a, b TeamConn) int { return strings.Compare(a.Name, b.Name) })
	return teams, nil
}

// Team is the connection of one team; the error wraps ErrNotFound when this
// machine has not joined it.
func (s *Store) Team(name string) (TeamConn, error) {
	teams, err := s.Teams()
	if err != nil {
		return TeamConn{}, err
	}
	for _, t := range teams {
		if t.Name == name {
			return t, nil
		}
	}
	return TeamConn{}, text.Errorf("no team %s on this machine (shipkey team ls; shipkey team join %s --etcd URL): %w", name, text.ShellQuote(name), ErrNotFound)
}

// PutTeam records (or replaces) a team's connection in config.toml.
func (s *Store) PutTeam(ctx context.Context, tc TeamConn) error {
	if !ValidTeamName(tc.Name) {
		return text.Errorf("team name %q: use letters, digits, - and _ (at most 40)", text.Sanitize(tc.Name))
	}
	return s.update(ctx, func(t *tx) error {
		cfg, err := t.config()
		if err != nil {
			return err
		}
		cfg.Teams = slices.DeleteFunc(cfg.Teams, func(c TeamConn) bool { return c.Name == tc.Name })
		cfg.Teams = append(cfg.Teams, tc)
		t.cfgDirty = true
		return nil
	})
}

// DropTeam forgets a team's connection and its local secrets.
func (s *Store) DropTeam(ctx context.Context, name string) error {
	err := s.update(ctx, func(t *tx) error {
		cfg, err := t.config()
		if err != nil {
			return err
		}
		cfg.Teams = slices.DeleteFunc(cfg.Teams, func(c TeamConn) bool { return c.Name == name })
		t.cfgDirty = true
		return nil
	})
	if err != nil {
		return err
	}
	return s.DeleteSecret(TeamSecretID(name))
}

// TeamSecrets are a team member's local secrets.
type TeamSecrets struct {
	Identity     string // the member's age X25519 identity (AGE-SECRET-KEY-1…)
	EtcdPassword string // etcd RBAC password, when the team uses a user
}

// PutTeamSecrets keeps a team's local secrets in the secrets backend in use,
// so the unlock-once session covers them.
func (s *Store) PutTeamSecrets(team string, ts TeamSecrets) error {
	b, err := s.prepare()
	if err != nil {
		return err
	}
	return b.Set(TeamSecretID(team), keySecrets{ClientSecret: ts.Identity, Password: ts.EtcdPassword})
}

// TeamSecrets reads a team's local secrets; the error wraps
// ErrSecretsMissing when the backend does not hold them.
func (s *Store) TeamSecrets(team string) (TeamSecrets, error) {
	b, err := s.prepare()
	if err != nil {
		return TeamSecrets{}, err
	}
	sec, ok, err := b.Get(TeamSecretID(team))
	if err != nil {
		return TeamSecrets{}, err
	}
	if !ok || sec.ClientSecret == "" {
		return TeamSecrets{}, &keyError{
			msg:  text.Cleanf("team %s: this machine's member identity is missing from the %s backend; join again (shipkey team join %s --etcd URL)", team, b.Name(), text.ShellQuote(team)).String(),
			kind: ErrSecretsMissing,
		}
	}
	return TeamSecrets{Identity: sec.ClientSecret, EtcdPassword: sec.Password}, nil
}

// DeleteSecret removes what the backend in use keeps under id.
func (s *Store) DeleteSecret(id string) error {
	b, err := s.prepare()
	if err != nil {
		return err
	}
	return b.Delete(id)
}

// StateDir is the store's state directory (team caches live under it).
func (s *Store) StateDir() string { return s.stateDir }

// WarnWriter is where the store says warnings.
func (s *Store) WarnWriter() io.Writer { return s.warn }
