# Shared settings of the pg-pair scripts: sourced, never run.
# Debian's PostgreSQL 15 binaries, run as the postgres OS user when we are root (PostgreSQL refuses root).
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_PAIR_DIR=${PG_PAIR_DIR:-${TMPDIR:-/tmp}/pg-pair}
PG_PAIR_PRIMARY_PORT=${PG_PAIR_PRIMARY_PORT:-55432}
PG_PAIR_STANDBY_PORT=${PG_PAIR_STANDBY_PORT:-55433}
# Where the standby streams from: the primary's port, or a proxy in front of it (a test cuts it to make the standby lag).
PG_PAIR_UPSTREAM_PORT=${PG_PAIR_UPSTREAM_PORT:-$PG_PAIR_PRIMARY_PORT}
PG_PAIR_STANDBY_NAME=${PG_PAIR_STANDBY_NAME:-standby1}
PG_PAIR_SYNC=${PG_PAIR_SYNC:-0}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_ctl_of() { # <data dir> <pg_ctl args...>
  local data=$1
  shift
  as_postgres "$PG_BIN/pg_ctl" -D "$data" "$@"
}
