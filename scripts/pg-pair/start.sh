#!/usr/bin/env bash
# Starts a PostgreSQL 15 primary and a streaming standby on their own ports, for failover tests
# and soaks. Never touches the machine's shared server. Settings (environment):
#   PG_PAIR_DIR           data, sockets and logs (default $TMPDIR/pg-pair); wiped first
#   PG_PAIR_PRIMARY_PORT  default 55432      PG_PAIR_STANDBY_PORT  default 55433
#   PG_PAIR_UPSTREAM_PORT the port the standby streams from (default the primary's)
#   PG_PAIR_STANDBY_NAME  application_name and replication slot (default standby1)
#   PG_PAIR_SYNC=1        synchronous replication: commits wait for the standby's flush
# Trust authentication on 127.0.0.1 only: a throwaway pair for tests, not a deployment.
set -euo pipefail
. "$(dirname "$0")/common.sh"

if [ ! -x "$PG_BIN/initdb" ]; then
  echo "pg-pair: no PostgreSQL binaries in $PG_BIN (apt-get install postgresql-15, or set PG_BIN)" >&2
  exit 2
fi

primary=$PG_PAIR_DIR/primary
standby=$PG_PAIR_DIR/standby
"$(dirname "$0")/stop.sh" >/dev/null 2>&1 || true
rm -rf "$primary" "$standby"
mkdir -p "$PG_PAIR_DIR"
chown postgres: "$PG_PAIR_DIR" 2>/dev/null || true

as_postgres "$PG_BIN/initdb" -D "$primary" -U postgres --auth=trust -E UTF8 --no-sync >"$PG_PAIR_DIR/initdb.log"
sync_names=''
[ "$PG_PAIR_SYNC" = 1 ] && sync_names=$PG_PAIR_STANDBY_NAME
cat >>"$primary/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PAIR_PRIMARY_PORT
unix_socket_directories = '$PG_PAIR_DIR'
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
max_connections = 100
synchronous_standby_names = '$sync_names'
logging_collector = off
CONF
echo "host replication all 127.0.0.1/32 trust" >>"$primary/pg_hba.conf"
pg_ctl_of "$primary" -w -l "$PG_PAIR_DIR/primary.log" start >/dev/null

as_postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PAIR_PRIMARY_PORT" -U postgres -D "$standby" \
  -X stream -C -S "$PG_PAIR_STANDBY_NAME" -R --no-sync
cat >>"$standby/postgresql.conf" <<CONF
port = $PG_PAIR_STANDBY_PORT
hot_standby = on
CONF
# After -R's settings, so these win: the upstream may be a proxy, and the name is what
# synchronous_standby_names and pg_stat_replication.application_name match.
cat >>"$standby/postgresql.auto.conf" <<CONF
primary_conninfo = 'host=127.0.0.1 port=$PG_PAIR_UPSTREAM_PORT user=postgres application_name=$PG_PAIR_STANDBY_NAME'
primary_slot_name = '$PG_PAIR_STANDBY_NAME'
CONF
pg_ctl_of "$standby" -w -l "$PG_PAIR_DIR/standby.log" start >/dev/null

cat >"$PG_PAIR_DIR/pair.env" <<ENV
PG_PAIR_PRIMARY_URL=postgres://postgres@127.0.0.1:$PG_PAIR_PRIMARY_PORT/postgres
PG_PAIR_STANDBY_URL=postgres://postgres@127.0.0.1:$PG_PAIR_STANDBY_PORT/postgres
ENV
echo "pg-pair: primary on $PG_PAIR_PRIMARY_PORT, standby '$PG_PAIR_STANDBY_NAME' on $PG_PAIR_STANDBY_PORT ($([ "$PG_PAIR_SYNC" = 1 ] && echo synchronous || echo asynchronous)), in $PG_PAIR_DIR"
