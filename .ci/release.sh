#!/usr/bin/env bash
# Builds a release with goreleaser (pinned below, installed with go install
# when missing): archives for linux, darwin and windows on amd64 and arm64
# (zip for windows), deb/rpm/apk packages of shipkey and shipkey-team with
# their man pages and bash/zsh/fish completions, checksums.txt and the
# Homebrew formula, all in dist/. Configuration: .goreleaser.yaml.
#
#   bash .ci/release.sh            a snapshot of the checkout (nothing published)
#   bash .ci/release.sh --release  the release of the tag at HEAD (see docs/development.md, "Releasing")
set -euo pipefail
cd "$(dirname "$0")/.."

GORELEASER_VERSION=v2.15.1
gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"
if ! goreleaser --version 2>/dev/null | grep -q "GitVersion: *${GORELEASER_VERSION#v}\$"; then
  echo "== installing goreleaser $GORELEASER_VERSION (go install, a few minutes)"
  GOFLAGS= go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
fi

goreleaser check
case "${1:-}" in
  "")
    goreleaser release --snapshot --clean
    ;;
  --release)
    : "${GITHUB_TOKEN:?set GITHUB_TOKEN (repo scope) to publish the release}"
    goreleaser release --clean
    ;;
  *)
    echo "usage: bash .ci/release.sh [--release]" >&2
    exit 2
    ;;
esac
echo
ls -l dist/*.tar.gz dist/*.zip dist/*.deb dist/*.rpm dist/*.apk dist/checksums.txt dist/homebrew/Formula/*.rb
