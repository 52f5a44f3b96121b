// Package testpar lets a test package whose tests mostly wait (on the
// processes they start, on servers, on etcd) run more of them at once than
// go test's default, which is GOMAXPROCS (2 on a 2-core CI machine), unless
// the command line gives -parallel.
package testpar

import (
	"flag"
	"strconv"
)

// Default sets -test.parallel to n unless the command line gave it. Call it
// from TestMain before m.Run.
func Default(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
