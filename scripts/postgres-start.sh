#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1 for Parley's tests and benchmarks, installing it
# from Debian's packages first when it is missing. Prints the URL to use as
# PARLEY_TEST_POSTGRES_URL / --database on its last line.
#
#   scripts/postgres-start.sh [DATA_DIR] [PORT]
#
# The server runs as the unprivileged `postgres` user (trust auth on loopback only) and stays
# up after the script returns; stop it with `scripts/postgres-stop.sh DATA_DIR`.
set -euo pipefail
DATA=${1:-/tmp/parley-pg}
PORT=${2:-55432}

if ! command -v pg_config >/dev/null || [ ! -x "$(pg_config --bindir)/initdb" ]; then
  echo "installing postgresql from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
BIN=$(pg_config --bindir)
id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ -f "$DATA/postmaster.pid" ] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
  echo "postgres already running in $DATA" >&2
else
  if [ ! -f "$DATA/PG_VERSION" ]; then
    mkdir -p "$DATA"
    [ "$(id -u)" = 0 ] && chown postgres "$DATA"
    as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  # Tuned for a small machine: durable (fsync on) but with room for many connections.
  # PARLEY_PG_OPTIONS adds settings: .ci/run's throwaway server turns fsync off, since the
  # test suite creates and drops dozens of databases at once and every DROP DATABASE waits
  # for a checkpoint that syncs all their files (30 s stalls on 2 cores). Benchmarks keep fsync.
  as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DATA -c max_connections=500 -c shared_buffers=256MB ${PARLEY_PG_OPTIONS:-}" start >&2
fi
as_pg "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='parley'" | grep -q 1 \
  || as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres parley
echo "postgres://postgres@127.0.0.1:$PORT/parley"
