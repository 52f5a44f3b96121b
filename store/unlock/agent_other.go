//go:build !unix

package unlock

import (
	"context"
	"errors"
	"time"

	"filippo.io/age"
)

// No agent outside unix: an unlock is kept in the process only.

const AgentSupported = false

// AgentConfig configures ServeAgent.
type AgentConfig struct {
	Socket string
	Secret string
	Idle   time.Duration
	MaxAge time.Duration
	Ready  func()
}

// ErrAgentRunning: another agent already answers on the socket.
var ErrAgentRunning = errors.New("an agent already answers on this socket")

// ServeAgent is not available on this platform.
func ServeAgent(ctx context.Context, cfg AgentConfig) error {
	return errors.New("shipkey agent needs unix sockets")
}

func AgentGet(sock, secretFile, desc string) (*age.X25519Identity, bool) { return nil, false }
func AgentForget(sock, secretFile, desc string) bool                     { return false }
func AgentSecret(path string) error                                      { return nil }
func AgentPut(sock, secretFile, exe, desc string, id *age.X25519Identity, idle, maxAge time.Duration) error {
	return errors.New("no agent on this platform")
}
