package team

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Trust: who may change a team. Every member has an Ed25519 signing key
// beside its age identity (derived from it, so nothing more is kept); the
// roster lists both public halves and is signed by a member of the roster
// before it; every item (key definition, token set, catalog entry) is signed
// together with its team, kind, id and the roster version it was written
// for. A machine pins the roster it accepted and takes a new one only when
// a chain of rosters, each signed by a member of the one before, leads to it
// from the pinned one with higher versions. What fails is refused with
// ErrForged before anything is decrypted.

// ErrForged: etcd holds data no member wrote (a roster not signed by a member
// of the pinned one, an older roster, an item signed by a non-member or for
// another place). Nothing refused is decrypted, used, cached or sent.
var ErrForged = errors.New("etcd holds data no member wrote")

// rosterFormat marks a signed roster; an unsigned one (a JSON list, written
// by shipkey before signatures) has none.
const rosterFormat = "shipkey-roster-2"

// SigningKey is the member's Ed25519 key, derived from its age identity
// (AGE-SECRET-KEY-1…) with HKDF-SHA256 under its own label, so that one
// secret is kept per team and the two keys are independent.
func SigningKey(ageIdentity string) (ed25519.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, []byte(ageIdentity), nil, "shipkey team signing key v1", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// EncodeSigningKey is a public signing key as the roster holds it.
func EncodeSigningKey(pub ed25519.PublicKey) string { return base64.RawURLEncoding.EncodeToString(pub) }

func decodeSigningKey(s string) (ed25519.PublicKey, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(b), true
}

// Fingerprint is a signing key's fingerprint as ssh shows a host key's:
// SHA256: and the unpadded base64 of its hash. People compare it out of band.
func Fingerprint(signingKey string) string {
	pub, ok := decodeSigningKey(signingKey)
	if !ok {
		return "(none)"
	}
	sum := sha256.Sum256(pub)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// Fingerprint is the member's signing key's.
func (m Member) Fingerprint() string { return Fingerprint(m.SigningKey) }

// MemberCard is what `team join` prints and `team add` takes: the age
// recipient, the signing key and, when known, the host's name and the etcd
// user the machine connects as: "age1…:KEY[:NAME[:ETCDUSER]]".
func MemberCard(recipient, signingKey, name, etcdUser string) string {
	if name == "" || strings.ContainsAny(name, ": \t\r\n") {
		name = ""
	}
	if etcdUser == "" || strings.ContainsAny(etcdUser, ": \t\r\n") {
		if name == "" {
			return recipient + ":" + signingKey
		}
		return recipient + ":" + signingKey + ":" + name
	}
	return recipient + ":" + signingKey + ":" + name + ":" + etcdUser
}

// ParseMemberCard splits a member card; a bare recipient (printed by a
// shipkey without signatures) is refused, saying to join again.
func ParseMemberCard(card string) (recipient, signingKey, name, etcdUser string, err error) {
	parts := strings.SplitN(strings.TrimSpace(card), ":", 4)
	if len(parts) < 2 {
		return "", "", "", "", errors.New("that is a bare recipient without a signing key: the machine joins again with this shipkey (shipkey team join) and sends the line it prints")
	}
	if _, ok := decodeSigningKey(parts[1]); !ok {
		return "", "", "", "", errors.New("the signing key after the first colon is damaged: copy the whole line `shipkey team join` printed")
	}
	if len(parts) >= 3 {
		name = parts[2]
	}
	if len(parts) == 4 {
		etcdUser = parts[3]
	}
	return parts[0], parts[1], name, etcdUser, nil
}

// RevokeAdvice is what `team remove` says about m's etcd credentials: a
// removed member that can still write to etcd can write an older roster
// back for machines that have not read the roster since (docs/teams.md,
// "Threat model"). localUser is the etcd user this machine connects as.
func RevokeAdvice(m Member, localUser string) string {
	const why = "while it can write to etcd it can put the team's older items back, and a machine that cannot read what it overwrote refuses to work (docs/teams.md, Threat model)"
	switch {
	case m.EtcdUser != "" && m.EtcdUser == localUser:
		return fmt.Sprintf("Revoke its etcd credentials now: it connects as etcd user %s, as this machine does: change that user's password (etcdctl user passwd %s) and give the new one to the other members; %s.", m.EtcdUser, m.EtcdUser, why)
	case m.EtcdUser != "":
		return fmt.Sprintf("Revoke its etcd credentials now: etcdctl user delete %s (or revoke its role); %s.", m.EtcdUser, why)
	case localUser != "":
		return fmt.Sprintf("Revoke its etcd credentials now (its etcd user, role or client certificate; the team does not know which: it joined without saying): if it connects as etcd user %s as this machine does, change that user's password (etcdctl user passwd %s); %s.", localUser, localUser, why)
	}
	return fmt.Sprintf("Revoke its etcd credentials now (its etcd user, role or client certificate; the team does not know which: it joined without saying); %s.", why)
}

// Roster is a team's member set at one version, as signed.
type Roster struct {
	Team    string   `json:"team"`
	Version int64    `json:"version"`
	Members []Member `json:"members"`
}

// signedRoster is a roster as stored: the body's exact bytes, signed.
type signedRoster struct {
	Format string `json:"format"`
	Body   []byte `json:"body"`
	Signer string `json:"signer"`
	Sig    []byte `json:"sig"`
}

func rosterMessage(body []byte) []byte {
	return append([]byte(rosterFormat+"\x00"), body...)
}

// SignRoster encodes r signed by key (a member of the roster before r, or
// of r itself for the first).
func SignRoster(r Roster, key ed25519.PrivateKey) ([]byte, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(signedRoster{Format: rosterFormat, Body: body, Signer: EncodeSigningKey(key.Public().(ed25519.PublicKey)), Sig: ed25519.Sign(key, rosterMessage(body))})
}

// IsUnsignedRoster reports whether data is a roster written before
// signatures (a plain JSON list of members).
func IsUnsignedRoster(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(data), []byte("["))
}

// ParseUnsignedRoster reads a roster written before signatures.
func ParseUnsignedRoster(data []byte) ([]Member, error) {
	var ms []Member
	err := json.Unmarshal(data, &ms)
	return ms, err
}

// ParseRoster checks data's signature and that it is team's, and returns
// the roster and its signer's key. Whether the signer may sign it is
// Accept's question.
func ParseRoster(team string, data []byte) (Roster, string, error) {
	var sr signedRoster
	if err := json.Unmarshal(data, &sr); err != nil || sr.Format != rosterFormat {
		return Roster{}, "", fmt.Errorf("the roster is damaged or not signed: %w", ErrForged)
	}
	pub, ok := decodeSigningKey(sr.Signer)
	if !ok || !ed25519.Verify(pub, rosterMessage(sr.Body), sr.Sig) {
		return Roster{}, "", fmt.Errorf("the roster's signature does not verify: %w", ErrForged)
	}
	var r Roster
	if err := json.Unmarshal(sr.Body, &r); err != nil {
		return Roster{}, "", fmt.Errorf("the roster is damaged: %w", ErrForged)
	}
	if r.Team != team {
		return Roster{}, "", fmt.Errorf("the roster is team %q's: %w", r.Team, ErrForged)
	}
	if r.Version < 1 || len(r.Members) == 0 {
		return Roster{}, "", fmt.Errorf("the roster has no version or no member: %w", ErrForged)
	}
	return r, sr.Signer, nil
}

// MemberBySigningKey is the member holding signing key k.
func (r Roster) MemberBySigningKey(k string) (Member, bool) {
	i := slices.IndexFunc(r.Members, func(m Member) bool { return m.SigningKey == k })
	if i < 0 {
		return Member{}, false
	}
	return r.Members[i], true
}

// HasRecipient reports whether recipient is a member's.
func (r Roster) HasRecipient(recipient string) bool {
	return slices.ContainsFunc(r.Members, func(m Member) bool { return m.Recipient == recipient })
}

// Accept decides whether a machine that pinned the roster pinned (nil: none
// yet, trust on first use of the founding roster) takes current (the
// stored bytes), given the older versions history returns (nil when absent).
// A higher version is taken only along a chain of rosters each signed by a
// member of the one before; the same version only as the very bytes pinned;
// a lower one never.
func Accept(team string, pinned []byte, current []byte, history func(version int64) []byte) (Roster, error) {
	cur, signer, err := ParseRoster(team, current)
	if err != nil {
		return Roster{}, err
	}
	var base Roster
	next := int64(1)
	if pinned != nil {
		if base, _, err = ParseRoster(team, pinned); err != nil {
			return Roster{}, fmt.Errorf("this machine's pinned roster is damaged (join again): %w", err)
		}
		switch {
		case cur.Version < base.Version:
			return Roster{}, fmt.Errorf("the roster is v%d, older than v%d this machine pinned (a rollback): %w", cur.Version, base.Version, ErrForged)
		case cur.Version == base.Version:
			if !bytes.Equal(pinned, current) {
				return Roster{}, fmt.Errorf("the roster v%d differs from the v%d this machine pinned: %w", cur.Version, base.Version, ErrForged)
			}
			return cur, nil
		}
		next = base.Version + 1
	}
	for v := next; v <= cur.Version; v++ {
		data, s, r := current, signer, cur
		if v < cur.Version {
			if data = history(v); data == nil {
				return Roster{}, fmt.Errorf("roster v%d cannot be traced to the v%d this machine pinned (v%d is missing): %w", cur.Version, next-1, v, ErrForged)
			}
			if r, s, err = ParseRoster(team, data); err != nil {
				return Roster{}, err
			}
			if r.Version != v {
				return Roster{}, fmt.Errorf("roster history v%d holds v%d: %w", v, r.Version, ErrForged)
			}
		}
		if v == 1 {
			base = r // the founding roster signs itself
		}
		if _, ok := base.MemberBySigningKey(s); !ok {
			return Roster{}, fmt.Errorf("roster v%d is signed by %s, no member of v%d: %w", v, Fingerprint(s), base.Version, ErrForged)
		}
		base = r
	}
	return cur, nil
}

// signedItem is an item as stored: its age ciphertext, signed with where it
// belongs and its sequence number (Seq: greater than the one of every record
// of the same item before it; 0 in a record written before sequence
// numbers, signed without one).
type signedItem struct {
	Signer string `json:"signer"`
	Roster int64  `json:"roster"`
	Seq    int64  `json:"seq,omitempty"`
	Sig    []byte `json:"sig"`
	Data   []byte `json:"data"`
}

func itemMessage(team, kind, id string, roster, seq int64, data []byte) []byte {
	h := sha256.Sum256(data)
	if seq == 0 { // a record of a shipkey before sequence numbers
		return []byte("shipkey-item-1\x00" + team + "\x00" + kind + "\x00" + id + "\x00" + strconv.FormatInt(roster, 10) + "\x00" + string(h[:]))
	}
	return []byte("shipkey-item-2\x00" + team + "\x00" + kind + "\x00" + id + "\x00" + strconv.FormatInt(roster, 10) + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + string(h[:]))
}

// SignItem wraps data (an item's ciphertext) signed for team, kind and id at
// roster version, with sequence number seq (>0: higher than every record of
// the item before it).
func SignItem(team, kind, id string, roster, seq int64, data []byte, key ed25519.PrivateKey) []byte {
	out, _ := json.Marshal(signedItem{Signer: EncodeSigningKey(key.Public().(ed25519.PublicKey)), Roster: roster, Seq: seq, Data: data,
		Sig: ed25519.Sign(key, itemMessage(team, kind, id, roster, seq, data))})
	return out
}

// ErrBehind: a member signed something for a roster newer than the one this
// machine holds, or etcd's roster was written again since this machine
// pinned it, and the newer roster cannot be read: this machine may be
// behind a change of members (a removal) and hands out, renews and encrypts
// nothing. The CLI gives it the exit code of an unavailable etcd.
var ErrBehind = errors.New("this machine may be behind the team's roster")

// BehindError is an item a member of the pinned roster signed for the
// later roster Version: the machine reads that roster through the chain
// before it trusts anything of the team.
type BehindError struct {
	What    string // "token <id>"
	Version int64
	Pinned  int64
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("%s is signed for roster v%d, after the v%d this machine pinned", e.What, e.Version, e.Pinned)
}
func (e *BehindError) Unwrap() error { return ErrBehind }

// OpenItem returns the ciphertext of a signed item and its sequence number
// after checking that a member of r signed it for this team, kind and id
// at a version no later than r's. An item a member of r signed for a later
// version is a *BehindError (ErrBehind): r is not the team's roster any
// more.
func OpenItem(team, kind, id string, r Roster, value []byte) ([]byte, int64, error) {
	var it signedItem
	if err := json.Unmarshal(value, &it); err != nil || it.Signer == "" || it.Seq < 0 {
		return nil, 0, fmt.Errorf("%s %s is not signed: %w", kind, id, ErrForged)
	}
	pub, _ := decodeSigningKey(it.Signer)
	verified := pub != nil && ed25519.Verify(pub, itemMessage(team, kind, id, it.Roster, it.Seq, it.Data), it.Sig)
	_, member := r.MemberBySigningKey(it.Signer)
	switch {
	case it.Roster > r.Version && member && verified:
		return nil, 0, &BehindError{What: kind + " " + id, Version: it.Roster, Pinned: r.Version}
	case !member:
		return nil, 0, fmt.Errorf("%s %s is signed by %s, no member of roster v%d: %w", kind, id, Fingerprint(it.Signer), r.Version, ErrForged)
	case it.Roster > r.Version:
		return nil, 0, fmt.Errorf("%s %s is signed for roster v%d, after v%d: %w", kind, id, it.Roster, r.Version, ErrForged)
	case !verified:
		return nil, 0, fmt.Errorf("%s %s: the signature does not verify (or it was moved from elsewhere): %w", kind, id, ErrForged)
	}
	return it.Data, it.Seq, nil
}

// ItemSeq is the sequence number a stored item carries (0: none, or not an
// item); unverified: for the writer's own records.
func ItemSeq(value []byte) int64 {
	var it signedItem
	if json.Unmarshal(value, &it) != nil {
		return 0
	}
	return it.Seq
}
