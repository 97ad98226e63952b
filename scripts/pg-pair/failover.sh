#!/usr/bin/env bash
# The failover a manager would do: kill -9 the primary (no shutdown checkpoint, no goodbye to
# clients), then promote the standby and wait until it accepts writes. Pointing the stable
# address at the standby is the caller's part (a test re-points its TCP proxy).
set -euo pipefail
. "$(dirname "$0")/common.sh"

primary=$PG_PAIR_DIR/primary
standby=$PG_PAIR_DIR/standby
if [ -f "$primary/postmaster.pid" ]; then
  pid=$(head -1 "$primary/postmaster.pid")
  kill -9 "$pid" 2>/dev/null || true
  # The postmaster's children notice its death and exit; wait for the port to be free.
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
fi
pg_ctl_of "$standby" -w promote >/dev/null
# The promoted server inherited synchronous_standby_names from the primary it was copied from, and
# has no standby yet: as failover managers do (Patroni without synchronous_mode_strict), it stops
# waiting for one until a standby rejoins (rejoin.sh), or every commit would hang.
as_postgres "$PG_BIN/psql" -h "$PG_PAIR_DIR" -p "$PG_PAIR_STANDBY_PORT" -U postgres -qAt \
  -c "ALTER SYSTEM SET synchronous_standby_names = ''" -c "SELECT pg_reload_conf()" >/dev/null
echo "pg-pair: primary killed, standby promoted on $PG_PAIR_STANDBY_PORT"
