package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shipkey/shipkey/internal/text"
)

var errNoAuth = errors.New("store opened without an auth client: token operations are unavailable")

// cleanLabel trims a label and checks it: non-empty, at most MaxLabelLen
// runes, valid UTF-8, no control or bidi characters.
func cleanLabel(l string) (string, error) {
	l = strings.TrimSpace(l)
	switch {
	case l == "":
		return "", errors.New("the label is empty; choose a name for the key")
	case !utf8.ValidString(l) || !text.IsClean(l):
		return "", fmt.Errorf("the label %s contains control characters; choose another", quoteLabel(l))
	case utf8.RuneCountInString(l) > MaxLabelLen:
		return "", fmt.Errorf("the label is longer than %d characters; choose a shorter one", MaxLabelLen)
	}
	return l, nil
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// keyError is a sentinel with a message that says what to do.
type keyError struct {
	msg  string
	kind error
}

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return e.kind }

func notFoundError(label string) error {
	return &keyError{msg: fmt.Sprintf("no key labelled %s; see: shipkey keys list", quoteLabel(label)), kind: ErrNotFound}
}

func labelTakenError(label string) error {
	return &keyError{msg: fmt.Sprintf("the label %s is already in use; choose another (see: shipkey keys list)", quoteLabel(label)), kind: ErrLabelTaken}
}

// quoteLabel quotes untrusted label text for a message: Go-quoted, so that
// control characters show as escapes, and sanitized.
func quoteLabel(l string) string { return text.Safe(strconv.Quote(l)) }

// LoginNeededError says that only a new login can give the key a token. It
// matches ErrLoginNeeded and the auth error that showed it (so
// auth.KindOf(err) is auth.KindLoginRequired when the refresh token expired or
// its session ended).
type LoginNeededError struct {
	Label string // the key's label, raw (Error sanitizes it)
	Why   string // short reason, e.g. "the refresh token expired"
	Err   error  // the auth error, or nil
}

func (e *LoginNeededError) Error() string {
	return text.Cleanf("key %s: login needed (%s); run: shipkey login %s",
		e.Label, e.Why, text.ShellQuote(e.Label)).String()
}

// Unwrap returns ErrLoginNeeded and the cause.
func (e *LoginNeededError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLoginNeeded}
	}
	return []error{ErrLoginNeeded, e.Err}
}
