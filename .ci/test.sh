#!/usr/bin/env bash
# Runs every shipkey test. On a fresh Debian machine it first installs what the
# tests need and is missing (tmux, Node.js + npm, D-Bus and gnome-keyring for
# the real Secret Service test, the oauth2-mock-server and oidc-provider npm
# packages, gotestsum), then runs the keyring tests against a real Secret
# Service, fuzz targets briefly, and go test over the module (-race on all
# packages but cmd/internal/cli, see step 5) through gotestsum: one line per package
# (per test for cmd/internal/cli) as it finishes, then the ten slowest tests, the
# summary with the one count of tests (the keyring step's included), and the
# total wall time. It exits non-zero when anything failed. go vet and
# staticcheck are .ci/lint.sh (CI, .ci/run, runs both).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s (at %s s)\n' "$*" "$SECONDS"; }

export PATH="$PATH:$(go env GOPATH)/bin"
# npm's "new version available" notice says nothing about shipkey.
export NPM_CONFIG_UPDATE_NOTIFIER=false

# 1. Debian packages, only those missing.
updated=""
apt_install() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  log "installing $*"
  [ -n "$updated" ] || { $sudo apt-get update -qq; updated=1; }
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}
pkgs=()
command -v tmux >/dev/null || pkgs+=(tmux)
command -v node >/dev/null || pkgs+=(nodejs)
command -v dbus-run-session >/dev/null || pkgs+=(dbus dbus-daemon)
command -v gnome-keyring-daemon >/dev/null || pkgs+=(gnome-keyring)
[ "${#pkgs[@]}" -eq 0 ] || apt_install "${pkgs[@]}"
# curl reads shipkey's header --curl-config in cmd/internal/cli's token_output script.
command -v curl >/dev/null || apt_install curl ca-certificates
# NodeSource's nodejs carries npm; Debian's needs its own package.
command -v npm >/dev/null || apt_install npm
# Team keys: a real etcd cluster (store/team, cmd/shipkey/fleet start one).
{ command -v etcd >/dev/null && command -v etcdctl >/dev/null; } || apt_install etcd-server etcd-client
# A machine cut off from etcd (cmd/shipkey/fleet TestPartitionDuringFleetRace): a network
# namespace with an iptables DROP rule inside.
command -v iptables >/dev/null || apt_install iptables
command -v ip >/dev/null || apt_install iproute2

# 2. The real third-party OAuth 2.0 server (npm oauth2-mock-server), pinned by the lock file.
srv=auth/testdata/oauth2server
if [ ! -d "$srv/node_modules/oauth2-mock-server" ]; then
  log "installing $srv (npm ci)"
  npm ci --prefix "$srv" --no-audit --no-fund --loglevel=error
fi

# 2b. The real third-party OpenID provider (npm oidc-provider) for the grant tests (auth and the
#     CLI's testdata/opscript, through internal/optest), pinned by the lock file.
op=auth/testdata/oidcprovider
if [ ! -d "$op/node_modules/oidc-provider" ]; then
  log "installing $op (npm ci)"
  npm ci --prefix "$op" --no-audit --no-fund --loglevel=error
fi

# 3. The test runner that shows progress.
if ! command -v gotestsum >/dev/null; then
  log "installing gotestsum"
  go install gotest.tools/gotestsum@v1.13.0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failed=0 keyring_failed=0
json="$scratch/go-test.json" cmdjson="$scratch/go-test-cmd.json" keyringjson="$scratch/go-test-keyring.json"

# gotestsum ends each run with "DONE n tests in t": the steps below drop
# that line (and the blank one before it), so the summary's count, over every
# run's events, is the only total printed.
# dbus-daemon started as root tries to raise its open-file limit and says
# "AccessDenied: Failed to set fd limit" where it may not (a container):
# harmless, so that line goes too.
no_done() { sed -u -e '/^DONE [0-9][0-9]* tests/d' -e '/^$/d' -e '/AccessDenied: Failed to set fd limit/d'; }

# 4. The keyring backend against a real Secret Service (gnome-keyring) on a
#    private D-Bus session, in a scratch home. Its events join the summary.
log "store: real Secret Service keyring"
mkdir -p "$scratch/home/run" && chmod 700 "$scratch/home/run"
(
  # Keep Go's caches where they are while HOME points at the scratch folder.
  export GOPATH="$(go env GOPATH)" GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)"
  HOME="$scratch/home" XDG_DATA_HOME="$scratch/home/data" XDG_RUNTIME_DIR="$scratch/home/run" SHIPKEY_TEST_REAL_KEYRING=1 \
    dbus-run-session -- sh -c 'eval "$(echo shipkey-ci | gnome-keyring-daemon --unlock --components=secrets)";
      export GNOME_KEYRING_CONTROL; gotestsum --format testname --format-icons text --hide-summary=all \
        --jsonfile "$0" -- -count=1 -run RealKeyring ./store/' "$keyringjson" \
    2>&1 | no_done
) || { failed=1; keyring_failed=1; }

# 4b. Fuzz targets, a few seconds each (their seeds also run with the suite):
#     the token response, state.db's records, config.toml, the redactor, the
#     sanitizer.
log "fuzz (2 s each)"
for target in auth:FuzzTokenResponse auth:FuzzRedact store:FuzzRecordCodec store:FuzzConfigParser internal/text:FuzzSanitize; do
  pkg=${target%%:*} name=${target#*:}
  # A finding ("Failing input written to …") fails at once. Go's fuzzing
  # engine itself can end a short run with "context deadline exceeded" on a
  # loaded machine without any finding (its workers had not reported when
  # the 2 s ran out): that alone is tried once more, and says so.
  for attempt in 1 2; do
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime 2s "./$pkg/" >"$scratch/fuzz.out" 2>&1; then
      break
    fi
    if [ "$attempt" -eq 1 ] && ! grep -q 'Failing input written' "$scratch/fuzz.out" && grep -q 'context deadline exceeded' "$scratch/fuzz.out"; then
      echo "fuzz $name: no failing input; Go's fuzzing engine ran out of its 2 s before its workers reported (a busy machine), so once more"
      continue
    fi
    tail -n 30 "$scratch/fuzz.out"; echo "FAIL	fuzz $name"; failed=1
    break
  done
done

# 5. Every test, in two runs at once (the binary tests mostly wait on
#    processes and terminals, so they overlap well with the CPU-bound ones).
#    CI=true makes the real-server and tmux tests fail instead of skip when
#    their tools are missing. gotestsum prints each package's result as it
#    finishes (and a failing test's output at once), keeps every event in a
#    JSON file, and from it names the ten slowest tests over 2 s and replays the
#    summary as the last lines.
#    - The in-process packages (auth, store, tui, internal) run with the race
#      detector: their goroutines share memory.
#    - cmd/internal/cli runs without it, eight tests at once (-parallel 8: they
#      mostly wait on servers, processes and terminals; at Go's default of one
#      test per core the package alone took 312 s, at eight 134 s), and names
#      each test as it finishes (it is the long one). Its tests drive shipkey processes (testscript, tmux,
#      twenty concurrent binaries) that share a store through files and locks,
#      which the race detector cannot see; under -race every process testscript
#      starts is the race-built test binary, several times slower, and the
#      package took 369 of the suite's 377 s. Its in-process code is argument
#      parsing and printing over the store, which runs under -race above.
log "go test ./... (race detector on all but cmd/internal/cli; each package as it finishes)"
inproc=$(go list ./... | grep -v '/cmd/internal/cli$')
gotestsum --format pkgname-and-test-fails --format-icons text --hide-summary=all --jsonfile "$json" \
  -- -race -count=1 -timeout 20m $inproc | no_done &
inproc_pid=$!
gotestsum --format testname --format-icons text --hide-summary=all --jsonfile "$cmdjson" \
  -- -count=1 -parallel 8 -timeout 20m ./cmd/internal/cli/ | no_done || failed=1
wait "$inproc_pid" || failed=1

log "the ten slowest tests (over 2s)"
cat "$cmdjson" "$keyringjson" >>"$json" 2>/dev/null || true
gotestsum tool slowest --jsonfile "$json" --threshold 2s >"$scratch/slowest" || failed=1
head -n 10 "$scratch/slowest"

log "summary"
gotestsum --format standard-quiet --raw-command -- cat "$json" || failed=1
[ "$keyring_failed" -eq 0 ] || echo "FAIL	the real Secret Service keyring step (see above)"
echo "total: $SECONDS s (bash .ci/test.sh, wall time)"
exit "$failed"
