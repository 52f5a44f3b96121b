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
		label, err := checkImportKey(i, k, labels)
		if err != nil {
			return err
		}
		var sec keySecrets
		if entries[i], sec, states[i], err = importRecords(k, label, now); err != nil {
			return err
		}
		secrets[entries[i].ID] = sec
	}
	b, err := s.prepare()
	if err != nil {
		return err
	}
	wrote := false
	err = s.update(ctx, func(t *tx) error {
		if err := t.labelsFree(entries); err != nil {
			return err
		}
		wrote = true
		return s.importIn(t, b, entries, states, secrets)
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

// checkImportKey checks k, the key #i+1 of an import, as Create checks a
// new key, and that its label is not one of labels (the import's labels so
// far, which it joins). It returns the label cleaned.
func checkImportKey(i int, k ImportKey, labels map[string]bool) (string, error) {
	label, err := cleanLabel(k.Label)
	if err != nil {
		return "", fmt.Errorf("key #%d: %w", i+1, err)
	}
	if labels[label] {
		return "", fmt.Errorf("key #%d: the label %s is given twice", i+1, quoteLabel(label))
	}
	labels[label] = true
	if err := k.Connection.Validate(); err != nil {
		return "", fmt.Errorf("key %s: %w", quoteLabel(label), err)
	}
	if _, err := auth.GrantFor(k.Grant); err != nil {
		return "", fmt.Errorf("key %s: %w", quoteLabel(label), err)
	}
	if k.Grant.Or() == auth.GrantPassword && strings.TrimSpace(k.Username) == "" {
		return "", fmt.Errorf("key %s: the username is empty", quoteLabel(label))
	}
	return label, nil
}

// importRecords are what is stored of k under label, with a new id: its
// definition, its secrets (the password only with RememberPassword) and its
// state; a key without a creation time was created now.
func importRecords(k ImportKey, label string, now time.Time) (keyEntry, keySecrets, keyState, error) {
	id, err := newID()
	if err != nil {
		return keyEntry{}, keySecrets{}, keyState{}, err
	}
	created := k.CreatedAt
	if created.IsZero() {
		created = now
	}
	e := keyEntry{ID: id, Label: label, Definition: k.Definition, CreatedAt: created.UTC().Truncate(time.Second)}
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
	return e, sec, ks, nil
}

// importIn writes the imported keys' secrets to b, and their states and
// definitions in t.
func (s *Store) importIn(t *tx, b secretsBackend, entries []keyEntry, states []keyState, secrets map[string]keySecrets) error {
	if err := setSecrets(b, secrets); err != nil {
		return err
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
}

// labelsFree fails with labelTakenError when an entry's label is taken.
func (t *tx) labelsFree(entries []keyEntry) error {
	for _, e := range entries {
		if _, taken, err := t.byLabel(e.Label); err != nil {
			return err
		} else if taken {
			return labelTakenError(e.Label)
		}
	}
	return nil
}

// setSecrets writes secrets (by key id) to b: at once when b can.
func setSecrets(b secretsBackend, secrets map[string]keySecrets) error {
	if bs, ok := b.(batchSetter); ok {
		return bs.setMany(secrets)
	}
	for id, sec := range secrets {
		if err := b.Set(id, sec); err != nil {
			return err
		}
	}
	return nil
}
