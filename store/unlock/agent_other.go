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

func AgentGet(sock, desc string) (*age.X25519Identity, bool) { return nil, false }
func AgentForget(sock, desc string) bool                     { return false }
func AgentPut(sock, exe, desc string, id *age.X25519Identity, idle, maxAge time.Duration) error {
	return errors.New("no agent on this platform")
}
