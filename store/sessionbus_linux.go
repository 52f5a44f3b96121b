//go:build linux

package store

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

// sessionBusTimeout bounds the check that a D-Bus session bus answers.
const sessionBusTimeout = 300 * time.Millisecond

// sessionBusCheck tells whether a D-Bus session bus answers, without ever
// starting one: go-keyring's client would run dbus-launch when
// DBUS_SESSION_BUS_ADDRESS is unset (2 s per call on a headless machine, and
// two dbus-daemon processes left behind). Nil means the Secret Service may be
// asked; an error says why not.
func sessionBusCheck(timeout time.Duration) error {
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "" || addr == "autolaunch:" {
		return errNoSessionBus
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
		if err == nil {
			_ = conn.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return errors.New("the D-Bus session bus at DBUS_SESSION_BUS_ADDRESS does not answer")
		}
		return nil
	case <-ctx.Done():
		return errors.New("the D-Bus session bus did not answer within " + timeout.String())
	}
}

var errNoSessionBus = errors.New("no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set")
