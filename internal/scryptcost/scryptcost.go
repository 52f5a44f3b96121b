// Package scryptcost holds the one setting that lets a test binary make the
// file backend's passphrase derivation cheap for the shipkey processes it
// runs. Nothing a user runs sets it: the shipkey binary never imports a
// writer of it, and store reads it only when wrapping a new secrets.key.age
// (an existing file keeps the work factor it was written with).
package scryptcost

// WorkFactor, when non-zero, is the scrypt work factor (log2 N) of a new
// secrets.key.age in place of age's default (18: about a second and 256 MiB).
// cmd/internal/cli's TestMain sets it in the processes its scripts run as
// `shipkey`: those scripts check what a derivation guards and how often one
// runs, not what it costs (BenchmarkProcess measures that, at the default),
// and a suite of them running eight at once spent most of its CPU in scrypt.
var WorkFactor int
