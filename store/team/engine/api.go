// Package engine is the team protocol (see package team for what a team is
// and how renewal works): the roster and its signatures, age encryption to
// the roster, the local cache, the fleet lock and the watch, written once
// over a storage driver (team.Driver). Package etcdteam is the driver on
// etcd and New there is this engine on it.
package engine

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

var _ team.Engine = (*Engine)(nil)

// The driver's names, for code whose team parameter hides the package.
type (
	cond = team.Cond
	op   = team.Op
)

// revIs is the condition that key was last written at rev (0: absent).
func revIs(key string, rev int64) cond { return team.RevIsCond(key, rev) }

// put writes value at key; del deletes key.
func put(key, value string) op { return team.Put(key, []byte(value)) }
func del(key string) op        { return team.Delete(key) }

// teamExists is team.Exists, for code whose team parameter hides the
// package.
const teamExists = team.Exists
