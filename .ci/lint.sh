#!/usr/bin/env bash
# go vet, for Linux and for the platforms a release builds for (Linux-only
# code sits behind build tags; the release itself is .ci/release.sh), tests
# included, and staticcheck over the whole module. Installs staticcheck when
# missing. Exits non-zero when anything is found. CI (.ci/run) runs it after
# the tests (.ci/test.sh).
set -uo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:$(go env GOPATH)/bin"
if ! command -v staticcheck >/dev/null; then
  echo "== installing staticcheck"
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 || exit 1
fi

rc=0
echo "== go vet (linux) (at $SECONDS s)"
go vet ./... || { echo "FAIL	go vet"; rc=1; }
# One architecture each (the one most machines of that system have): the
# platform's build tags are what differ; .ci/release.sh builds all four.
for target in darwin/arm64 windows/amd64; do
  echo "== go vet ($target) (at $SECONDS s)"
  GOOS=${target%/*} GOARCH=${target#*/} go vet ./... || { echo "FAIL	go vet ($target)"; rc=1; }
done
echo "== go mod tidy -diff (at $SECONDS s)"
go mod tidy -diff || { echo "FAIL	go mod tidy -diff: go.mod or go.sum is not tidy; run go mod tidy"; rc=1; }
echo "== links of README.md and docs/ (at $SECONDS s)"
python3 .ci/checklinks.py . || { echo "FAIL	a link of README.md or docs/ leads nowhere"; rc=1; }
echo "== staticcheck (at $SECONDS s)"
staticcheck ./... || { echo "FAIL	staticcheck"; rc=1; }
[ "$rc" -eq 0 ] && echo "ok	go vet (linux, darwin/arm64, windows/amd64), go mod tidy and staticcheck"
echo "total: $SECONDS s (bash .ci/lint.sh, wall time)"
exit "$rc"
