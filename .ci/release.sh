#!/usr/bin/env bash
# Builds a release with goreleaser (.goreleaser.yaml): archives for linux,
# darwin and windows on amd64 and arm64 (zip for windows), deb/rpm/apk packages
# of shipkey and shipkey-team with their man pages and bash/zsh/fish
# completions, a CycloneDX SBOM per archive, checksums.txt with its minisign
# signature checksums.txt.minisig, and the Homebrew cask, all in dist/.
#
#   bash .ci/release.sh            a snapshot of the checkout (nothing published)
#   bash .ci/release.sh --release  the release of the tag at HEAD (docs/releasing.md)
#
# Then it checks what a user will check: the signature, with the public key
# (docs/release-key.pub, or the throwaway key of a snapshot), and every file
# against checksums.txt; that there is an SBOM per archive; and that a second
# build of the same commit gives byte-for-byte the same archives and packages.
#
# The signing key: SHIPKEY_MINISIGN_KEY names the minisign secret key file,
# SHIPKEY_MINISIGN_PASSWORD its password (when it has one). Without them a
# snapshot is signed with a throwaway key made here (and verified with its
# public key); a release refuses to run.
#
# Tools, pinned below and installed with go install when missing or of
# another version: goreleaser, minisign (aead.dev/minisign), cyclonedx-gomod.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
  "" | --release) ;;
  *)
    echo "usage: bash .ci/release.sh [--release]" >&2
    exit 2
    ;;
esac

gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"

# ensure CMD MODULE/PATH@VERSION VERSION-ARGS...: installs CMD with go install
# unless it prints VERSION (the first "vX.Y.Z" or "X.Y.Z" after a space or at
# the start of a line: goreleaser says "GitVersion:    v2.15.1", minisign
# "minisign v0.3.0 …", cyclonedx-gomod "Version:<tab>v1.10.0").
ensure() {
  local cmd=$1 pkg=$2 want=${2##*@} got
  shift 2
  got="$("$cmd" "$@" 2>/dev/null | grep -oE '(^|[[:space:]])v?[0-9]+\.[0-9]+\.[0-9]+' | head -n1 | tr -d '[:space:]')" || true
  if [ "v${got#v}" = "$want" ]; then
    return
  fi
  echo "== installing $cmd $want (go install; goreleaser takes minutes)"
  local t0=$SECONDS
  GOFLAGS= go install "$pkg"
  echo "   $cmd $want installed in $((SECONDS - t0)) s"
}
ensure goreleaser github.com/goreleaser/goreleaser/v2@v2.15.1 --version
ensure minisign aead.dev/minisign/cmd/minisign@v0.3.0 -v
ensure cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0 version
# .ci/sbom.sh opens archives and merges documents.
missing=()
command -v jq >/dev/null || missing+=(jq)
command -v unzip >/dev/null || missing+=(unzip)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]} (apt-get)"
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The signing key.
pub=docs/release-key.pub
if [ -n "${SHIPKEY_MINISIGN_KEY:-}" ]; then
  [ -r "$SHIPKEY_MINISIGN_KEY" ] || { echo "release.sh: SHIPKEY_MINISIGN_KEY=$SHIPKEY_MINISIGN_KEY cannot be read" >&2; exit 1; }
  echo "== signing with $SHIPKEY_MINISIGN_KEY, to be verified with $pub"
elif [ "$mode" = --release ]; then
  echo "release.sh: a release is signed with the project's key: set SHIPKEY_MINISIGN_KEY (and SHIPKEY_MINISIGN_PASSWORD), see docs/releasing.md" >&2
  exit 1
else
  minisign -G -W -p "$work/test-key.pub" -s "$work/test-key.key" >/dev/null
  export SHIPKEY_MINISIGN_KEY="$work/test-key.key"
  pub="$work/test-key.pub"
  echo "== no SHIPKEY_MINISIGN_KEY: this snapshot is signed with a throwaway key (public key $(tail -n1 "$pub")), not the project's"
fi

# Every time stamp in the outputs is the commit's (see .goreleaser.yaml);
# tools that read SOURCE_DATE_EPOCH get it too.
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
export SOURCE_DATE_EPOCH

# goreleaser reads the commit, its date and the tag through git; in a
# checkout without a remote it gives up on all three for a snapshot (commit
# "none", every time stamp in year 1). Its git calls then see the project's
# URL, through the environment: the repository's config is not changed.
if ! git ls-remote --get-url >/dev/null 2>&1; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/shipkey/shipkey.git
fi

goreleaser check
commit="$(git rev-parse HEAD)"

# The first build only checks that the second (the one kept, or published)
# gives the same bytes: no signature, no SBOM (neither changes an archive or
# a package), nothing published.
args=(release --clean)
[ "$mode" = --release ] || args+=(--snapshot)
echo "== build 1 of 2 (for the reproducibility check)"
t0=$SECONDS
goreleaser "${args[@]}" --skip=sign,sbom,publish,announce
echo "   build 1 took $((SECONDS - t0)) s"
# sums FILE: the SHA-256 of every archive and package in dist/, by name.
sums() { (cd dist && ls -1 -- *.tar.gz *.zip *.deb *.rpm *.apk | sort | xargs sha256sum) >"$1"; }
sums "$work/build1.sha256"

echo "== build 2 of 2"
t0=$SECONDS
if [ "$mode" = --release ]; then
  : "${GITHUB_TOKEN:?set GITHUB_TOKEN (repo scope) to publish the release}"
fi
goreleaser "${args[@]}"
echo "   build 2 took $((SECONDS - t0)) s"
sums "$work/build2.sha256"

echo
echo "== signature: dist/checksums.txt.minisig"
minisign -V -p "$pub" -m dist/checksums.txt -x dist/checksums.txt.minisig
echo "== every file against checksums.txt"
(cd dist && sha256sum --strict -c checksums.txt | sed 's/^/   /')

echo "== SBOMs (CycloneDX), one per archive"
narch=0
for a in dist/*.tar.gz dist/*.zip; do
  narch=$((narch + 1))
  doc="$a.cdx.json"
  [ -s "$doc" ] || { echo "release.sh: no SBOM for $a" >&2; exit 1; }
  jq -e --arg n "$(basename "$a")" '.bomFormat == "CycloneDX" and .metadata.component.name == $n' "$doc" >/dev/null ||
    { echo "release.sh: $doc is not the CycloneDX SBOM of $a" >&2; exit 1; }
  echo "   $doc: $(jq '.components | length' "$doc") components"
done

echo "== reproducibility: the archives and packages of two builds of ${commit:0:12}"
if [ "$(git rev-parse HEAD)" != "$commit" ]; then
  echo "release.sh: HEAD moved from $commit during the run: the two builds are of different commits; run again" >&2
  exit 1
fi
if diff -u "$work/build1.sha256" "$work/build2.sha256" >"$work/repro.diff"; then
  echo "   identical: $(wc -l <"$work/build2.sha256") files, byte for byte (sha256)"
else
  echo "release.sh: two builds of one commit differ:" >&2
  cat "$work/repro.diff" >&2
  exit 1
fi
echo
ls -l dist/*.tar.gz dist/*.zip dist/*.deb dist/*.rpm dist/*.apk dist/*.cdx.json dist/checksums.txt dist/checksums.txt.minisig dist/homebrew/Casks/*.rb
