package team

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
)

// PinFileName is the roster this machine accepted last, in StateDir (the
// stored bytes): the trust anchor every later roster must chain to.
const PinFileName = "roster.pin"

// PinStateFileName holds, in StateDir, what a machine keeps beside its
// pinned roster (PinState). No secret.
const PinStateFileName = "pin.json"

// PinState is what a machine remembers of what it accepted, to tell a
// rollback and a frozen team from the team as it is:
//
//   - Roster and RosterRev: etcd's roster key held the pinned roster (its
//     bytes' SHA-256, hex) at mod revision RosterRev. Members write the
//     roster key only with a newer version, so the key at another revision
//     holding no newer roster means someone wrote it again: the machine
//     looks for what it replaced before it trusts anything (a removal
//     written back over, the freeze attack).
//   - Seen: the highest sequence number this machine accepted for each item
//     ("token/<id>", "key/<id>"); a record with a lower one is a rollback.
//
// A state for another roster than the one pinned (a kill between the two
// files, a pin of an older shipkey) knows no revision: the next read takes
// the roster key's.
type PinState struct {
	Roster    string           `json:"roster_sha256,omitempty"`
	RosterRev int64            `json:"roster_rev,omitempty"`
	Seen      map[string]int64 `json:"seen,omitempty"`
}

// RosterSum is the hash PinState.Roster holds of a pinned roster's bytes.
func RosterSum(pinned []byte) string {
	h := sha256.Sum256(pinned)
	return hex.EncodeToString(h[:])
}

// ReadPinState reads the state in dir (StateDir); a missing or damaged one
// is empty.
func ReadPinState(dir string) PinState {
	var ps PinState
	if b, err := os.ReadFile(filepath.Join(dir, PinStateFileName)); err == nil && json.Unmarshal(b, &ps) != nil {
		ps = PinState{}
	}
	if ps.Seen == nil {
		ps.Seen = map[string]int64{}
	}
	return ps
}

// PinnedRosterRev is the roster key's mod revision when it held the roster
// this machine pinned in dir; 0 when not known.
func PinnedRosterRev(dir string) int64 {
	pinned, err := os.ReadFile(filepath.Join(dir, PinFileName))
	if err != nil {
		return 0
	}
	ps := ReadPinState(dir)
	if ps.Roster != RosterSum(pinned) {
		return 0
	}
	return ps.RosterRev
}
