package store

import (
	"encoding/binary"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Every write of a key's state record (Last Used, tokens, logout) is
// numbered: state.db's changes bucket maps each change's sequence to the
// key's id, the last changesKept of them, and the stamp (stamp.go) carries
// the last sequence. A process that keeps the key list (the app) asks
// which keys changed since the stamp it last saw (ChangesSince) and reads
// those keys again, not all of them: at 100,000 keys another process's
// `shipkey token` every 2 s cost the idle app a quarter of a core when it
// read every key on every change.

// changesKept is how many changes state.db keeps; a reader further behind
// reads every key again.
const changesKept = 4096

// changesListed is the most keys ChangesSince lists; more changed keys are
// read faster by one walk of them all.
const changesListed = 512

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// noteChanged numbers a change of key id's state record, and forgets the
// changes beyond the last changesKept.
func (t *tx) noteChanged(id string) error {
	b, err := t.btx.CreateBucketIfNotExists(bucketChanges)
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	if err := b.Put(seqKey(seq), []byte(id)); err != nil {
		return err
	}
	return trimChanges(b, seq)
}

// trimChanges deletes the changes numbered seq-changesKept and before.
func trimChanges(b *bolt.Bucket, seq uint64) error {
	if seq <= changesKept {
		return nil
	}
	cutoff := seqKey(seq - changesKept)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && string(k) <= string(cutoff); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// noteAllChanged says that more changed than is numbered (states written in
// bulk by a rebuild): the sequence jumps past every reader's window, so
// each reads every key again.
func (t *tx) noteAllChanged() error {
	b, err := t.btx.CreateBucketIfNotExists(bucketChanges)
	if err != nil {
		return err
	}
	seq := b.Sequence() + changesKept + 1
	if err := b.SetSequence(seq); err != nil {
		return err
	}
	return trimChanges(b, seq)
}

// changeSeq is the last change's sequence (0: none yet).
func changeSeq(btx *bolt.Tx) uint64 {
	if b := btx.Bucket(bucketChanges); b != nil {
		return b.Sequence()
	}
	return 0
}

// Changes is what changed in the store since a stamp (ChangesSince).
type Changes struct {
	Stamp Stamp // the store's stamp now
	// Keys are the keys whose state (tokens, Last Used, logout) changed,
	// as they are now, in no order.
	Keys []Key
	// All: more changed than Keys (config.toml, a rebuilt or replaced
	// state.db, more changes than are kept or listed, a stamp this store
	// did not make): read every key again.
	All bool
}

// splitStamp reads a stamp made by readStamp: config.toml's fingerprint,
// state.db's last transaction id, the last change's sequence.
func splitStamp(st Stamp) (fp string, seq uint64, ok bool) {
	parts := strings.Split(string(st), ";")
	if len(parts) != 3 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(parts[2], 10, 64)
	return parts[0], seq, err == nil
}

// ChangesSince tells what changed since the stamp since: the keys whose
// state changed, read again (a few B-tree lookups each), or All. Its cost
// grows with the number of changes, not of keys.
func (s *Store) ChangesSince(since Stamp) (Changes, error) {
	fpSince, seqSince, ok := splitStamp(since)
	var ch Changes
	err := s.view(func(t *tx) (err error) {
		ch = Changes{All: true}
		if t.btx == nil {
			ch.Stamp = Stamp(fpAbsent + ";-;0")
			return nil
		}
		fp := string(t.meta(metaConfig))
		seq := changeSeq(t.btx)
		ch.Stamp = Stamp(appendTxStamp([]byte(fp+";"), t.btx))
		if !ok || fp != fpSince || seqSince > seq {
			return nil
		}
		ids, listed := t.changedIDs(seqSince, seq)
		if !listed {
			return nil
		}
		var found bool
		ch.Keys, found, err = t.keysOf(ids)
		if err != nil || !found {
			return err
		}
		ch.All = false
		return nil
	})
	return ch, err
}

// changedIDs are the ids of the keys whose state changed after sequence
// number since, up to seq, each once; listed is false when they cannot be
// listed (the changes forgotten, too far behind, or more than
// changesListed).
func (t *tx) changedIDs(since, seq uint64) (ids []string, listed bool) {
	if seq <= since {
		return nil, true
	}
	b := t.bucket(bucketChanges)
	if b == nil {
		return nil, false
	}
	c := b.Cursor()
	k, v := c.Seek(seqKey(since + 1))
	if k == nil || string(k) != string(seqKey(since+1)) {
		return nil, false // forgotten: too far behind
	}
	seen := map[string]bool{}
	for ; k != nil; k, v = c.Next() {
		if id := string(v); !seen[id] {
			if len(ids) == changesListed {
				return nil, false
			}
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, true
}

// keysOf are the keys of ids, read again; found is false when one is gone
// (config.toml changed). On an error or a key gone, keys are those read
// before.
func (t *tx) keysOf(ids []string) (keys []Key, found bool, err error) {
	def := t.defaultLabel()
	for _, id := range ids {
		e, ok, err := t.byID(id)
		if err != nil || !ok {
			return keys, false, err
		}
		k, err := t.key(e, def)
		if err != nil {
			return keys, false, err
		}
		keys = append(keys, k)
	}
	return keys, true, nil
}
