// Package team keeps team keys: API keys a team or a fleet of machines shares
// through an etcd cluster, end-to-end encrypted with age and signed with
// Ed25519, with one token request serving every machine.
//
// A team is the prefix /shipkey/teams/<T>/ of an etcd cluster:
//
//	roster         the member set (name, age recipient, Ed25519 signing key)
//	               at a version, signed by a member of the version before
//	rosters/<N>    every roster version, for machines that skipped some
//	keys/<id>      a key's definition and secrets: age-encrypted to the
//	               roster, the ciphertext signed with team, kind, id, roster
//	               version and a sequence number (SignItem)
//	tokens/<id>    the key's current token set, the same way
//	catalog        the id last created, renamed or removed, signed (a
//	               revision every catalog change compares)
//	locks/<id>/    the fleet lock (a concurrency mutex on a lease)
//
// Trust (trust.go): a member's signing key is derived from its age identity
// (SigningKey). Every machine pins the roster it accepted
// (StateDir/roster.pin; trust on first use at join, whose fingerprints people
// compare out of band) and takes a newer one only along a chain of rosters
// each signed by a member of the one before (Accept); never an older one or
// another of the same version. Items are verified against the accepted
// roster before anything is decrypted (OpenItem); token sets also pass a
// server answer's checks (auth.TokenSet.CheckStored). What fails wraps
// ErrForged and is refused in one line; the honest items keep working and a
// refused roster is replaced by the pinned one. Beside the pin each machine
// keeps the roster key's revision when it pinned and the highest sequence
// number it accepted per item (PinState): a lower one is a rollback,
// refused. A roster key written since the pin that holds no newer roster
// makes the machine read what the key held meanwhile (FormerReader); an
// item a member signed for a later roster makes it read that roster from the
// history; when neither can be had the machine may be behind a removal (the
// freeze attack) and refuses everything (ErrBehind).
//
// Every write of an item compares the roster's revision it encrypted to, so
// nothing is ever written for a member set that has changed meanwhile.
// Membership changes re-encrypt in batches within etcd's transaction limit
// and write the new roster only if no item changed since. A machine keeps a
// local cache of the team (Cache: definitions and tokens) encrypted to its
// own identity; a valid cached token is handed out after one read of its
// revision and the roster key's says etcd still holds it and the roster
// pinned, and while etcd is unreachable (with a warning).
// CachedFast does that read over etcd's JSON gateway for the program that
// links no etcd client.
//
// Renewal (Engine.Token): within one deadline (the team's bound), a machine
// whose cached token is due takes the per-key local file lock (one process
// per machine goes further), re-reads its cache, reads tokens/<id>, and only
// when that is due too takes the team-wide mutex, re-reads, renews through
// auth, and writes with a transaction that checks the revision it read and
// that it still owns the mutex. Others wait on the mutex (a watch) and
// reuse the result.
//
// Structure. This package names the engine (Engine, its options and
// results), the storage driver it runs on (Driver, driver.go) and holds
// what is independent of any storage: the trust rules, the cache format,
// the fast cached read. Package engine is the protocol — roster and
// signatures, encryption, cache, fleet lock, watch — written once over
// Driver: get keys at one revision, list a prefix, commit writes if
// revisions hold (put-if-revision, delete), watch from a revision, and a
// lease-backed lock. Package etcdteam is the one driver, on etcd (the
// client v3 and its concurrency mutex), and etcdteam.New the engine on it;
// a program that never opens a team (cmd/shipkey) links neither.
//
// A second driver (Vault/OpenBao KV, Consul, …) is a package beside
// etcdteam: implement Driver, and FormerReader where the storage keeps
// earlier values (the conditions of Commit — a key's revision,
// a key existing, nothing under a prefix written after a revision, a lock
// still held — must hold together with the writes, atomically, for up to
// 2×100+1 conditions and operations; Lock must free a dead holder's lock
// within its lease); run drivertest.Conformance against a real server in
// its tests; give its Dial to engine.New in a program's main, as
// cmd/shipkey-team does with etcdteam.New. Nothing of package engine
// changes. drivertest.Memory, a driver in memory that passes the suite,
// runs the protocol in a test (engine's TestProtocolOnAnotherDriver) to
// show that it needs nothing more. CachedFast, shipkey's own read of a
// cached token's revision, speaks etcd's JSON gateway: a second driver gives
// it a read of its own, or shipkey hands that driver's team tokens to
// shipkey-team.
//
// What it must never do: put a secret or a token into etcd unencrypted, into
// an error or onto a terminal unsanitized; decrypt, use, cache or send
// anything no member signed; write an item encrypted to a member set other
// than the accepted roster; wait on etcd without a bound.
package team
