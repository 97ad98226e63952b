#!/usr/bin/env bash
# One node of the cluster started by start.sh:
#   node.sh stop <a|b|c>       graceful stop (clients get CONNECTION_FORCED)
#   node.sh kill <a|b|c>       SIGKILL of its Erlang VM (clients' sockets are reset)
#   node.sh start <a|b|c>      starts it again; it rejoins the cluster with its data
#   node.sh leader <queue>     prints the node (a, b or c) of the quorum queue's leader
#   node.sh running            prints the running nodes, one a line (a, b, c)
#   node.sh connections        prints each node with clients' connections to it: "<a|b|c> <count>"
set -euo pipefail
cd "$(dirname "$0")"
. ./env.sh

command="${1:-}"
target="${2:-}"
case "$command" in
  stop) node_index "$target" >/dev/null && stop_node "$target" ;;
  kill) node_index "$target" >/dev/null && kill_node "$target" ;;
  start) node_index "$target" >/dev/null && start_node "$target" ;;
  leader | running | connections)
    for node in $CLUSTER_NODES; do
      # Ask any node that answers.
      if ctl "$node" ping >/dev/null 2>&1; then
        if [ "$command" = connections ]; then
          # The port a client connected to names the node it is connected to.
          ports="$(ctl "$node" list_connections port --no-table-headers --quiet)"
          for each in $CLUSTER_NODES; do
            count="$(echo "$ports" | grep -cx "$(node_port "$each")" || true)"
            echo "$each $count"
          done
        elif [ "$command" = running ]; then
          ctl "$node" cluster_status --formatter json | grep -o "\"running_nodes\":\[[^]]*\]" | grep -o "$CLUSTER_NAME-[abc]@" | sed "s/^$CLUSTER_NAME-\(.\)@$/\1/"
        else
          leader="$(ctl "$node" list_queues name leader --no-table-headers --quiet | awk -v q="$target" '$1 == q { print $2 }')"
          [ -n "$leader" ] || { echo "no queue '$target'" >&2; exit 1; }
          echo "$leader" | sed "s/^$CLUSTER_NAME-\(.\)@.*$/\1/"
        fi
        exit 0
      fi
    done
    echo "no node of the cluster answers" >&2
    exit 1
    ;;
  *)
    echo "usage: node.sh stop|kill|start <a|b|c> | leader <queue> | running | connections" >&2
    exit 2
    ;;
esac
