package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// signalCause is why the command context ended when a signal stopped
// shipkey: it names the signal, so that exit codes can follow the shell's
// 128+N. It is a context.Canceled, as signal.NotifyContext's cause is.
type signalCause struct{ sig syscall.Signal }

func (c signalCause) Error() string        { return fmt.Sprintf("%s received", c.sig) }
func (c signalCause) Is(target error) bool { return target == context.Canceled }

// notifyContext is signal.NotifyContext for SIGINT and SIGTERM with a cause
// that keeps the signal (see stoppedBy).
func notifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			if sig, ok := s.(syscall.Signal); ok {
				cancel(signalCause{sig})
			} else {
				cancel(context.Canceled)
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// stoppedBy reports the signal that ended ctx, if one did.
func stoppedBy(ctx context.Context) (syscall.Signal, bool) {
	if c, ok := context.Cause(ctx).(signalCause); ok {
		return c.sig, true
	}
	return 0, false
}

// signalExit ends shipkey as the shell would report death by sig (128+N),
// with one line saying what was not done.
func signalExit(sig syscall.Signal, notDone string) error {
	return &exitError{code: 128 + int(sig), err: fmt.Errorf("stopped by %s: %s", sig, notDone)}
}
