package etcdteam_test

import (
	"testing"

	"github.com/shipkey/shipkey/store/team/drivertest"
	"github.com/shipkey/shipkey/store/team/etcdteam"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestEtcdDriverConformance: the etcd driver does what team.Driver says, on
// a real 3-member etcd.
func TestEtcdDriverConformance(t *testing.T) {
	t.Parallel()
	c := etcdtest.Need(t, 3)
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	d := etcdteam.NewDriver(cli)
	defer d.Close()
	drivertest.Conformance(t, d, "/conformance/")
}
