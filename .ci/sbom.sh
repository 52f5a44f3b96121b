#!/usr/bin/env bash
# Writes the CycloneDX SBOM of one release archive; goreleaser runs it for
# each archive (.goreleaser.yaml, sboms). Each program in the archive
# (shipkey, shipkey-team) is described by cyclonedx-gomod from the build
# information Go put in it (the modules really linked, with their go.sum
# hashes, for that OS and architecture); the two are merged into one
# document whose subject is the archive (name and SHA-256). No serial number
# and no timestamp: the same archive always gives the same SBOM.
#
#   bash .ci/sbom.sh ARCHIVE DOCUMENT VERSION
set -euo pipefail
archive=$1 document=$2 version=$3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/x"
case "$archive" in
  *.zip) unzip -q "$archive" -d "$work/x" ;;
  *.tar.gz) tar -xzf "$archive" -C "$work/x" ;;
  *) echo "sbom.sh: $archive is neither .tar.gz nor .zip" >&2; exit 2 ;;
esac
parts=()
for prog in shipkey shipkey-team; do
  bin="$work/x/$prog"
  [ -f "$bin" ] || bin="$bin.exe"
  [ -f "$bin" ] || { echo "sbom.sh: $archive holds no $prog" >&2; exit 1; }
  chmod +x "$bin"
  cyclonedx-gomod bin -json -noserial -notimestamp -version "$version" -output "$work/$prog.json" "$bin"
  parts+=("$work/$prog.json")
done
name="$(basename "$archive")"
sha="$(sha256sum "$archive" | cut -d' ' -f1)"
jq -S -s --arg name "$name" --arg sha "$sha" --arg version "$version" '
  (map(.metadata.component + {properties: .metadata.properties})) as $programs
  | (map(.components // []) | add | unique_by(."bom-ref")) as $modules
  | (map(.dependencies // []) | add | group_by(.ref)
     | map({ref: .[0].ref, dependsOn: (map(.dependsOn // []) | add | unique)})) as $deps
  | .[0]
  | .metadata = {
      tools: .metadata.tools,
      component: {type: "file", "bom-ref": $name, name: $name, version: $version,
                  hashes: [{alg: "SHA-256", content: $sha}]}
    }
  | .components = ($programs + $modules)
  | .dependencies = ([{ref: $name, dependsOn: ($programs | map(."bom-ref"))}] + $deps)
  | del(.compositions)
  ' "${parts[@]}" >"$document"
