package store

import (
	"errors"
	"fmt"
	"os"

	"filippo.io/age"
)

// Following the session: a long-running process (serve) must not outlive
// the unlock it started with. Once it calls FollowSession, its copy of the
// file backend's identity is only a cache of the session's: before each
// use the session (kernel keyring or agent) is asked again, which counts
// as a use and extends the idle timeout as any process's use does; when
// the session no longer keeps the unlock (SHIPKEY_UNLOCK_TIMEOUT without
// use, the maximum age after the unlock, `shipkey lock`) the copy is
// dropped, and it is taken again from the session after the next
// `shipkey unlock`. No passphrase is asked, read or kept after that call:
// only a person unlocks again. The timeouts are the session's own
// (store/unlock), so a follower and every other process see one unlock.

// ErrSessionLocked is the error of a process that follows the session
// (FollowSession) once the session no longer keeps the unlock: `shipkey
// unlock` unlocks it again. It also matches ErrBackendLocked.
var ErrSessionLocked = errors.New("store locked")

// followState is where a file backend stands with the session.
type followState int

const (
	notFollowing      followState = iota // the identity stays for the process's life
	followingUnlocked                    // the session keeps the unlock; so does this process
	followingLocked                      // the session no longer keeps it; neither does this process
)

// FollowSession binds this process's unlock of the file backend to the
// session's from now on (see above). changed, when not nil, is told each
// change seen at a use of the secrets: locked true when the session no
// longer keeps the unlock (once per lock), false when it does again; it
// runs under the backend's lock and must not call the Store. Tokens this
// Store hands out are remembered in memory (access tokens only, never a
// refresh token or a secret of the key) and handed out again while the
// session is locked, as long as they are valid for what is asked: a lock
// stops renewals, not the tokens already given out.
//
// It reports whether the process follows the session; when it does not,
// why (the identity then stays in this process until it ends): no session
// keeps unlocks (SHIPKEY_UNLOCK_TIMEOUT=0, SHIPKEY_UNLOCK_MECH=none, or no
// keyring and no agent here), or this unlock could not be kept. Backends
// other than the file need no unlock: false and "".
func (s *Store) FollowSession(changed func(locked bool)) (bool, string) {
	b := s.fileBackend()
	if b == nil || s.backend() != secretsBackend(b) {
		return false, ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	sess := b.sess()
	if sess.err != nil {
		return false, sess.err.Error()
	}
	if sess.mechanism() == MechNone {
		return false, "nothing keeps unlocks: " + sess.noneWhy()
	}
	if b.identity != nil {
		if _, err := b.sessionIdentity(sess); err != nil {
			sess.mu.Lock()
			why := sess.lastErr
			sess.mu.Unlock()
			if why == "" {
				why = "the session does not keep this unlock"
			}
			return false, why
		}
	}
	b.follow = followingLocked
	if b.identity != nil {
		b.follow = followingUnlocked
	}
	b.followChanged = changed
	sess.pass = "" // only a person unlocks again
	s.handedOut.start()
	return true, ""
}

// fromSession is unlock for a follower (caller holds b.mu): the identity
// while the session keeps it, else ErrSessionLocked, and changed is told
// of a change.
func (b *fileBackend) fromSession() (*age.X25519Identity, error) {
	id, err := b.sessionIdentity(b.sess())
	now := followingUnlocked
	if err != nil {
		now = followingLocked
	}
	b.identity = id
	if now != b.follow {
		b.follow = now
		if b.followChanged != nil {
			b.followChanged(now == followingLocked)
		}
	}
	return id, err
}

// sessionIdentity is the identity the session keeps for the key file, when
// it opens the secret files (caller holds b.mu); asking counts as a use.
func (b *fileBackend) sessionIdentity(sess *session) (*age.X25519Identity, error) {
	keyPath := b.keyPath()
	wrapped, err := os.ReadFile(keyPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fileError("read", keyPath, err)
	}
	if err == nil {
		desc := identityCacheDesc(keyPath, wrapped)
		if id, ok := sess.load(desc); ok {
			if b.identity != nil && id.String() == b.identity.String() {
				return b.identity, nil
			}
			if b.identityOpens(id) {
				return id, nil
			}
			b.dropCached(sess, desc)
		}
	}
	return nil, &BackendError{Backend: BackendFile, Kind: ErrBackendLocked, Err: ErrSessionLocked,
		Msg: fmt.Sprintf("store locked: the unlock of %s ended (%s without use, %s after the unlock, or shipkey lock); run `shipkey unlock`",
			displayPath(keyPath), FormatTimeout(sess.idle), FormatTimeout(sess.maxAge()))}
}

// noneWhy says why nothing keeps unlocks (mechanism none).
func (sess *session) noneWhy() string {
	switch {
	case sess.mech == MechNone:
		return EnvUnlockMech + "=none or " + EnvUnlockTimeout + "=0"
	case sess.mech == MechKernel:
		return "the kernel keyring (keyctl) does not answer here"
	default:
		return "no kernel keyring and no agent on this platform"
	}
}
