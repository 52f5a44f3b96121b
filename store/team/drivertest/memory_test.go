package drivertest_test

import (
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team/drivertest"
)

// TestMemoryConformance: the in-memory driver does what team.Driver says
// (the suite the etcd driver passes on a real etcd).
func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	d, _ := drivertest.NewMemory().Dialer()(store.TeamConn{}, "")
	drivertest.Conformance(t, d, "/conformance/")
}
