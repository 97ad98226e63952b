#!/usr/bin/env bash
# Starts a three-node RabbitMQ cluster on 127.0.0.1 for tests and soaks: nodes a, b, c on three
# AMQP ports (5681, 5682, 5683 by default), b and c joined to a. Prints the AMQP URIs, one a line.
# Settings: see env.sh. Stop it with stop.sh; stop or start one node with node.sh.
set -euo pipefail
cd "$(dirname "$0")"
. ./env.sh

if [ ! -x "$RABBITMQ_SBIN/rabbitmq-server" ]; then
  echo "rabbitmq-server not found in $RABBITMQ_SBIN (install rabbitmq-server, or set RABBITMQ_SBIN)" >&2
  exit 2
fi

mkdir -p "$HOME"
: >"$RABBITMQ_CONF_ENV_FILE"
if [ ! -f "$HOME/.erlang.cookie" ]; then
  # A cookie of its own: the cluster's nodes trust each other and nothing else.
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$HOME/.erlang.cookie")
  chmod 400 "$HOME/.erlang.cookie"
fi

# Node a first; b and c start meanwhile, then join it one after the other.
start_node a &
start_a=$!
start_node b &
start_b=$!
start_node c &
start_c=$!
wait "$start_a" "$start_b" "$start_c"

for node in b c; do
  if ! ctl a cluster_status --formatter json 2>/dev/null | grep -q "\"$(node_name "$node")\""; then
    {
      ctl "$node" stop_app
      ctl "$node" reset
      ctl "$node" join_cluster "$(node_name a)"
      ctl "$node" start_app
    } >>"$(node_dir "$node")/log/join.log" 2>&1 || {
      echo "node $(node_name "$node") could not join $(node_name a); see $(node_dir "$node")/log/join.log" >&2
      exit 1
    }
  fi
done
ctl a await_online_nodes 3 --timeout 300 >/dev/null

for node in $CLUSTER_NODES; do
  echo "amqp://guest:guest@127.0.0.1:$(node_port "$node")"
done
