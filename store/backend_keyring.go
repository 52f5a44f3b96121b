package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/shipkey/shipkey/internal/text"
)

// osKeyring is the OS keyring through zalando/go-keyring.
type osKeyring struct{}

func (osKeyring) Get(service, user string) (string, error) {
	v, err := gokeyring.Get(service, user)
	if errors.Is(err, gokeyring.ErrNotFound) {
		return "", ErrNotFound
	}
	return v, err
}
func (osKeyring) Set(service, user, secret string) error { return gokeyring.Set(service, user, secret) }
func (osKeyring) Delete(service, user string) error {
	err := gokeyring.Delete(service, user)
	if errors.Is(err, gokeyring.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// keyringBackend keeps one JSON entry per key (service "shipkey", user = key
// ID) and bounds every call by a timeout: a keyring that does not answer
// (no D-Bus, a prompt nobody sees) must not hang shipkey.
type keyringBackend struct {
	kr      Keyring
	timeout time.Duration
	// bus tells, once, whether a D-Bus session bus answers; nil for an
	// injected Keyring. The OS keyring is never asked without one, so its
	// client never starts dbus-launch.
	bus func() error
}

func newKeyringBackend(e backendEnv) secretsBackend {
	kr := e.opts.Keyring
	b := &keyringBackend{kr: kr, timeout: keyringTimeout}
	if kr == nil {
		b.kr = osKeyring{}
		b.bus = sync.OnceValue(func() error { return sessionBusCheck(sessionBusTimeout) })
	}
	return b
}

func (b *keyringBackend) Name() string { return BackendKeyring }

func isKeyringNotFound(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, gokeyring.ErrNotFound)
}

// call runs f in a goroutine and gives up after the timeout. A call that
// never returns leaks its goroutine; there is no way to cancel a D-Bus call
// that go-keyring started.
func (b *keyringBackend) call(op string, timeout time.Duration, f func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	if b.bus != nil {
		if err := b.bus(); err != nil {
			return "", &BackendError{
				Backend: BackendKeyring,
				Msg:     fmt.Sprintf("the OS keyring is not available (%s: %s)", op, err),
				Kind:    ErrBackendMissing,
				Err:     err,
			}
		}
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil && !isKeyringNotFound(r.err) {
			return "", keyringError(op, r.err)
		}
		return r.v, r.err
	case <-t.C:
		return "", &BackendError{
			Backend: BackendKeyring,
			Msg:     fmt.Sprintf("the OS keyring did not answer within %s (%s)", timeout, op),
			Kind:    ErrBackendMissing,
			Err:     errKeyringTimeout,
		}
	}
}

var errKeyringTimeout = errors.New("keyring timeout")

// keyringError classifies a keyring failure as missing or locked.
func keyringError(op string, err error) error {
	reason := text.Safe(err.Error())
	low := strings.ToLower(reason)
	kind := ErrBackendMissing
	switch {
	case strings.Contains(low, "locked"), strings.Contains(low, "dismissed"),
		strings.Contains(low, "denied"), strings.Contains(low, "not authorized"):
		kind = ErrBackendLocked
	}
	var be *BackendError
	if errors.As(err, &be) {
		return be
	}
	what := "the OS keyring is not available"
	if kind == ErrBackendLocked {
		what = "the OS keyring is locked"
	}
	return &BackendError{Backend: BackendKeyring, Msg: fmt.Sprintf("%s (%s: %s)", what, op, reason), Kind: kind, Err: err}
}

func (b *keyringBackend) probe(timeout time.Duration) error {
	_, err := b.call("probe", timeout, func() (string, error) { return b.kr.Get(keyringService, keyringProbeUser) })
	if err != nil && !isKeyringNotFound(err) {
		return err
	}
	return nil
}

func (b *keyringBackend) Get(id string) (keySecrets, bool, error) {
	v, err := b.call("read", b.timeout, func() (string, error) { return b.kr.Get(keyringService, id) })
	if isKeyringNotFound(err) {
		return keySecrets{}, false, nil
	}
	if err != nil {
		return keySecrets{}, false, err
	}
	var ks keySecrets
	if err := json.Unmarshal([]byte(v), &ks); err != nil {
		return keySecrets{}, false, fmt.Errorf("the keyring entry %s/%s is not shipkey's: delete it or remove the key", keyringService, id)
	}
	return ks, true, nil
}

func (b *keyringBackend) Set(id string, ks keySecrets) error {
	data, err := json.Marshal(ks)
	if err != nil {
		return err
	}
	_, err = b.call("write", b.timeout, func() (string, error) { return "", b.kr.Set(keyringService, id, string(data)) })
	return err
}

func (b *keyringBackend) Delete(id string) error {
	_, err := b.call("delete", b.timeout, func() (string, error) { return "", b.kr.Delete(keyringService, id) })
	if isKeyringNotFound(err) {
		return nil
	}
	return err
}
