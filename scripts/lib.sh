# Process handling shared by scripts/kafka.sh and scripts/schema-registry.sh: each runs one JVM
# service in the background, tracked by a pid file, started and stopped under a lock.
# Sourced, not run. The sourcing script sets PID_FILE and defines log and die.

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
