#!/usr/bin/env bash
# Stops both servers of the pair (immediately: they hold only test data). PG_PAIR_WIPE=1 also
# removes PG_PAIR_DIR.
set -uo pipefail
. "$(dirname "$0")/common.sh"

for data in "$PG_PAIR_DIR/standby" "$PG_PAIR_DIR/primary"; do
  if [ -f "$data/postmaster.pid" ]; then pg_ctl_of "$data" -m immediate -w stop >/dev/null 2>&1; fi
  # A killed primary leaves its children behind for a moment, and its pid file for good.
  if [ -f "$data/postmaster.pid" ]; then kill -9 "$(head -1 "$data/postmaster.pid")" 2>/dev/null; rm -f "$data/postmaster.pid"; fi
done
[ "${PG_PAIR_WIPE:-0}" = 1 ] && rm -rf "$PG_PAIR_DIR"
exit 0
