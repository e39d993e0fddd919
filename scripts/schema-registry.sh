#!/usr/bin/env bash
# Confluent-compatible schema registry (Apicurio Registry, in-memory storage) for tests and benchmarks.
#
#   scripts/schema-registry.sh start    download the registry if needed, start it, wait until its
#                                       Confluent-compatible API answers; last line SCHEMA_REGISTRY_URL=<url>
#   scripts/schema-registry.sh stop     stop the registry and delete its state dir
#   scripts/schema-registry.sh status   exit 0 and print "running <url>" if the API answers on the port
#
# Why this shape: no Docker and no internet besides Maven Central. Apicurio Registry publishes its
# runnable Quarkus application on Maven Central (io.apicurio:apicurio-registry-app:<v>:tar.gz:all), and
# it serves the Confluent Schema Registry REST API under /apis/ccompat/v7, which is what
# @kafkajs/confluent-schema-registry speaks. Its default storage is an in-memory H2 database, so each
# start is an empty registry; the unpacked application is cached so only the first start downloads.
#
# Environment (all optional):
#   SCHEMA_REGISTRY_PORT           HTTP port on 127.0.0.1                          (default 8085)
#   SCHEMA_REGISTRY_VERSION        io.apicurio:apicurio-registry-app version       (default 3.0.9)
#   SCHEMA_REGISTRY_CACHE_DIR      unpacked application  (default $HOME/.cache/dms-schema-registry/<version>)
#   SCHEMA_REGISTRY_STATE_DIR      pid file and logs              (default /tmp/dms-schema-registry-<port>)
#   SCHEMA_REGISTRY_HEAP_OPTS      JVM heap flags                  (default -Xms64m -Xmx256m)
#   SCHEMA_REGISTRY_START_TIMEOUT  seconds to wait for readiness   (default 180)
#   SCHEMA_REGISTRY_STOP_TIMEOUT   seconds between TERM and KILL   (default 60; a first stop writes the class-data archive)
set -euo pipefail

# 3.0.9 is the newest release on Maven Central that runs on Java 17: the 3.3.x classes are Java 21
# bytecode (class file version 65) and fail at start-up with UnsupportedClassVersionError.
SCHEMA_REGISTRY_VERSION="${SCHEMA_REGISTRY_VERSION:-3.0.9}"
# The 2.8 `get` goal with transitive=false fetches the archive without reading its pom's parent
# (io.apicurio:apicurio-registry:<v>:pom), which Maven Central does not serve for 3.0.9; the 3.x
# plugin reads it and fails. `dest` copies the file out of the local repository.
DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:2.8"
ARTIFACT="io.apicurio:apicurio-registry-app:$SCHEMA_REGISTRY_VERSION:tar.gz:all"

SCHEMA_REGISTRY_PORT="${SCHEMA_REGISTRY_PORT:-8085}"
SCHEMA_REGISTRY_CACHE_DIR="${SCHEMA_REGISTRY_CACHE_DIR:-$HOME/.cache/dms-schema-registry/$SCHEMA_REGISTRY_VERSION}"
SCHEMA_REGISTRY_STATE_DIR="${SCHEMA_REGISTRY_STATE_DIR:-/tmp/dms-schema-registry-$SCHEMA_REGISTRY_PORT}"
SCHEMA_REGISTRY_HEAP_OPTS="${SCHEMA_REGISTRY_HEAP_OPTS:--Xms64m -Xmx256m}"
SCHEMA_REGISTRY_START_TIMEOUT="${SCHEMA_REGISTRY_START_TIMEOUT:-180}"
SCHEMA_REGISTRY_STOP_TIMEOUT="${SCHEMA_REGISTRY_STOP_TIMEOUT:-60}"

BASE_URL="http://127.0.0.1:$SCHEMA_REGISTRY_PORT"
# The Confluent-compatible API. Apicurio 3.x serves v7 (and v8 in newer releases); v6 is gone.
REGISTRY_URL="$BASE_URL/apis/ccompat/v7"
PID_FILE="$SCHEMA_REGISTRY_STATE_DIR/registry.pid"
LOG_DIR="$SCHEMA_REGISTRY_STATE_DIR/logs"

log() { echo "schema-registry.sh: $*" >&2; }
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- probes --------------------------------------------------------------------------------------

# Body of a GET, or failure on a non-2xx answer. curl when there is one, else the repo's node.
http_get() {
  if command -v curl >/dev/null; then
    curl -sf --max-time 5 "$1"
  else
    node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(5000) })
      .then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text()); })
      .catch(() => process.exit(1))' "$1"
  fi
}

# True when a Confluent-compatible registry answers: GET /subjects is a JSON array. An open port alone
# can be a registry still starting (Quarkus opens it late, but the DB init may still be running) or some
# other program.
registry_answers() {
  port_open "$SCHEMA_REGISTRY_PORT" || return 1
  local body
  body="$(http_get "$REGISTRY_URL/subjects" 2>/dev/null)" || return 1
  [[ "$body" == \[* ]]
}

# --- application ---------------------------------------------------------------------------------

# Fetch the application archive through mvn and unpack it into the cache. Unpacking happens in a
# private temp dir renamed into place only when complete, so an interrupted download or two concurrent
# first starts (different ports) never leave a half-filled cache behind.
ensure_app() {
  if [[ -f "$SCHEMA_REGISTRY_CACHE_DIR/.complete" ]]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch Apicurio Registry)"
  log "fetching $ARTIFACT from Maven Central into $SCHEMA_REGISTRY_CACHE_DIR"
  mkdir -p "$(dirname "$SCHEMA_REGISTRY_CACHE_DIR")"
  local tmp
  tmp="$(mktemp -d "$(dirname "$SCHEMA_REGISTRY_CACHE_DIR")/.fetch-$SCHEMA_REGISTRY_VERSION.XXXXXX")"
  if ! mvn -q -B "$DEPENDENCY_PLUGIN:get" -Dartifact="$ARTIFACT" -Dtransitive=false \
    -Ddest="$tmp/app.tar.gz" >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "could not resolve $ARTIFACT"
  fi
  mkdir "$tmp/app"
  tar -xzf "$tmp/app.tar.gz" -C "$tmp/app" || {
    rm -rf "$tmp"
    die "could not unpack $ARTIFACT"
  }
  move_into_cache "$tmp/app" "$SCHEMA_REGISTRY_CACHE_DIR" "the application"
  rm -rf "$tmp"
}

# Releases up to 3.0.x ship a legacy runner jar; later ones the Quarkus fast-jar layout.
app_jar() {
  if [[ -f "$SCHEMA_REGISTRY_CACHE_DIR/quarkus-run.jar" ]]; then
    echo "$SCHEMA_REGISTRY_CACHE_DIR/quarkus-run.jar"
    return 0
  fi
  local jar
  for jar in "$SCHEMA_REGISTRY_CACHE_DIR"/*-runner.jar; do
    [[ -f "$jar" ]] && echo "$jar" && return 0
  done
  die "no runnable jar in $SCHEMA_REGISTRY_CACHE_DIR"
}

# --- class-data sharing --------------------------------------------------------------------------
#
# Most of the registry's start-up is loading and verifying ~20,000 classes. A dynamic AppCDS archive
# (Java 13+) of them halves a warm start (about 20 s -> 8-10 s on a busy 2-core box). A JVM started
# without an archive writes one when it exits cleanly; `stop` moves it into the cache, where every
# later start uses it. The archive is only valid for the JVM that wrote it, hence the JVM in its name.

cds_archive() {
  local jvm
  jvm="$(java -version 2>&1 | cksum | cut -d' ' -f1)"
  echo "$SCHEMA_REGISTRY_CACHE_DIR/app-cds-$jvm.jsa"
}

cds_args() {
  local archive
  archive="$(cds_archive)"
  if [[ -f "$archive" ]]; then
    CDS_ARGS=(-XX:SharedArchiveFile="$archive")
  else
    CDS_ARGS=(-XX:ArchiveClassesAtExit="$SCHEMA_REGISTRY_STATE_DIR/app-cds.jsa")
  fi
}

# After the JVM exited: keep its archive, unless another registry's is already there.
harvest_cds_archive() {
  local written="$SCHEMA_REGISTRY_STATE_DIR/app-cds.jsa" archive
  [[ -s "$written" ]] || return 0
  archive="$(cds_archive)"
  mv -n "$written" "$archive" 2>/dev/null || true
  [[ -f "$archive" ]] && log "saved class-data archive $archive for faster starts"
  return 0
}

java_args() {
  local -a heap
  read -r -a heap <<<"$SCHEMA_REGISTRY_HEAP_OPTS"
  cds_args
  JAVA_ARGS=(
    "${heap[@]}"
    "${CDS_ARGS[@]}"
    # A test registry answers a handful of requests: start-up time is what counts on a shared 2-core
    # box, so C1 only and the single-threaded collector.
    -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true
    -Dquarkus.http.host=127.0.0.1
    -Dquarkus.http.port="$SCHEMA_REGISTRY_PORT"
    # Newer releases add a management interface on 9000; keep it on loopback next to the API port.
    -Dquarkus.management.host=127.0.0.1
    -Dquarkus.management.port=$((SCHEMA_REGISTRY_PORT + 1))
    # The default pool opens 20 H2 connections at start-up; one test client needs a couple.
    -Dapicurio.datasource.jdbc.initial-size=2
    -Dapicurio.datasource.jdbc.min-size=2
    -Dquarkus.http.access-log.enabled=false
    -jar "$(app_jar)"
  )
}

# --- commands ------------------------------------------------------------------------------------

cmd_status() {
  if registry_answers; then
    echo "running $REGISTRY_URL"
    return 0
  fi
  echo "not running ($REGISTRY_URL)"
  return 1
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    stop_pid "$pid" "$SCHEMA_REGISTRY_STOP_TIMEOUT" registry
    harvest_cds_archive
  else
    log "no registry of ours running on $BASE_URL"
  fi
  rm -rf "$SCHEMA_REGISTRY_STATE_DIR"
}

cmd_start() {
  # Several test runs may share one registry: if one already answers, reuse it.
  if registry_answers; then
    log "registry already running on $BASE_URL"
    echo "SCHEMA_REGISTRY_URL=$REGISTRY_URL"
    return 0
  fi
  if running_pid >/dev/null; then
    log "registry process exists but does not answer; restarting it"
    cmd_stop
  fi
  port_open "$SCHEMA_REGISTRY_PORT" && die "port $SCHEMA_REGISTRY_PORT is taken by something that is not a schema registry"

  command -v java >/dev/null || die "java not found (Apicurio Registry $SCHEMA_REGISTRY_VERSION needs Java 17+)"
  ensure_app

  rm -rf "$SCHEMA_REGISTRY_STATE_DIR"
  mkdir -p "$LOG_DIR"
  java_args

  start_detached "$LOG_DIR/stdout.log" java "${JAVA_ARGS[@]}"

  await_start "registry on $REGISTRY_URL (state dir $SCHEMA_REGISTRY_STATE_DIR)" "$LOG_DIR/stdout.log" \
    "$SCHEMA_REGISTRY_START_TIMEOUT" 0.5 registry_answers
  log "registry up on $BASE_URL (pid $STARTED_PID, log in $LOG_DIR)"
  echo "SCHEMA_REGISTRY_URL=$REGISTRY_URL"
}

dispatch "/tmp/dms-schema-registry-$SCHEMA_REGISTRY_PORT.lock" $((SCHEMA_REGISTRY_START_TIMEOUT + SCHEMA_REGISTRY_STOP_TIMEOUT + 120)) "$@"
