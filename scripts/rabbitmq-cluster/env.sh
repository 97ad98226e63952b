# Shared settings of the three-node RabbitMQ cluster scripts; sourced, never run.
#
# Everything the cluster owns lives under RABBITMQ_CLUSTER_DIR: its Erlang cookie (in a HOME of
# its own), one config file, data and log directory per node. It has its own epmd port too, so
# it never talks to, nor shares a cookie with, a broker already running on this machine.
#
#   RABBITMQ_CLUSTER_DIR        where it lives (default: $TMPDIR/nestjs-outbox-rabbitmq-cluster)
#   RABBITMQ_CLUSTER_PORT       AMQP port of node a; b and c take the next two (default: 5681)
#   RABBITMQ_CLUSTER_DIST_PORT  Erlang distribution port of node a, b and c the next two (default: 25681)
#   RABBITMQ_CLUSTER_EPMD_PORT  the cluster's own epmd (default: 4381)
#   RABBITMQ_CLUSTER_NAME       node name prefix: <name>-a@localhost… (default: outbox)
#   RABBITMQ_SBIN               where rabbitmq-server and rabbitmqctl are (default: /usr/lib/rabbitmq/bin)

CLUSTER_DIR="${RABBITMQ_CLUSTER_DIR:-${TMPDIR:-/tmp}/nestjs-outbox-rabbitmq-cluster}"
CLUSTER_PORT="${RABBITMQ_CLUSTER_PORT:-5681}"
CLUSTER_DIST_PORT="${RABBITMQ_CLUSTER_DIST_PORT:-25681}"
CLUSTER_NAME="${RABBITMQ_CLUSTER_NAME:-outbox}"
RABBITMQ_SBIN="${RABBITMQ_SBIN:-/usr/lib/rabbitmq/bin}"
CLUSTER_NODES="a b c"

# Read by every Erlang VM these scripts start, the CLI tools' included.
export ERL_EPMD_PORT="${RABBITMQ_CLUSTER_EPMD_PORT:-4381}"
export ERL_EPMD_ADDRESS=127.0.0.1
export HOME="$CLUSTER_DIR/home"
# A VM that crashes (a CLI tool's included) leaves its dump with the cluster, not in the caller's directory.
export ERL_CRASH_DUMP="$CLUSTER_DIR/erl_crash.dump"
# Never the machine's /etc/rabbitmq/rabbitmq-env.conf: it names the shared broker's node.
export RABBITMQ_CONF_ENV_FILE="$CLUSTER_DIR/rabbitmq-env.conf"
unset ERL_FLAGS RABBITMQ_NODENAME RABBITMQ_NODE_PORT

# The index (0, 1, 2) of node a, b or c.
node_index() {
  case "$1" in
    a) echo 0 ;;
    b) echo 1 ;;
    c) echo 2 ;;
    *) echo "unknown node '$1': expected a, b or c" >&2; return 1 ;;
  esac
}

node_name() { echo "$CLUSTER_NAME-$1@localhost"; }
node_port() { echo $((CLUSTER_PORT + $(node_index "$1"))); }
node_dist_port() { echo $((CLUSTER_DIST_PORT + $(node_index "$1"))); }
node_dir() { echo "$CLUSTER_DIR/$1"; }

# rabbitmqctl (or another CLI tool: ctl_tool rabbitmq-queues …) against node $1.
ctl() {
  local node="$1"
  shift
  ctl_tool rabbitmqctl -n "$(node_name "$node")" "$@"
}
ctl_tool() {
  local tool="$1"
  shift
  "$RABBITMQ_SBIN/$tool" "$@"
}

# Starts node $1 in the background (its data survive a stop, so a stopped member rejoins) and
# waits until it accepts AMQP connections.
start_node() {
  local node="$1" dir
  dir="$(node_dir "$node")"
  mkdir -p "$dir/mnesia" "$dir/log"
  cat >"$dir/rabbitmq.conf" <<CONF
listeners.tcp.1 = 127.0.0.1:$(node_port "$node")
loopback_users = none
log.console = false
log.file.level = info
disk_free_limit.absolute = 50MB
vm_memory_high_watermark.relative = 0.2
CONF
  echo "[]." >"$dir/enabled_plugins"
  (
    export RABBITMQ_NODENAME="$(node_name "$node")"
    export RABBITMQ_DIST_PORT="$(node_dist_port "$node")"
    export RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf"
    export RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
    export RABBITMQ_MNESIA_BASE="$dir/mnesia"
    export RABBITMQ_LOG_BASE="$dir/log"
    export RABBITMQ_PID_FILE="$dir/pid"
    export RABBITMQ_PLUGINS_EXPAND_DIR="$dir/plugins-expand"
    export RABBITMQ_FEATURE_FLAGS_FILE="$dir/feature_flags"
    export RABBITMQ_QUORUM_DIR="$dir/mnesia/quorum"
    # Two schedulers: the nodes share a small machine with everything else.
    # Two schedulers: the nodes share a small machine with everything else. Distribution on
    # 127.0.0.1 only, like the AMQP listener.
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 2:2 +sbwt none +sbwtdcpu none +sbwtdio none -kernel inet_dist_use_interface {127,0,0,1}"
    setsid nohup "$RABBITMQ_SBIN/rabbitmq-server" >"$dir/log/console.out" 2>&1 </dev/null &
  )
  wait_node "$node"
}

# Waits until node $1 runs the broker (rabbitmqctl wait reads the node's pid file).
wait_node() {
  local node="$1" timeout="${RABBITMQ_CLUSTER_START_TIMEOUT:-600}"
  if ! ctl "$node" wait "$(node_dir "$node")/pid" --timeout "$timeout" >/dev/null; then
    echo "node $(node_name "$node") did not start within ${timeout}s; see $(node_dir "$node")/log" >&2
    return 1
  fi
}

# Stops node $1 gracefully (its clients see connection.close 320 CONNECTION_FORCED).
stop_node() {
  local node="$1" pid
  # rabbitmqctl stop waits a long while for a node that is not running: ask only a live one.
  pid="$(cat "$(node_dir "$node")/pid" 2>/dev/null)" || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  ctl "$node" stop "$(node_dir "$node")/pid" --timeout 120 >/dev/null 2>&1 || true
}

# Kills node $1's Erlang VM with SIGKILL: its clients' sockets are reset, as in a host crash.
kill_node() {
  local node="$1" pid
  pid="$(cat "$(node_dir "$node")/pid" 2>/dev/null)" || return 0
  kill -9 "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
}
