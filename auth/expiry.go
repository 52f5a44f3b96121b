package auth

import "time"

// MaxMargin is the longest a token is renewed ahead of its expiry. The margin
// of a token is the smaller of MaxMargin and a tenth of its lifetime, so a
// 15-day token is renewed 30 s before it expires, an 8 s token 0.8 s before,
// and a token is reused for nearly all of its life: a fresh token is never
// "expired".
const MaxMargin = 30 * time.Second

// ExpiryState is where a token stands at a moment, by the one lifecycle
// policy that auth, store, the CLI and the app share.
type ExpiryState int

const (
	// ExpiryUnstated: the server stated no lifetime (and the token carries
	// none): usable until the server says otherwise.
	ExpiryUnstated ExpiryState = iota
	// ExpiryValid: usable, and not yet due for renewal.
	ExpiryValid
	// ExpiryDue: still usable, but inside its margin: renew it now ("refreshing
	// soon").
	ExpiryDue
	// ExpiryExpired: past its expiry.
	ExpiryExpired
)

func (s ExpiryState) String() string {
	switch s {
	case ExpiryValid:
		return "valid"
	case ExpiryDue:
		return "refreshing soon"
	case ExpiryExpired:
		return "expired"
	}
	return "not stated"
}

// Expiry is a token's timing: when it was obtained and when it expires. The
// zero At means the server stated no expiry. Its methods are the lifecycle
// policy; nothing else in shipkey compares a token's times with the clock.
type Expiry struct {
	ObtainedAt time.Time // by the client's clock; zero when unknown
	At         time.Time // zero: not stated
}

// Stated reports whether the expiry is known.
func (e Expiry) Stated() bool { return !e.At.IsZero() }

// Lifetime is At-ObtainedAt, or 0 when either is unknown (or At is before
// ObtainedAt).
func (e Expiry) Lifetime() time.Duration {
	if e.At.IsZero() || e.ObtainedAt.IsZero() || !e.At.After(e.ObtainedAt) {
		return 0
	}
	return e.At.Sub(e.ObtainedAt)
}

// Margin is how long before At the token is due for renewal: the smaller of
// MaxMargin and a tenth of the lifetime (MaxMargin when the lifetime is
// unknown but At is stated; 0 when At is not stated).
func (e Expiry) Margin() time.Duration {
	if e.At.IsZero() {
		return 0
	}
	l := e.Lifetime()
	if l == 0 && e.ObtainedAt.IsZero() {
		return MaxMargin
	}
	return min(MaxMargin, l/10)
}

// RenewAt is when the token becomes due for renewal (At-Margin); zero when no
// expiry is stated.
func (e Expiry) RenewAt() time.Time {
	if e.At.IsZero() {
		return time.Time{}
	}
	return e.At.Add(-e.Margin())
}

// State says where the token stands at now.
func (e Expiry) State(now time.Time) ExpiryState {
	switch {
	case e.At.IsZero():
		return ExpiryUnstated
	case !now.Before(e.At):
		return ExpiryExpired
	case !now.Before(e.RenewAt()):
		return ExpiryDue
	default:
		return ExpiryValid
	}
}

// RenewDue reports whether the token should be renewed at now: it is inside
// its margin or expired. A token without stated expiry is never due.
func (e Expiry) RenewDue(now time.Time) bool {
	s := e.State(now)
	return s == ExpiryDue || s == ExpiryExpired
}

// Expired reports whether the token is past its stated expiry at now.
func (e Expiry) Expired(now time.Time) bool { return e.State(now) == ExpiryExpired }

// ValidFor reports whether the token may be handed out at now to a caller
// that needs it for at least d: it is not due for renewal and, when d is
// longer than the margin, still valid at now+d. A token without stated
// expiry is always valid for any d.
func (e Expiry) ValidFor(now time.Time, d time.Duration) bool {
	if e.At.IsZero() {
		return true
	}
	return now.Add(max(d, e.Margin())).Before(e.At)
}

// Remaining is the time left until At (negative when expired, 0 when not
// stated).
func (e Expiry) Remaining(now time.Time) time.Duration {
	if e.At.IsZero() {
		return 0
	}
	return e.At.Sub(now)
}
