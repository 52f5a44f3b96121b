#!/usr/bin/env bash
# Runs every shipkey test. On a fresh Debian machine it first installs what the
# tests need and is missing (tmux, Node.js + npm, D-Bus and gnome-keyring for
# the real Secret Service test, etcd, the oauth2-mock-server and oidc-provider
# npm packages, gotestsum), one line per package, waiting for a busy package
# manager and saying in one line what to do when it cannot install. Then it
# runs the keyring tests against a real Secret Service, fuzz targets briefly,
# and go test over the module (-race on all packages but cmd/internal/cli, see
# step 5) through gotestsum: one line per package (per test for
# cmd/internal/cli) as it finishes, then the ten slowest tests, the summary
# (each package once, then each failed test's output, once) and the total
# wall time. It exits non-zero when anything failed. go vet, staticcheck and
# go mod tidy -diff are .ci/lint.sh (CI, .ci/run, runs both).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s (at %s s)\n' "$*" "$SECONDS"; }

export PATH="$PATH:$(go env GOPATH)/bin"
# npm's "new version available" notice says nothing about shipkey.
export NPM_CONFIG_UPDATE_NOTIFIER=false

# 1. Debian packages, only those missing: one line each, apt's own output
#    only when it fails. A package manager busy elsewhere (another apt-get,
#    unattended upgrades) is waited for, up to 10 minutes, not failed.
apt_log="$(mktemp)"
apt_ready=""
apt_sudo=""
apt_prepare() {
  [ -z "$apt_ready" ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      apt_sudo="sudo -n"
    else
      echo "cannot install the packages the tests need ($*): not root and no password-less sudo."
      echo "Install them yourself (apt-get install $*) or run this as root, then run it again."
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    echo "cannot install the packages the tests need ($*): this is not a Debian-like system (no apt-get)."
    echo "Install them with your package manager, then run this again."
    exit 1
  fi
  if ! $apt_sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >"$apt_log" 2>&1; then
    echo "apt-get update failed (no network, or a package source is broken); what it said:"
    tail -n 20 "$apt_log"
    echo "Fix that (or install $* yourself), then run this again."
    exit 1
  fi
  apt_ready=1
}
apt_install() {
  apt_prepare "$@"
  echo "installing $* (apt-get)"
  if ! DEBIAN_FRONTEND=noninteractive $apt_sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "$@" >"$apt_log" 2>&1; then
    echo "apt-get could not install $*; what it said:"
    tail -n 30 "$apt_log"
    echo "Install them yourself (apt-get install $*), then run this again."
    exit 1
  fi
}
pkgs=()
command -v tmux >/dev/null || pkgs+=(tmux)
command -v node >/dev/null || pkgs+=(nodejs)
# NodeSource's nodejs carries npm; Debian's needs its own package.
{ command -v npm >/dev/null || command -v node >/dev/null; } || pkgs+=(npm)
command -v dbus-run-session >/dev/null || pkgs+=(dbus dbus-daemon)
command -v gnome-keyring-daemon >/dev/null || pkgs+=(gnome-keyring)
# curl reads shipkey's header --curl-config in cmd/internal/cli's token_output script.
command -v curl >/dev/null || pkgs+=(curl ca-certificates)
# Team keys: a real etcd cluster (store/team, cmd/shipkey/fleet start one).
command -v etcd >/dev/null || pkgs+=(etcd-server)
command -v etcdctl >/dev/null || pkgs+=(etcd-client)
# A machine cut off from etcd (cmd/shipkey/fleet TestPartitionDuringFleetRace): a network
# namespace with an iptables DROP rule inside.
command -v iptables >/dev/null || pkgs+=(iptables)
command -v ip >/dev/null || pkgs+=(iproute2)
[ "${#pkgs[@]}" -eq 0 ] || apt_install "${pkgs[@]}"
# Debian's nodejs may come without npm.
command -v npm >/dev/null || apt_install npm

# 2. The real third-party OAuth 2.0 server (npm oauth2-mock-server), pinned by the lock file.
srv=auth/testdata/oauth2server
npm_ci() {
  echo "installing $1's npm packages (npm ci)"
  if ! npm ci --prefix "$1" --no-audit --no-fund --loglevel=error >"$apt_log" 2>&1; then
    echo "npm ci in $1 failed (no network, or no npm registry reachable); what it said:"
    tail -n 20 "$apt_log"
    echo "Fix that, then run this again."
    exit 1
  fi
}
[ -d "$srv/node_modules/oauth2-mock-server" ] || npm_ci "$srv"

# 2b. The real third-party OpenID provider (npm oidc-provider) for the grant tests (auth and the
#     CLI's testdata/opscript, through internal/optest), pinned by the lock file.
op=auth/testdata/oidcprovider
[ -d "$op/node_modules/oidc-provider" ] || npm_ci "$op"

# 3. The test runner that shows progress.
if ! command -v gotestsum >/dev/null; then
  echo "installing gotestsum (go install)"
  if ! go install gotest.tools/gotestsum@v1.13.0 >"$apt_log" 2>&1; then
    echo "go install gotest.tools/gotestsum failed (no Go module proxy reachable?); what it said:"
    tail -n 20 "$apt_log"
    exit 1
  fi
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failed=0 keyring_failed=0
json="$scratch/go-test.json" cmdjson="$scratch/go-test-cmd.json" keyring_out="$scratch/keyring.out"

# gotestsum ends each run with "DONE n tests in t": the steps below drop
# that line (and the blank one before it), so the summary's count, over every
# run's events, is the only total printed.
no_done() { sed -u -e '/^DONE [0-9][0-9]* tests/d' -e '/^$/d'; }
# A test's own output waits for the summary: while the tests run, one line
# per package (per test for cmd/internal/cli, the long one).
status_lines() { grep --line-buffered -E '^(PASS|FAIL|SKIP|EMPTY) ' || true; }

# 4. The keyring backend against a real Secret Service (gnome-keyring) on a
#    private D-Bus session, in a scratch home: one line here, its output (if
#    it fails) at the end.
log "store: real Secret Service keyring"
mkdir -p "$scratch/home/run" && chmod 700 "$scratch/home/run"
if (
  # Keep Go's caches where they are while HOME points at the scratch folder.
  export GOPATH="$(go env GOPATH)" GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)"
  HOME="$scratch/home" XDG_DATA_HOME="$scratch/home/data" XDG_RUNTIME_DIR="$scratch/home/run" SHIPKEY_TEST_REAL_KEYRING=1 \
    dbus-run-session -- sh -c 'eval "$(echo shipkey-ci | gnome-keyring-daemon --unlock --components=secrets)";
      export GNOME_KEYRING_CONTROL; go test -count=1 -v -run RealKeyring ./store/' >"$keyring_out" 2>&1
) && grep -q -- '--- PASS: TestRealKeyring' "$keyring_out"; then
  echo "PASS the real Secret Service keyring (store, RealKeyring tests)"
else
  echo "FAIL the real Secret Service keyring (store, RealKeyring tests): its output is at the end"
  failed=1 keyring_failed=1
fi

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
gotestsum --format pkgname --format-icons text --hide-summary=all --jsonfile "$json" \
  -- -race -count=1 -timeout 20m $inproc | status_lines &
inproc_pid=$!
gotestsum --format testname --format-icons text --hide-summary=all --jsonfile "$cmdjson" \
  -- -count=1 -parallel 8 -timeout 20m ./cmd/internal/cli/ | status_lines || failed=1
wait "$inproc_pid" || failed=1

log "the ten slowest tests (over 2s)"
cat "$cmdjson" >>"$json" 2>/dev/null || true
gotestsum tool slowest --jsonfile "$json" --threshold 2s >"$scratch/slowest" || failed=1
head -n 10 "$scratch/slowest"

log "summary: each package once, then each failed test's output"
gotestsum --format pkgname --format-icons text --raw-command -- cat "$json" || failed=1
if [ "$keyring_failed" -ne 0 ]; then
  echo "=== FAIL: the real Secret Service keyring (store, RealKeyring tests)"
  tail -n 60 "$keyring_out"
fi
echo "total: $SECONDS s (bash .ci/test.sh, wall time)"
exit "$failed"
