// Package team keeps team keys: API keys a team or a fleet of machines shares
// through an etcd cluster, end-to-end encrypted with age, with one token
// request serving every machine.
//
// A team is the prefix /shipkey/teams/<T>/ of an etcd cluster:
//
//	roster         JSON list of members (name, age recipient): public
//	keys/<id>      a key's definition and secrets, age-encrypted to the roster
//	tokens/<id>    the key's current token set, age-encrypted to the roster
//	locks/<id>/    the fleet lock (a concurrency mutex on a lease)
//
// Every write of an encrypted item compares the roster's ModRevision it
// encrypted to, so nothing is ever written for a member set that has changed
// meanwhile. A machine keeps a local cache of the team (definitions and
// tokens) encrypted to its own identity; a valid cached token is handed out
// without any etcd round trip, and while etcd is unreachable.
//
// Renewal (Engine.Token): a machine whose cached token is due takes the
// per-key local file lock (one process per machine goes further), re-reads
// its cache, reads tokens/<id>, and only when that is due too takes the
// team-wide mutex, re-reads, renews through auth, and writes with a
// transaction that checks the revision it read and that it still owns the
// mutex. Others wait on the mutex (a watch) and reuse the result.
//
// This package names the engine (Engine, its options and results) and
// links no etcd client; package etcdteam implements it on etcd, so that a
// program that never opens a team (cmd/shipkey) pays nothing for gRPC.
//
// What it must never do: put a secret or a token into etcd unencrypted, into
// an error or onto a terminal unsanitized; write an item encrypted to a
// member set other than the current roster; wait on etcd without a bound.
package team
