# Process and cache handling shared by scripts/kafka.sh, scripts/schema-registry.sh and
# scripts/opensearch.sh: each runs one JVM service in the background, tracked by a pid file, started
# and stopped under a lock, from jars fetched once through Maven Central into a cache. scripts/cluster.sh
# runs its dms nodes with the process helpers.
# Sourced, not run. The sourcing script sets PID_FILE and defines log.

die() {
  log "$*"
  exit 1
}

# True while something accepts TCP connections on the port (cheap, no JVM/node start-up).
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# PID from the pid file if that process is still alive.
running_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# start_detached STDOUT_LOG COMMAND...: runs COMMAND in the background with its pid in PID_FILE.
# setsid: the service must not share the caller's process group, or a Ctrl-C in the test run that
# happened to start it would kill a service other runs are using. All output goes to STDOUT_LOG so the
# caller's pipes close (execFile would otherwise wait for the service to exit). The inner bash writes
# its own pid and then execs COMMAND, so the pid file holds the JVM's pid. 9>&- : the service must not
# inherit the start/stop lock, or it would hold it for its lifetime.
start_detached() {
  local out="$1"
  shift
  # shellcheck disable=SC2016 # $$ and $@ are for the inner bash
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" "$@" >"$out" 2>&1 </dev/null 9>&- &
}

# await_start WHAT OUT TIMEOUT INTERVAL PROBE: waits for the service start_detached launched (its pid in
# $PID_FILE, its output in OUT) until the function PROBE succeeds, checking every INTERVAL seconds; sets
# STARTED_PID. Dies with the output's tail when the service exits first or TIMEOUT seconds pass (then
# killing it), so a start never hangs on a service that will not come up.
await_start() {
  local what="$1" out="$2" timeout="$3" interval="$4" probe="$5"
  local deadline=$((SECONDS + timeout)) pid=""
  while ((SECONDS < deadline)); do
    [[ -n "$pid" ]] || pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      tail -n 50 "$out" >&2 || true
      die "$what exited during start-up (log above)"
    fi
    if "$probe"; then
      STARTED_PID="$pid"
      return 0
    fi
    sleep "$interval"
  done
  tail -n 50 "$out" >&2 || true
  if [[ -n "$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  die "$what did not answer within ${timeout}s (log above)"
}

# move_into_cache DIR CACHE_DIR WHAT: marks the fully fetched DIR complete and renames it to CACHE_DIR
# in one step, so that the cache is either absent or whole. When another start finished first, its
# cache is as good as ours (DIR is then left for the caller's clean-up).
move_into_cache() {
  local dir="$1" cache="$2" what="$3"
  touch "$dir/.complete"
  if ! mv -T "$dir" "$cache" 2>/dev/null; then
    [[ -f "$cache/.complete" ]] || die "cannot move $what into $cache"
  fi
}

# fetch_maven_jars CACHE_DIR WHAT DEPENDENCIES_XML: resolves the <dependency> elements and their
# runtime dependencies into CACHE_DIR (jars only) with a generated pom and the machine's mvn, unless
# the cache is already complete. Downloads go to a private temp dir renamed into place only when
# complete, so an interrupted download or two concurrent first starts never leave a half-filled cache.
fetch_maven_jars() {
  local cache="$1" what="$2" dependencies="$3"
  [[ -f "$cache/.complete" ]] && return 0
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch the $what jars)"
  log "fetching the $what jars from Maven Central into $cache"
  mkdir -p "$(dirname "$cache")"
  local tmp
  tmp="$(mktemp -d "$(dirname "$cache")/.fetch.XXXXXX")"
  cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dms</groupId>
  <artifactId>dms-service-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$dependencies
  </dependencies>
</project>
POM
  if ! mvn -q -B -f "$tmp/pom.xml" "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "could not resolve the $what jars"
  fi
  move_into_cache "$tmp/libs" "$cache" "the $what jars"
  rm -rf "$tmp"
}

# maven_dependency GROUP ARTIFACT VERSION: one <dependency> element for fetch_maven_jars.
maven_dependency() {
  printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$1" "$2" "$3"
}

# stop_pid PID TIMEOUT_SECONDS WHAT: TERM, up to TIMEOUT for a clean shutdown, then KILL.
stop_pid() {
  local pid="$1" timeout="$2" what="$3" waited=0
  log "stopping $what pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && ((waited < timeout * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$what did not stop in ${timeout}s, killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
}

# dispatch LOCK_FILE LOCK_TIMEOUT_SECONDS COMMAND: runs cmd_start, cmd_stop or cmd_status. One start
# or stop at a time per lock file: concurrent test runs would otherwise both see "not running" and
# race to start two services on one port.
dispatch() {
  local lock_file="$1" lock_timeout="$2" cmd="${3:-}"
  case "$cmd" in
    start | stop)
      exec 9>"$lock_file"
      flock -w "$lock_timeout" 9 || die "timed out waiting for the lock"
      "cmd_$cmd"
      ;;
    status) cmd_status ;;
    *)
      echo "usage: $0 start|stop|status" >&2
      exit 2
      ;;
  esac
}
