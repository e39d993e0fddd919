#!/usr/bin/env bash
# A dms cluster on this machine, for trying one: N nodes that share no files, every store on one
# PostgreSQL database and observations through one Kafka broker, as separate machines would run them.
#
#   scripts/cluster.sh start N   start nodes 1..N that are not running (N at most 20); wait for each /readyz
#   scripts/cluster.sh stop      SIGTERM every node and wait for it to exit (KILL after CLUSTER_STOP_TIMEOUT)
#   scripts/cluster.sh status    each node's pid, REST address and /readyz answer; exit 0 when all are ready
#   scripts/cluster.sh kill I    SIGKILL node I, as a crash would (try failover; `start N` brings it back)
#
# Node i has its data dir, pid file and log under $CLUSTER_DIR/node-i and its own ports:
#   REST 3000+i, proxy control 3100+i, MQTT 3200+i, proxy devices 3300+i (all shifted by CLUSTER_PORT_BASE)
#   proxy sessions 41000+50(i-1) .. +49 (shifted by CLUSTER_PROXY_PORT_BASE)
# The nodes share the service's own keys (token and URL signing, device credentials) through the
# database, where the first node generates them, so that a token, a signed URL or a device secret
# from one node is good on every other; a DMS_JWT_SECRET of yours is passed to every node alike.
# `stop` leaves the data dirs, the database and the broker as they are (scripts/kafka.sh stop;
# dropdb dms_cluster).
#
# Environment (all optional):
#   CLUSTER_DIR              node dirs and the lock                   (default /tmp/dms-cluster)
#   CLUSTER_PORT_BASE        REST of node i is this + i               (default 3000)
#   CLUSTER_PROXY_PORT_BASE  first proxy session port of node 1       (default 41000)
#   CLUSTER_START_TIMEOUT    seconds for every node to be ready       (default 180)
#   CLUSTER_STOP_TIMEOUT     seconds between TERM and KILL            (default 30)
#   DMS_DATABASE_URL         the shared database; without it, database dms_cluster on the server
#                            at CLUSTER_PG_SERVER, created if missing (default postgres://postgres@127.0.0.1:5432)
#   KAFKA_BROKERS            the shared broker; without it, scripts/kafka.sh start (its KAFKA_* apply)
#   DMS_*                    any other setting of dms, passed to every node (src/config); the ones
#                            above that differ per node are set here
#
# Each node runs the compiled service (node dist/main.js) when `npm run build` is newer than every
# file of src/, else the sources through tsx's loader: one node process either way, so the pid file
# names the process that SIGTERM and SIGKILL reach.
set -euo pipefail

CLUSTER_DIR="${CLUSTER_DIR:-/tmp/dms-cluster}"
CLUSTER_PORT_BASE="${CLUSTER_PORT_BASE:-3000}"
CLUSTER_PROXY_PORT_BASE="${CLUSTER_PROXY_PORT_BASE:-41000}"
CLUSTER_START_TIMEOUT="${CLUSTER_START_TIMEOUT:-180}"
CLUSTER_STOP_TIMEOUT="${CLUSTER_STOP_TIMEOUT:-30}"
CLUSTER_PG_SERVER="${CLUSTER_PG_SERVER:-postgres://postgres@127.0.0.1:5432}"
CLUSTER_DATABASE="dms_cluster"
MAX_NODES=20
PROXY_PORTS_PER_NODE=50

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "cluster.sh: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: $0 start N | stop | status | kill I" >&2
  exit 2
}

# --- layout --------------------------------------------------------------------------------------

node_dir() { echo "$CLUSTER_DIR/node-$1"; }
http_port() { echo $((CLUSTER_PORT_BASE + $1)); }
proxy_control_port() { echo $((CLUSTER_PORT_BASE + 100 + $1)); }
mqtt_port() { echo $((CLUSTER_PORT_BASE + 200 + $1)); }
proxy_device_port() { echo $((CLUSTER_PORT_BASE + 300 + $1)); }
proxy_ports() {
  local first=$((CLUSTER_PROXY_PORT_BASE + PROXY_PORTS_PER_NODE * ($1 - 1)))
  echo "$first-$((first + PROXY_PORTS_PER_NODE - 1))"
}

# The node numbers that have a dir under CLUSTER_DIR, in order.
known_nodes() {
  local dir
  for dir in "$CLUSTER_DIR"/node-*; do
    if [[ -d "$dir" ]]; then echo "${dir##*/node-}"; fi
  done | sort -n
}

# PID of node $1 if it is alive (lib.sh's running_pid reads PID_FILE).
node_pid() {
  PID_FILE="$(node_dir "$1")/dms.pid"
  running_pid
}

# A positive whole number no larger than MAX_NODES, or usage.
node_number() {
  if [[ ! "${1:-}" =~ ^[1-9][0-9]?$ ]] || (($1 > MAX_NODES)); then
    log "expected a node number from 1 to $MAX_NODES, got '${1:-}'"
    usage
  fi
}

# --- HTTP ----------------------------------------------------------------------------------------

# Prints "<status> <body>" of GET http://127.0.0.1:PORT/PATH, through bash's /dev/tcp (no curl needed).
http_get() {
  local reply
  # shellcheck disable=SC2016 # $0 and $1 are for the inner bash
  reply="$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$1" >&3 && cat <&3' "$1" "$2" 2>/dev/null)" || return 1
  local status="${reply%%$'\r'*}"
  status="${status#HTTP/* }"
  printf '%s %s\n' "${status%% *}" "${reply#*$'\r\n\r\n'}"
}

# True when node $1 answers 200 on /readyz.
node_ready() {
  local answer
  answer="$(http_get "$(http_port "$1")" /readyz)" && [[ "$answer" == "200 "* ]]
}

# --- what the nodes share ------------------------------------------------------------------------

# DMS_DATABASE_URL, or database dms_cluster on CLUSTER_PG_SERVER, created when missing.
database_url() {
  if [[ -n "${DMS_DATABASE_URL:-}" ]]; then
    echo "$DMS_DATABASE_URL"
    return 0
  fi
  command -v psql >/dev/null || die "psql not found: set DMS_DATABASE_URL to the database the nodes share"
  local exists
  exists="$(psql "$CLUSTER_PG_SERVER/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$CLUSTER_DATABASE'")" ||
    die "cannot reach PostgreSQL at $CLUSTER_PG_SERVER (set CLUSTER_PG_SERVER or DMS_DATABASE_URL)"
  if [[ "$exists" != 1 ]]; then
    log "creating database $CLUSTER_DATABASE on $CLUSTER_PG_SERVER"
    psql "$CLUSTER_PG_SERVER/postgres" -qc "CREATE DATABASE $CLUSTER_DATABASE" >/dev/null
  fi
  echo "$CLUSTER_PG_SERVER/$CLUSTER_DATABASE"
}

# KAFKA_BROKERS, or the broker scripts/kafka.sh starts (or finds already running).
kafka_brokers() {
  if [[ -n "${KAFKA_BROKERS:-}" ]]; then
    echo "$KAFKA_BROKERS"
    return 0
  fi
  local line
  line="$(bash "$REPO_ROOT/scripts/kafka.sh" start | grep '^KAFKA_BROKERS=')" || die "scripts/kafka.sh start failed"
  echo "${line#KAFKA_BROKERS=}"
}

# The command that runs one node (see the header): the build when it is current, else the sources.
node_command() {
  local built="$REPO_ROOT/dist/main.js"
  if [[ -f "$built" && -z "$(find "$REPO_ROOT/src" -newer "$built" -print -quit)" ]]; then
    NODE_COMMAND=(node "$built")
  else
    NODE_COMMAND=(node --import tsx "$REPO_ROOT/src/main.ts")
  fi
}

# --- commands ------------------------------------------------------------------------------------

# Node $1 in the background with its own data dir and ports; everything else from the environment.
start_node() {
  local i="$1" dir
  dir="$(node_dir "$i")"
  local port
  for port in "$(http_port "$i")" "$(proxy_control_port "$i")" "$(mqtt_port "$i")" "$(proxy_device_port "$i")"; do
    port_open "$port" && die "port $port of node $i is taken (set CLUSTER_PORT_BASE to move every node's ports)"
  done
  mkdir -p "$dir/data"
  # The log of the run before (a killed node's, say) is kept once.
  if [[ -f "$dir/dms.log" ]]; then mv "$dir/dms.log" "$dir/dms.log.1"; fi
  PID_FILE="$dir/dms.pid"
  # env execs the node in the same process, so the pid file holds the node's pid. From the repository
  # root, where tsx's loader resolves.
  (cd "$REPO_ROOT" && start_detached "$dir/dms.log" env \
    DMS_DATA_DIR="$dir/data" \
    DMS_HTTP_HOST=127.0.0.1 \
    DMS_HTTP_PORT="$(http_port "$i")" \
    DMS_PROXY_CONTROL_PORT="$(proxy_control_port "$i")" \
    DMS_MQTT_PORT="$(mqtt_port "$i")" \
    DMS_PROXY_DEVICE_PORT="$(proxy_device_port "$i")" \
    DMS_PROXY_PORTS="$(proxy_ports "$i")" \
    DMS_DATABASE_URL="$DATABASE_URL" \
    KAFKA_BROKERS="$BROKERS" \
    "${NODE_COMMAND[@]}")
  STARTED+=("$i")
  log "node $i starting: http://127.0.0.1:$(http_port "$i") (log $dir/dms.log)"
}

# On a failed start, the nodes this start launched are stopped again (the ones already running stay).
stop_started() {
  local i pid
  for i in "${STARTED[@]}"; do
    if pid="$(node_pid "$i")"; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$(node_dir "$i")/dms.pid"
  done
  ((${#STARTED[@]} == 0)) || log "stopped the nodes this start launched: ${STARTED[*]}"
}

# The last lines node $1 logged, but for the requests of await_ready's polling.
log_tail() {
  grep -v '"path":"/readyz"' "$(node_dir "$1")/dms.log" | tail -n 20 >&2 || true
}

# Waits for node $1's /readyz within the start's deadline; dies with its log's tail when it exits
# first or the deadline passes.
await_ready() {
  local i="$1" pid="" log_file
  log_file="$(node_dir "$i")/dms.log"
  PID_FILE="$(node_dir "$i")/dms.pid"
  while ((SECONDS < DEADLINE)); do
    [[ -n "$pid" ]] || pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      log_tail "$i"
      die "node $i exited during start-up (log above, all of it in $log_file)"
    fi
    if node_ready "$i"; then
      log "node $i ready (pid $pid)"
      return 0
    fi
    sleep 0.5
  done
  log_tail "$i"
  local answer
  answer="$(http_get "$(http_port "$i")" /readyz || echo "no answer")"
  die "node $i not ready within ${CLUSTER_START_TIMEOUT}s: /readyz $answer (log above, all of it in $log_file)"
}

cmd_start() {
  local n="$1" i
  mkdir -p "$CLUSTER_DIR"
  STARTED=()
  trap stop_started EXIT
  DATABASE_URL="$(database_url)"
  BROKERS="$(kafka_brokers)"
  node_command
  for ((i = 1; i <= n; i++)); do
    if node_pid "$i" >/dev/null; then
      log "node $i already running"
    else
      start_node "$i"
    fi
  done
  DEADLINE=$((SECONDS + CLUSTER_START_TIMEOUT))
  for ((i = 1; i <= n; i++)); do await_ready "$i"; done
  trap - EXIT
  log "$n node(s) ready on database ${DATABASE_URL##*@} and Kafka $BROKERS"
  print_status $(seq 1 "$n") || true
}

cmd_stop() {
  local i pid stopping=()
  for i in $(known_nodes); do
    if pid="$(node_pid "$i")"; then
      kill -TERM "$pid" 2>/dev/null || true
      stopping+=("$i:$pid")
    fi
  done
  if ((${#stopping[@]} == 0)); then
    log "no node running under $CLUSTER_DIR"
    return 0
  fi
  # Every node got its TERM at once above; stop_pid waits for each (and KILLs a node that hangs).
  local entry
  for entry in "${stopping[@]}"; do
    stop_pid "${entry#*:}" "$CLUSTER_STOP_TIMEOUT" "node ${entry%%:*}"
    rm -f "$(node_dir "${entry%%:*}")/dms.pid"
  done
}

# One line for each of the nodes named; false unless every one of them is ready.
print_status() {
  local i pid answer all_ready=0
  for i in "$@"; do
    if ! pid="$(node_pid "$i")"; then
      echo "node $i: not running"
      all_ready=1
      continue
    fi
    answer="$(http_get "$(http_port "$i")" /readyz || echo "no answer")"
    echo "node $i: pid $pid http://127.0.0.1:$(http_port "$i") readyz $answer"
    [[ "$answer" == "200 "* ]] || all_ready=1
  done
  return "$all_ready"
}

cmd_status() {
  local nodes
  nodes="$(known_nodes)"
  if [[ -z "$nodes" ]]; then
    echo "no nodes under $CLUSTER_DIR"
    return 1
  fi
  # shellcheck disable=SC2086 # one node number a word
  print_status $nodes
}

cmd_kill() {
  local i="$1" pid
  pid="$(node_pid "$i")" || die "node $i is not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$(node_dir "$i")/dms.pid"
  log "node $i (pid $pid) killed"
}

# One start, stop or kill at a time: two starts would both see a node missing and start it twice.
locked() {
  mkdir -p "$CLUSTER_DIR"
  exec 9>"$CLUSTER_DIR/.lock"
  flock -w $((CLUSTER_START_TIMEOUT + CLUSTER_STOP_TIMEOUT)) 9 || die "timed out waiting for the lock"
  "$@"
}

case "${1:-}" in
  start)
    [[ $# -eq 2 ]] || usage
    node_number "$2"
    locked cmd_start "$2"
    ;;
  stop)
    [[ $# -eq 1 ]] || usage
    locked cmd_stop
    ;;
  status)
    [[ $# -eq 1 ]] || usage
    cmd_status
    ;;
  kill)
    [[ $# -eq 2 ]] || usage
    node_number "$2"
    locked cmd_kill "$2"
    ;;
  *) usage ;;
esac
