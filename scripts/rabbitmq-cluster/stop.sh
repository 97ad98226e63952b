#!/usr/bin/env bash
# Stops the three-node cluster started by start.sh and its epmd; with --purge also deletes its
# directory (data, logs, cookie). Safe to run when nothing is running.
set -uo pipefail
cd "$(dirname "$0")"
. ./env.sh

for node in $CLUSTER_NODES; do stop_node "$node" & done
wait
# A node that did not stop in time (or a stuck boot) is killed.
for node in $CLUSTER_NODES; do kill_node "$node"; done
# The cluster's own epmd, on its own port; the machine's epmd is left alone.
/usr/lib/erlang/bin/epmd -port "$ERL_EPMD_PORT" -kill >/dev/null 2>&1 || epmd -port "$ERL_EPMD_PORT" -kill >/dev/null 2>&1 || true
if [ "${1:-}" = "--purge" ]; then rm -rf "$CLUSTER_DIR"; fi
