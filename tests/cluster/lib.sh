# Helpers shared by tests/cluster/{up,down,nodes}. Expects DIR to be set.
# shellcheck shell=bash

die() {
  echo "cluster/up: $*" >&2
  exit 1
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  local p tries=0
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! ss -Htln "sport = :$p" | grep -q .; then
      # Also skip ports handed out earlier in this run.
      if ! grep -qx "$p" "$DIR/ports" 2>/dev/null; then
        echo "$p" >>"$DIR/ports"
        echo "$p"
        return 0
      fi
    fi
    tries=$((tries + 1))
    [ $tries -lt 200 ] || die "no free TCP port found on 127.0.0.1"
  done
}

# start NAME COMMAND...: run COMMAND in its own session, logging to $DIR/logs/NAME.log.
start() {
  local name=$1
  shift
  setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$DIR/pids/$name.pid"
  echo "$1" >"$DIR/pids/$name.exe"
  await_exec "$name"
}

# await_exec NAME: wait (5 s at most) until the process started as NAME runs its program or is
# gone. Until the fork's exec, /proc/PID/exe is still this shell, and `alive` would call a
# healthy start "exited" (seen on a machine with a load average near 40).
await_exec() {
  local pid want
  pid=$(cat "$DIR/pids/$1.pid")
  want=$(readlink -f "$(cat "$DIR/pids/$1.exe")")
  for _ in $(seq 1 50); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$want" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

# alive NAME: the process started as NAME is still running.
alive() {
  local pid
  pid=$(cat "$DIR/pids/$1.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # The pid must still be ours: compare the executable we started.
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(cat "$DIR/pids/$1.exe")")" ]
}

# gone PID: the process has exited (a zombie waiting to be reaped counts as gone).
gone() {
  ! kill -0 "$1" 2>/dev/null || [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ]
}

cluster_alive() {
  local d=$1
  DIR=$d alive kube-apiserver
}

# wait_ready NAME SECONDS COMMAND...: poll COMMAND until it succeeds; fail with the cause.
wait_ready() {
  local name=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs)) log=$DIR/logs/$name.log
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      if grep -qi 'address already in use' "$log" 2>/dev/null; then
        # Ports picked by us lost a race: the caller starts again with new ones.
        [ -n "${KILN_UP_INNER:-}" ] && exit 75
        die "$name could not listen: port already in use ($(grep -i -m1 'address already in use' "$log" | cut -c1-200)); read $log"
      fi
      echo "--- last lines of $log:" >&2
      tail -n 15 "$log" >&2 || true
      die "$name exited during start-up; read $log"
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "--- last lines of $log:" >&2
      tail -n 15 "$log" >&2 || true
      die "$name did not become ready within ${secs}s; read $log"
    fi
    sleep 0.2
  done
}
