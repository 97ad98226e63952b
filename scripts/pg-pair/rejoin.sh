#!/usr/bin/env bash
# After failover.sh: rebuilds the old primary as a standby of the promoted server (a fresh
# pg_basebackup, as a failover manager re-clones a node it cannot rewind), on the old primary's
# port, streaming from PG_PAIR_REJOIN_UPSTREAM_PORT (default the promoted server's port). With
# PG_PAIR_SYNC=1 the promoted server waits for it again. The roles are swapped from then on.
set -euo pipefail
. "$(dirname "$0")/common.sh"

old=$PG_PAIR_DIR/primary
upstream=${PG_PAIR_REJOIN_UPSTREAM_PORT:-$PG_PAIR_STANDBY_PORT}
if [ -f "$old/postmaster.pid" ]; then
  kill -9 "$(head -1 "$old/postmaster.pid")" 2>/dev/null || true
fi
rm -rf "$old"
psql_promoted() { as_postgres "$PG_BIN/psql" -h "$PG_PAIR_DIR" -p "$PG_PAIR_STANDBY_PORT" -U postgres -qAt "$@"; }
# A slot of the old name may be left from an earlier rejoin.
psql_promoted -c "SELECT pg_drop_replication_slot('$PG_PAIR_STANDBY_NAME') FROM pg_replication_slots WHERE slot_name = '$PG_PAIR_STANDBY_NAME'" >/dev/null
as_postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PAIR_STANDBY_PORT" -U postgres -D "$old" \
  -X stream -C -S "$PG_PAIR_STANDBY_NAME" -R --no-sync
cat >>"$old/postgresql.conf" <<CONF
port = $PG_PAIR_PRIMARY_PORT
hot_standby = on
CONF
cat >>"$old/postgresql.auto.conf" <<CONF
primary_conninfo = 'host=127.0.0.1 port=$upstream user=postgres application_name=$PG_PAIR_STANDBY_NAME'
primary_slot_name = '$PG_PAIR_STANDBY_NAME'
synchronous_standby_names = ''
CONF
pg_ctl_of "$old" -w -l "$PG_PAIR_DIR/rejoined.log" start >/dev/null
if [ "$PG_PAIR_SYNC" = 1 ]; then
  psql_promoted -c "ALTER SYSTEM SET synchronous_standby_names = '$PG_PAIR_STANDBY_NAME'" -c "SELECT pg_reload_conf()" >/dev/null
fi
echo "pg-pair: old primary rejoined as a standby on $PG_PAIR_PRIMARY_PORT, streaming from $upstream"
