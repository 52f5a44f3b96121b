package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// A key's secret record carries, beside its secrets, its id and a copy of
// its state record (never a secret: the redacted token timing, the masked
// token, the logged-out flag, a pending session end). The id binds the file
// to its key: inside an age file it is authenticated with the ciphertext,
// in a plaintext file it is checked. The copy of the state lets a lost or
// damaged state.db be rebuilt from config.toml and the secret files, so that
// `status` and `token` agree afterwards.

// secretMeta is the copy of a key's state kept with its secrets.
type secretMeta struct {
	Token      auth.TokenSet `json:"token,omitzero"` // always Redacted
	Masked     string        `json:"masked,omitempty"`
	LoggedOut  bool          `json:"logged_out,omitempty"`
	NoRefresh  bool          `json:"no_refresh,omitempty"`
	EndPending time.Time     `json:"end_pending,omitzero"`
}

func metaOf(ks keyState) *storedMeta {
	return &storedMeta{m: &secretMeta{Token: ks.Token.Redacted(), Masked: ks.Masked, LoggedOut: ks.LoggedOut, NoRefresh: ks.NoRefresh, EndPending: ks.EndPending}}
}

// storedMeta is a secretMeta inside a secret record. Reading a record keeps
// it as its JSON text (syntax-checked with the record), decoded only when a
// rebuild asks (get): handing out a token never reads it, and decoding it
// (reflection over the whole TokenSet, cold in every process) was a tenth of
// a cached `shipkey token`'s own work. Written back unchanged when not
// replaced.
type storedMeta struct {
	raw json.RawMessage
	m   *secretMeta
}

func (sm *storedMeta) UnmarshalJSON(data []byte) error {
	sm.raw, sm.m = bytes.Clone(data), nil
	return nil
}

func (sm *storedMeta) MarshalJSON() ([]byte, error) {
	if sm.m != nil || len(sm.raw) == 0 {
		return json.Marshal(sm.m)
	}
	return sm.raw, nil
}

// get decodes the copy of the state (nil when there is none, or when it
// does not decode: the record's secrets are then used as those of a record
// written before the copy was kept).
func (sm *storedMeta) get() *secretMeta {
	if sm == nil {
		return nil
	}
	if sm.m == nil && len(sm.raw) > 0 {
		var m *secretMeta
		if json.Unmarshal(sm.raw, &m) == nil {
			sm.m = m
		}
	}
	return sm.m
}

// bind stamps a secret record with its key id and state before it is written.
func (sec *keySecrets) bind(id string, ks keyState) {
	sec.ID = id
	sec.Meta = metaOf(ks)
}

// checkBinding refuses a secret record that names another key: a file
// copied or swapped from another key never hands out that key's token. A
// record without an id (written before ids were bound) is accepted; it is
// bound on its next write.
func checkBinding(f keyFiles, id string, sec keySecrets) error {
	if sec.ID == "" || sec.ID == id {
		return nil
	}
	return fmt.Errorf("%s holds the secrets of another key (those of %s): it was copied or swapped; "+
		"put each file back under its own name, or remove the key and add it again",
		displayPath(f.path(id)), displayPath(f.path(sec.ID)))
}

// stateFromSecrets rebuilds a key's state record from its secret record.
func stateFromSecrets(sec keySecrets, backend string, now time.Time) keyState {
	ks := keyState{Secrets: backend}
	if m := sec.Meta.get(); m != nil {
		ks.Token, ks.Masked, ks.LoggedOut, ks.NoRefresh, ks.EndPending = m.Token.Redacted(), m.Masked, m.LoggedOut, m.NoRefresh, m.EndPending
		return ks
	}
	// Written before the state was kept with the secrets: the tokens are
	// there, their timing is not; the next refresh brings it back.
	if sec.AccessToken == "" && sec.RefreshToken == "" {
		ks.LoggedOut = true
		return ks
	}
	ks.setToken(&auth.TokenSet{TokenType: "Bearer", ObtainedAt: now, AccessToken: sec.AccessToken, RefreshToken: sec.RefreshToken})
	return ks
}

// restoreStates gives every key of config.toml that has no state record one
// rebuilt from its secrets (after state.db was lost, emptied or set aside),
// when they can be read without asking anything: plaintext files, the file
// backend while it is unlocked, the keyring or memory backend in use. A key
// whose secrets cannot be read now keeps no record; Token rebuilds it when
// it reads them.
//
// Keys left without a record are flagged in the meta bucket (metaRestore):
// the first process that unlocks the file backend restores them
// (finishRestore).
func (t *tx) restoreStates() error {
	st := t.bucket(bucketState)
	incomplete := false
	type restored struct {
		id string
		ks keyState
	}
	var found []restored
	for _, e := range t.cfg.Keys {
		if st != nil && st.Get([]byte(e.ID)) != nil {
			continue
		}
		ks, ok := t.s.stateFromBackends(e.ID)
		if !ok {
			incomplete = true
			continue
		}
		found = append(found, restored{e.ID, ks})
	}
	if len(found) > 0 {
		err := t.putSorted(bucketState, len(found), func(i int) ([]byte, []byte) {
			return []byte(found[i].id), encodeState(found[i].ks)
		})
		if err != nil {
			return err
		}
		if err := t.noteAllChanged(); err != nil {
			return err
		}
	}
	meta, err := t.btx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if incomplete {
		return meta.Put(metaRestore, []byte("1"))
	}
	return meta.Delete(metaRestore)
}

var metaRestore = []byte("restore")

// finishRestore restores the state records a rebuild could not (the file
// backend was locked then), now that it is unlocked.
func (s *Store) finishRestore(ctx context.Context) error {
	pending := false
	if err := s.view(func(t *tx) error { pending = t.meta(metaRestore) != nil; return nil }); err != nil || !pending {
		return err
	}
	return s.update(ctx, func(t *tx) error {
		if _, err := t.config(); err != nil {
			return err
		}
		return t.restoreStates()
	})
}

func (s *Store) stateFromBackends(id string) (keyState, bool) {
	for _, name := range []string{BackendPlaintext, BackendFile} {
		b := s.backends[name]
		f, ok := b.(interface{ files() keyFiles })
		if !ok || !fileExists(f.files().path(id)) {
			continue
		}
		if fb, ok := b.(*fileBackend); ok && !fb.unlockedNow() {
			return keyState{}, false
		}
		sec, found, err := b.Get(id)
		if err != nil || !found {
			return keyState{}, false
		}
		return stateFromSecrets(sec, name, s.now()), true
	}
	if s.choice != BackendKeyring && s.choice != BackendMemory && s.choice != BackendAuto {
		return keyState{}, false
	}
	b := s.backend() // auto: probed once, during a rebuild only
	if _, isFile := b.(*fileBackend); isFile {
		return keyState{}, false // no file for this key: nothing to read
	}
	sec, found, err := b.Get(id)
	if err != nil || !found {
		return keyState{}, false
	}
	return stateFromSecrets(sec, b.Name(), s.now()), true
}

// unlockedNow reports whether the identity is at hand without a prompt: in
// this process, or in the session (kernel keyring or agent).
func (b *fileBackend) unlockedNow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.follow != notFollowing {
		_, err := b.fromSession()
		return err == nil
	}
	if b.identity != nil {
		return true
	}
	sess := b.sess()
	if sess.err != nil {
		return false
	}
	wrapped, err := os.ReadFile(b.keyPath())
	if err != nil {
		return false
	}
	if id, ok := sess.load(identityCacheDesc(b.keyPath(), wrapped)); ok && b.identityOpens(id) {
		b.identity = id
		return true
	}
	return false
}
