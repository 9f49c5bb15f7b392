#!/usr/bin/env bash
# Every test, on a fresh machine: the one command the README gives for testing, and what CI runs
# (.ci/run calls it). It installs what the tests drive besides Swift when it is missing (tmux
# for the terminal client, Chromium for the web client, nginx for the shipped proxy site,
# OpenSSL for TLS versions, PostgreSQL for the second store and the cluster; Debian packages,
# via sudo when not root), starts a throwaway PostgreSQL on 127.0.0.1:55433, builds once, runs
# the whole suite with nothing skipped, then the 10,000-frame WebSocket fuzz and schemathesis
# against a live server's OpenAPI document.
#
#   scripts/test.sh                 everything (about 15 minutes on 2 cores from a clean clone)
#   scripts/test.sh --filter NAME   the build, then only matching tests (no fuzz, no schemathesis)
#
# A bare `swift test` also works: it skips the tests of each missing tool and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchain"
swift --version

echo "== tools the tests drive: tmux (terminal client), Chromium (web client), nginx (reverse proxy), openssl (TLS versions), unzip (exports), promtool (alert rules), PostgreSQL"
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || missing+=(nginx)
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-dejavu-core)
# Reactions in the screenshots: without a colour emoji font Chromium draws 👍 as an empty box.
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || missing+=(fonts-noto-color-emoji)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# `bench partition` (PartitionBenchTests) makes network namespaces with iproute2.
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# Its lossy-link fault drops and queues a node's packets with iptables (statistic, NFQUEUE).
[ -x /usr/sbin/iptables ] || command -v iptables >/dev/null 2>&1 || missing+=(iptables)
# `bench partition --balancer` puts HAProxy in front of the nodes.
[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
# unzip reads the exports (v1.4) as people's tools will.
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
# promtool checks and unit-tests deploy/prometheus's alert rules.
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "missing: ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
tmux -V
chromium --version
{ [ -x /usr/sbin/nginx ] && /usr/sbin/nginx -v; } || nginx -v

echo "== postgresql"
PG_DATA=$(mktemp -d /tmp/parley-test-pg.XXXXXX)
rmdir "$PG_DATA"
# A throwaway server: no fsync (see scripts/postgres-start.sh), nothing here outlives the run.
PG_URL=$(PARLEY_PG_OPTIONS="-c fsync=off -c full_page_writes=off -c synchronous_commit=off" scripts/postgres-start.sh "$PG_DATA" "${PARLEY_TEST_PG_PORT:-55433}" | tail -1)
trap 'scripts/postgres-stop.sh "$PG_DATA" >/dev/null 2>&1 || true' EXIT
export PARLEY_TEST_POSTGRES_URL="$PG_URL"
echo "PARLEY_TEST_POSTGRES_URL=$PARLEY_TEST_POSTGRES_URL"
# Everything is installed and started: a test that finds a tool missing fails instead of skipping.
export PARLEY_TEST_REQUIRE_TOOLS=1

echo "== build (debug, with tests)"
# Line tables instead of full debug info (and none for C): the same debug build, 20 % less
# to compile and link (526 s against 655 s on 2 cores); backtraces keep their lines. The
# test steps pass the same flags, or they would build everything again.
fast=(-Xswiftc -gline-tables-only -Xcc -g0)
start=$(date +%s)
swift build --build-tests "${fast[@]}"
echo "build took $(( $(date +%s) - start )) s"

# A crash's backtrace is symbolicated quickly and never waits for a debugger: the full
# symbolication of a debug test binary's many threads can take longer than the run itself.
export SWIFT_BACKTRACE="enable=yes,interactive=no,symbolicate=fast"

if [ "${1:-}" = "--filter" ]; then
  scripts/test-watchdog.sh 1800 --skip-build "${fast[@]}" --filter "${2:?--filter NAME}"
  exit
fi

# Each step has a budget (here the whole suite takes about 4 minutes, 2 to 3 times that on a
# slow machine); a run that hangs stops with the tests still running and the process's stacks.
echo "== swift test"
scripts/test-watchdog.sh 1800 --skip-build "${fast[@]}"

echo "== WebSocket fuzzing, 10,000 mutated frames on their own"
PARLEY_FUZZ_FRAMES=10000 scripts/test-watchdog.sh 600 --skip-build "${fast[@]}" --filter WebSocketFuzzTests

echo "== schemathesis: a live server fuzzed against its own OpenAPI document"
timeout --signal=KILL 900 scripts/schemathesis.sh 120
