// Package etcdteam is the team engine on etcd (see package team for what a
// team is and how renewal works): the etcd client v3, its concurrency
// mutex, age encryption to the roster and the local cache.
package etcdteam

import "github.com/shipkey/shipkey/store/team"

// The names of package team that this engine's code uses unqualified.
type (
	Options      = team.Options
	Definition   = team.Definition
	Key          = team.Key
	NewKey       = team.NewKey
	Member       = team.Member
	JoinOptions  = team.JoinOptions
	LoginOptions = team.LoginOptions
	LogoutResult = team.LogoutResult
	TokenOptions = team.TokenOptions
	Error        = team.Error
)

var (
	ErrUnavailable = team.ErrUnavailable
	ErrNotMember   = team.ErrNotMember
	ErrNoTeam      = team.ErrNoTeam
	ErrKeyNotFound = team.ErrKeyNotFound
)

const (
	DefaultTimeout = team.DefaultTimeout
	DefaultLockTTL = team.DefaultLockTTL
)

// Address is "T/LABEL".
func Address(t, label string) string { return team.Address(t, label) }

// teamEngine is the interface New returns.
type teamEngine = team.Engine

var _ team.Engine = (*Engine)(nil)
