//go:build linux

package store

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessionBusCheck: no address, a bus that is not there and a bus that
// never answers are each an error (the keyring is then not asked), and
// none starts anything. (Not parallel: it sets DBUS_SESSION_BUS_ADDRESS.)
func TestSessionBusCheck(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	if err := sessionBusCheck(time.Second); !errors.Is(err, errNoSessionBus) {
		t.Errorf("no address: %v", err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "autolaunch:")
	if err := sessionBusCheck(time.Second); !errors.Is(err, errNoSessionBus) {
		t.Errorf("autolaunch: %v", err)
	}

	dir := t.TempDir()
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "none"))
	if err := sessionBusCheck(time.Second); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("no bus at the address: %v", err)
	}

	// A socket that accepts and never speaks: bounded by the timeout.
	ln, err := net.Listen("unix", filepath.Join(dir, "mute"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // open and silent until the listener closes
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "mute"))
	if err := sessionBusCheck(50 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not answer within 50ms") {
		t.Errorf("a mute bus: %v", err)
	}
}
