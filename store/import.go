package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// ImportKey is one key for Import: its definition, its secrets and, when it
// has one, its token set.
type ImportKey struct {
	Label string
	// Definition is taken whole: a field added to it is imported with no
	// change here.
	Definition
	ClientSecret string
	Password     string         // kept only with RememberPassword
	Token        *auth.TokenSet // nil: no token yet
	CreatedAt    time.Time      // zero: now
	LastUsed     time.Time
}

// Import adds many keys at once: one locked transaction, config.toml
// written once, the secrets written together (one file-system sync for the
// file backends). No grant is run and nothing is sent to a server: the
// token sets are taken as given. It is the path for restoring a backup and
// for generating large stores (store/storetest). Labels are checked as
// Create checks them; a label already taken, or given twice, is an error
// and nothing is imported. The first key of an empty store becomes its
// default.
func (s *Store) Import(ctx context.Context, keys []ImportKey) error {
	if len(keys) == 0 {
		return nil
	}
	entries := make([]keyEntry, len(keys))
	states := make([]keyState, len(keys))
	secrets := make(map[string]keySecrets, len(keys))
	labels := make(map[string]bool, len(keys))
	now := s.now().UTC().Truncate(time.Second)
	for i, k := range keys {
		label, err := cleanLabel(k.Label)
		if err != nil {
			return fmt.Errorf("key #%d: %w", i+1, err)
		}
		if labels[label] {
			return fmt.Errorf("key #%d: the label %s is given twice", i+1, quoteLabel(label))
		}
		labels[label] = true
		if err := k.Connection.Validate(); err != nil {
			return fmt.Errorf("key %s: %w", quoteLabel(label), err)
		}
		if _, err := auth.GrantFor(k.Grant); err != nil {
			return fmt.Errorf("key %s: %w", quoteLabel(label), err)
		}
		if k.Grant.Or() == auth.GrantPassword && strings.TrimSpace(k.Username) == "" {
			return fmt.Errorf("key %s: the username is empty", quoteLabel(label))
		}
		id, err := newID()
		if err != nil {
			return err
		}
		created := k.CreatedAt
		if created.IsZero() {
			created = now
		}
		entries[i] = keyEntry{ID: id, Label: label, Definition: k.Definition, CreatedAt: created.UTC().Truncate(time.Second)}
		sec := keySecrets{ClientSecret: k.ClientSecret}
		if k.RememberPassword {
			sec.Password = k.Password
		}
		ks := keyState{LastUsed: k.LastUsed}
		if k.Token != nil {
			sec.setTokens(k.Token)
			ks.setToken(k.Token)
		}
		sec.bind(id, ks)
		secrets[id] = sec
		states[i] = ks
	}
	b, err := s.prepare()
	if err != nil {
		return err
	}
	wrote := false
	err = s.update(ctx, func(t *tx) error {
		for _, e := range entries {
			if _, taken, err := t.byLabel(e.Label); err != nil {
				return err
			} else if taken {
				return labelTakenError(e.Label)
			}
		}
		wrote = true
		if bs, ok := b.(batchSetter); ok {
			if err := bs.setMany(secrets); err != nil {
				return err
			}
		} else {
			for id, sec := range secrets {
				if err := b.Set(id, sec); err != nil {
					return err
				}
			}
		}
		if b.Name() == BackendFile {
			s.warnFallback()
		}
		for i, e := range entries {
			states[i].Secrets = b.Name()
			if err := t.putState(e.ID, states[i]); err != nil {
				return err
			}
		}
		return t.addKeys(entries...)
	})
	if err != nil && wrote {
		var errs []error
		for id := range secrets {
			errs = append(errs, b.Delete(id))
		}
		return errors.Join(append([]error{err}, errs...)...)
	}
	return err
}
