#!/usr/bin/env bash
# Stops the PostgreSQL that scripts/postgres-start.sh started.
set -euo pipefail
DATA=${1:-/tmp/parley-pg}
BIN=$(pg_config --bindir)
if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -m fast stop; else "$BIN/pg_ctl" -D "$DATA" -m fast stop; fi
