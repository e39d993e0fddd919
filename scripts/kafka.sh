#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft, combined broker+controller) for tests and benchmarks.
#
#   scripts/kafka.sh start    download jars if needed, format storage, start, wait until it answers metadata
#   scripts/kafka.sh stop     stop the broker and delete its state dir
#   scripts/kafka.sh status   exit 0 and print "running <brokers>" if a broker answers on the port
#
# Why this shape: no Docker and no internet besides Maven Central, so the broker jars come from Maven
# Central through the machine's `mvn` and run with plain `java -cp`. Everything lives in a throw-away
# state dir, so each start is a clean cluster; the downloaded jars are cached so only the first start
# downloads anything.
#
# Environment (all optional):
#   KAFKA_PORT              PLAINTEXT listener port                        (default 9092)
#   KAFKA_CONTROLLER_PORT   KRaft controller listener port                 (default 9093)
#   KAFKA_VERSION           org.apache.kafka:kafka_2.13 version (4.x only) (default 4.3.1)
#   KAFKA_CACHE_DIR         where the jars are kept        (default $HOME/.cache/dms-kafka/<version>)
#   KAFKA_STATE_DIR         pid file, config, data, logs   (default /tmp/dms-kafka-<port>)
#   KAFKA_HEAP_OPTS         JVM heap flags                 (default -Xms512m -Xmx512m)
#   KAFKA_START_TIMEOUT     seconds to wait for readiness  (default 120)
#   KAFKA_STOP_TIMEOUT      seconds between TERM and KILL  (default 30)
#   KAFKA_EXTRA_CONFIG      extra server.properties lines appended verbatim (newline separated)
set -euo pipefail

# 4.4.0 is on Maven Central but its kafka-tools-api jar is not, so it does not resolve; 4.3.1 is the
# newest release whose full runtime dependency set resolves.
KAFKA_VERSION="${KAFKA_VERSION:-4.3.1}"
# Kafka's Maven poms bring slf4j-api 1.7 and log4j-core but no slf4j binding (the binary distribution
# ships one in libs/). Without it every broker log line is dropped; this binding routes them to log4j2.
LOG4J_VERSION="2.25.4"

KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_CACHE_DIR="${KAFKA_CACHE_DIR:-$HOME/.cache/dms-kafka/$KAFKA_VERSION}"
KAFKA_STATE_DIR="${KAFKA_STATE_DIR:-/tmp/dms-kafka-$KAFKA_PORT}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms512m -Xmx512m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_EXTRA_CONFIG="${KAFKA_EXTRA_CONFIG:-}"

BROKERS="127.0.0.1:$KAFKA_PORT"
PID_FILE="$KAFKA_STATE_DIR/kafka.pid"
LOG_DIR="$KAFKA_STATE_DIR/logs"
# The readiness probe (scripts/kafka-probe.mjs) uses the repo's kafkajs from node_modules.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "kafka.sh: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- broker probes -------------------------------------------------------------------------------

# True when the broker answers a real metadata request (an open port alone can be a broker that is
# still starting, or some other program). With "groups" it must also answer for consumer groups:
# right after start-up the group coordinator is still creating __consumer_offsets, and a test's first
# consumer would otherwise log "coordinator not available/loading" errors and retry.
broker_answers() {
  port_open "$KAFKA_PORT" || return 1
  timeout 15 node "$REPO_ROOT/scripts/kafka-probe.mjs" "$BROKERS" ${1:+"--$1"} >/dev/null 2>&1
}

# --- jars ----------------------------------------------------------------------------------------

# kafka_2.13 and its runtime dependencies, plus the slf4j binding, into the cache (once).
ensure_jars() {
  fetch_maven_jars "$KAFKA_CACHE_DIR" "Kafka $KAFKA_VERSION" \
    "$(maven_dependency org.apache.kafka kafka_2.13 "$KAFKA_VERSION")
$(maven_dependency org.apache.logging.log4j log4j-slf4j-impl "$LOG4J_VERSION")"
}

# --- config --------------------------------------------------------------------------------------

write_config() {
  mkdir -p "$LOG_DIR" "$KAFKA_STATE_DIR/data"

  # Everything a test or benchmark needs on one node: replication factors of 1 for the internal
  # topics (the defaults of 3 cannot be met), topics created on first use, and no delay before the
  # first consumer group rebalance (the default 3 s would slow every test's first consume).
  cat >"$KAFKA_STATE_DIR/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_STATE_DIR/data
num.partitions=6
auto.create.topics.enable=true
offsets.topic.replication.factor=1
# 50 partitions (the default) makes the first consumer group join noticeably slower for no gain here.
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
$KAFKA_EXTRA_CONFIG
EOF

  # Broker logs go to a file in the state dir, never to the console of whoever ran `start`.
  cat >"$KAFKA_STATE_DIR/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOG_DIR/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.kafka_request.name = kafka.request.logger
logger.kafka_request.level = WARN
EOF
}

# JVM flags shared by the storage formatter and the broker. Same GC flags as Kafka's own
# kafka-run-class.sh; the heap is kept small for a 2-core, shared test box.
java_args() {
  local -a heap
  read -r -a heap <<<"$KAFKA_HEAP_OPTS"
  JAVA_ARGS=(
    "${heap[@]}"
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$KAFKA_STATE_DIR/log4j2.properties"
    -Dkafka.logs.dir="$LOG_DIR"
    -cp "$KAFKA_CACHE_DIR/*"
  )
}

# --- commands ------------------------------------------------------------------------------------

cmd_status() {
  if broker_answers; then
    echo "running $BROKERS"
    return 0
  fi
  echo "not running ($BROKERS)"
  return 1
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    # A clean shutdown flushes and closes the log segments, which takes a few seconds.
    stop_pid "$pid" "$KAFKA_STOP_TIMEOUT" broker
  else
    log "no broker of ours running on $BROKERS"
  fi
  rm -rf "$KAFKA_STATE_DIR"
}

cmd_start() {
  # Several test runs may share one broker: if one already answers, reuse it.
  if broker_answers; then
    log "broker already running on $BROKERS"
    echo "KAFKA_BROKERS=$BROKERS"
    return 0
  fi
  # Our process is alive but not answering (hung, or a start that died half-way): replace it.
  if running_pid >/dev/null; then
    log "broker process exists but does not answer; restarting it"
    cmd_stop
  fi
  port_open "$KAFKA_PORT" && die "port $KAFKA_PORT is taken by something that is not a Kafka broker"
  port_open "$KAFKA_CONTROLLER_PORT" && die "controller port $KAFKA_CONTROLLER_PORT is already taken"

  command -v java >/dev/null || die "java not found (Kafka $KAFKA_VERSION needs Java 17+)"
  ensure_jars

  # Fresh cluster every time: a leftover state dir is from a broker that is no longer running.
  rm -rf "$KAFKA_STATE_DIR"
  write_config

  # KRaft needs its storage formatted with a cluster id before first start. The id is 16 random
  # bytes in URL-safe base64 without padding, which is what `kafka-storage random-uuid` prints. It
  # can start with "-", hence the --cluster-id=ID form.
  local cluster_id
  cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
  java_args
  if ! java "${JAVA_ARGS[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" \
    -c "$KAFKA_STATE_DIR/server.properties" >"$LOG_DIR/format.log" 2>&1; then
    cat "$LOG_DIR/format.log" >&2
    die "formatting KRaft storage failed"
  fi

  start_detached "$LOG_DIR/stdout.log" java "${JAVA_ARGS[@]}" kafka.Kafka "$KAFKA_STATE_DIR/server.properties"

  local deadline=$((SECONDS + KAFKA_START_TIMEOUT)) pid=""
  while ((SECONDS < deadline)); do
    [[ -n "$pid" ]] || pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      tail -n 50 "$LOG_DIR/server.log" "$LOG_DIR/stdout.log" >&2 || true
      die "broker exited during start-up (logs above, state dir $KAFKA_STATE_DIR)"
    fi
    if broker_answers groups; then
      log "broker up on $BROKERS (pid $pid, logs in $LOG_DIR)"
      echo "KAFKA_BROKERS=$BROKERS"
      return 0
    fi
    sleep 0.5
  done
  tail -n 50 "$LOG_DIR/server.log" "$LOG_DIR/stdout.log" >&2 || true
  # Do not leave a half-started broker holding the ports; keep the state dir for its logs (the next
  # start wipes it).
  if [[ -n "$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  die "broker did not answer on $BROKERS within ${KAFKA_START_TIMEOUT}s (logs above, state dir $KAFKA_STATE_DIR)"
}

dispatch "/tmp/dms-kafka-$KAFKA_PORT.lock" $((KAFKA_START_TIMEOUT + KAFKA_STOP_TIMEOUT + 60)) "$@"
