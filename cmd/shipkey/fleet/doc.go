// Package fleet holds the end-to-end tests and benchmarks of team keys: real
// shipkey processes on two "machines" (two stores, two member identities)
// against a real 3-member etcd cluster and the in-process authorization
// server. It has no non-test code.
package fleet
