// Package goinstall proves that `go install
// github.com/shipkey/shipkey/cmd/shipkey@vX` works for someone who has only
// the module proxy: its test serves the checkout as a module version from a
// local file:// proxy (the module zip made with golang.org/x/mod/zip, as a
// proxy would serve it) and the dependencies from the local module cache, so
// no network is needed, installs both programs into a scratch GOBIN, and runs
// the installed `shipkey version`. A replace directive in go.mod, a nested
// module or a file the build needs but the zip leaves out fails it. It has no
// code of its own, only the test.
package goinstall
