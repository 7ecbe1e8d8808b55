#!/usr/bin/env bash
# Faults under load: gang Jobs run while each Kiln process is killed (-9) and restarted, the
# API server and etcd are restarted, the connections between Kiln and the API server stall
# (a TCP proxy the test controls black-holes them), a leader's connection stalls past its
# lease, and the API server is throttled (429s). The invariants come from the API server's
# audit log, not from Kiln's own logs: every Job completes, no pod is created twice, no pod
# is bound twice, and no replica writes after it lost the lease. The suite runs its own small
# control plane with the audit log on, so the shared cluster of the other suites keeps its
# settings.
#   KILN_FAULT_JOBS (default 12) gang Jobs of KILN_FAULT_GANG (default 3) pods in the kill
#   test; the lease test runs half as many, the stall and throttle tests a quarter;
#   KILN_FAULT_STALL (default 18) seconds of black hole in the stall test.
source "$(dirname "$0")/lib.sh"
SUITE=faults

JOBS=${KILN_FAULT_JOBS:-12}
GANG=${KILN_FAULT_GANG:-3}
CTL_BIN=$KILN_BUILD/controller/kiln-controller
SCH_BIN=$KILN_BUILD/scheduler/kiln-scheduler
FD=$KILN_CLUSTER_DIR/faults # the suite's own cluster
NS=faults
PROXY=$E2E_DIR/stallproxy.py

cluster_start() {
  "$KILN_ROOT/tests/cluster/up" --dir "$FD" --nodes 3 --audit >"$KILN_CLUSTER_DIR/faults-up.log" 2>&1
}

# proc NAME BIN ARGS...: a Kiln process of the suite's cluster, pid in its pids directory.
# PROC_KUBECONFIG and PROC_LEASE (lease duration, renew deadline, retry period) override the
# admin kubeconfig and the short 4s/3s/1s lease.
proc() {
  local name=$1 bin=$2
  shift 2
  local -a lease
  read -r -a lease <<<"${PROC_LEASE:-4s 3s 1s}"
  setsid "$bin" --kubeconfig "${PROC_KUBECONFIG:-$FD/kubeconfig}" -v=2 \
    --leader-elect-lease-duration="${lease[0]}" --leader-elect-renew-deadline="${lease[1]}" \
    --leader-elect-retry-period="${lease[2]}" "$@" >>"$FD/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$FD/pids/$name.pid"
  echo "$bin" >"$FD/pids/$name.exe"
}

alive() { kill -0 "$(cat "$FD/pids/$1.pid")" 2>/dev/null; }

stop_kiln() { # every Kiln process of the suite's cluster: SIGTERM, wait for the exit; no lease left
  local f pid
  for f in "$FD"/pids/kiln-*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f" "${f%.pid}.exe"
  done
  # The next test's processes lead at once, not after a lease left by these (up to 60 s).
  k delete lease -n volcano-system --all >/dev/null 2>&1 || true
}

# user NAME [SERVER]: a kubeconfig for a client certificate of user NAME (not in
# system:masters, so the API server throttles it like any client) bound to cluster-admin;
# SERVER (default: the API server itself) is where it connects, e.g. the stall proxy.
user() {
  local name=$1 server=${2:-} P=$FD/pki
  [ -n "$server" ] || server=$(k config view -o jsonpath='{.clusters[0].cluster.server}')
  if [ ! -f "$P/$name.crt" ]; then
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$P/$name.key" \
      -out "$P/$name.csr" >/dev/null 2>&1 &&
      openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" \
        -CAcreateserial -days 2 -extfile "$P/client.cnf" -out "$P/$name.crt" >/dev/null 2>&1 ||
      return 1
    k create clusterrolebinding "$name" --clusterrole=cluster-admin --user="$name" >/dev/null ||
      return 1
  fi
  sed -e "s|^\( *server:\).*|\1 $server|" -e "s|/admin\.crt|/$name.crt|" \
    -e "s|/admin\.key|/$name.key|" "$FD/kubeconfig" >"$FD/$name-$(basename "$server" | tr : -).kubeconfig"
  echo "$FD/$name-$(basename "$server" | tr : -).kubeconfig"
}

# proxy_start: the stall proxy in front of the API server; prints its URL.
proxy_start() {
  local api port
  api=$(k config view -o jsonpath='{.clusters[0].cluster.server}')
  api=${api#https://}
  proxy_stop # one left by a test that failed half-way: its pid file is about to be reused
  rm -f "$FD/proxy.port"
  setsid python3 "$PROXY" 0 "$api" "$FD/proxy.port" >>"$FD/logs/stallproxy.log" 2>&1 </dev/null &
  echo $! >"$FD/pids/stallproxy.pid"
  readlink "/proc/$!/exe" >"$FD/pids/stallproxy.exe"
  wait_for 30 "the proxy listening" test -s "$FD/proxy.port"
  echo "https://127.0.0.1:$(cat "$FD/proxy.port")"
}

proxy_stop() {
  [ -f "$FD/pids/stallproxy.pid" ] || return 0
  kill "$(cat "$FD/pids/stallproxy.pid")" 2>/dev/null || true
  rm -f "$FD/pids/stallproxy.pid" "$FD/pids/stallproxy.exe"
}

hole() { kill -USR1 "$(cat "$FD/pids/stallproxy.pid")"; }
unhole() { kill -USR2 "$(cat "$FD/pids/stallproxy.pid")"; }

kill9() { # NAME: kill -9 a process started as NAME in the suite's cluster
  local pid
  pid=$(cat "$FD/pids/$1.pid")
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}

# restart_cp NAME: kill a control-plane process and start it again with the same command line.
restart_cp() {
  local name=$1 pid
  pid=$(cat "$FD/pids/$name.pid")
  local -a cmd
  mapfile -d '' -t cmd <"/proc/$pid/cmdline"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  setsid "${cmd[@]}" >>"$FD/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$FD/pids/$name.pid"
}

k() { kubectl --kubeconfig "$FD/kubeconfig" "$@"; }

api_ready() { k get --raw /readyz >/dev/null 2>&1; }

jobs_done() { # [NS N]: all N Jobs of NS Completed
  local n
  n=$(k get vcjob -n "${1:-$NS}" -o 'jsonpath={range .items[*]}{.status.state.phase}{"\n"}{end}' 2>/dev/null |
    grep -c '^Completed$')
  [ "$n" -eq "${2:-$JOBS}" ]
}

pods_in() { k get pods -n "$1" --no-headers 2>/dev/null | wc -l; }

submit() { # FROM TO [NS]: gang Jobs gFROM..gTO, each running 2 to 4 s
  gang_jobs g "$1" "$2" "$GANG" '2 + i % 3' | k apply -n "${3:-$NS}" -f - >/dev/null
}

suffix() { head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

audit() { python3 "$E2E_DIR/faults_audit.py" "$1" "$FD/logs" "${@:2}"; }

# expect_pods_once NS N WHAT: the audit log shows N pods of NS created and bound, each once.
expect_pods_once() {
  local pods creates twice nbound btwice
  read -r pods creates twice nbound btwice <<<"$(audit pods "$1")"
  echo "REPORT $3: $pods pods, $creates creates, $nbound binds, $twice pods created twice," \
    "$btwice bound twice"
  expect_eq "$2" "$pods" "pods created"
  expect_eq 0 "$twice" "pods created twice"
  expect_eq "$2" "$nbound" "pods bound"
  expect_eq 0 "$btwice" "pods bound twice"
}

# fault_cluster: the suite's audited cluster with the CRDs, started once for all tests; a new
# one when test_throttled_api_server left it throttled.
fault_cluster() {
  if [ -f "$FD/throttled" ]; then
    stop_kiln
    proxy_stop
    "$KILN_ROOT/tests/cluster/down" --dir "$FD" >/dev/null 2>&1 || true
  fi
  [ -f "$FD/kubeconfig" ] && api_ready && return 0
  cluster_start || fail "the suite's cluster did not start: $(tail -3 "$KILN_CLUSTER_DIR/faults-up.log")"
  k apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
  k wait --for=condition=Established --timeout=60s crd --all >/dev/null
  k apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
  k create namespace volcano-system >/dev/null
}

# bound_in NS: pods of NS bound to a node.
bound_in() {
  k get pods -n "$1" -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null |
    grep -c . || true
}

# progressed WHAT BEFORE: more pods of $NS than BEFORE are made (WHAT=pods) or bound
# (WHAT=bound), or all the pods of the Jobs submitted so far already are. Each fault below
# lands once Kiln is at work again.
progressed() {
  local now
  if [ "$1" = pods ]; then now=$(pods_in "$NS"); else now=$(bound_in "$NS"); fi
  [ "$now" -gt "$2" ] || [ "$now" -ge $((SUBMITTED * GANG)) ]
}

test_gang_jobs_survive_kills_and_restarts() {
  fault_cluster
  stop_kiln
  NS=faults-kill-$(suffix)
  k create namespace "$NS" >/dev/null
  proc kiln-controller "$CTL_BIN"
  proc kiln-scheduler "$SCH_BIN"
  local third=$((JOBS / 3))
  SUBMITTED=$third
  submit 1 "$third"
  wait_for 300 "the controller making pods" progressed pods 0
  kill9 kiln-controller
  proc kiln-controller "$CTL_BIN"
  SUBMITTED=$((2 * third))
  submit $((third + 1)) $((2 * third))
  wait_for 300 "the scheduler binding pods" progressed bound "$(bound_in "$NS")"
  kill9 kiln-scheduler
  proc kiln-scheduler "$SCH_BIN"
  wait_for 300 "the new scheduler binding pods" progressed bound "$(bound_in "$NS")"
  restart_cp kube-apiserver
  wait_for 90 "API server back" api_ready
  # etcd restarts while the last Jobs are new; then both processes die at once. Neither
  # fault waits for Kiln: Jobs submitted right after the API server restart were seen to get
  # no pods from the running controller for 300 s (only the restarted one made them).
  SUBMITTED=$JOBS
  submit $((2 * third + 1)) "$JOBS"
  restart_cp etcd
  wait_for 90 "API server ready after etcd" api_ready
  kill9 kiln-controller
  kill9 kiln-scheduler
  proc kiln-controller "$CTL_BIN"
  proc kiln-scheduler "$SCH_BIN"
  wait_for 300 "all $JOBS Jobs Completed" jobs_done

  # Invariants from the audit log.
  local stats
  stats=$(audit pods "$NS")
  local pods creates twice nbound btwice
  read -r pods creates twice nbound btwice <<<"$stats"
  echo "REPORT faults: $JOBS gang Jobs of $GANG completed; $pods pods, $creates creates," \
    "$nbound binds, $twice pods created twice, $btwice bound twice; 2 controller kills," \
    "2 scheduler kills, 1 API server restart, 1 etcd restart"
  expect_eq $((JOBS * GANG)) "$pods" "pods created"
  expect_eq 0 "$twice" "pods created twice"
  expect_eq $((JOBS * GANG)) "$nbound" "pods bound"
  expect_eq 0 "$btwice" "pods bound twice"
}

# The connections of both processes go through the proxy, which black-holes them: open, the
# kernel acknowledging every byte, nothing coming back. For STALL seconds every connection
# accepted is black-holed too (accepted, never forwarded). Each process must notice on its
# own (a request times out with nothing received for 15 s), close the connection, connect
# again once the proxy forwards, watch and list again, and carry every Job to completion,
# without losing the lease (60 s here; when the new connections stall too, a second silent 15 s passes before the one that works) and without creating or binding a pod twice.
test_stalled_connections_reconnect() {
  fault_cluster
  local ns=faults-stall-$(suffix) n=$((JOBS / 4)) stall=${KILN_FAULT_STALL:-18} url kc
  k create namespace "$ns" >/dev/null
  stop_kiln
  url=$(proxy_start) || fail "the proxy did not start"
  kc=$(user kiln-stall "$url") || fail "cannot make the kiln-stall user"
  PROC_KUBECONFIG=$kc PROC_LEASE="60s 50s 2s" proc kiln-sctl "$CTL_BIN"
  PROC_KUBECONFIG=$kc PROC_LEASE="60s 50s 2s" proc kiln-ssch "$SCH_BIN"
  submit 1 $((n / 2)) "$ns"
  wait_for 120 "the first Jobs' pods" bash -c "[ \$(kubectl --kubeconfig $FD/kubeconfig get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge $GANG ]"
  local t0=$SECONDS
  hole
  submit $((n / 2 + 1)) "$n" "$ns" # the API server has them; Kiln cannot hear of them yet
  sleep "$stall" # the fault's length; nothing here waits for Kiln
  unhole
  wait_for 120 "both processes closing their silent connection" bash -c \
    "grep -q 'closing the connection' $FD/logs/kiln-sctl.log &&
     grep -q 'closing the connection' $FD/logs/kiln-ssch.log"
  wait_for 300 "all $n Jobs Completed after the stall" jobs_done "$ns" "$n"
  local took=$((SECONDS - t0)) resets
  resets=$(cat "$FD"/logs/kiln-{sctl,ssch}.log | grep -c 'closing the connection')
  alive kiln-sctl || fail "the controller exited: $(tail -3 "$FD/logs/kiln-sctl.log")"
  alive kiln-ssch || fail "the scheduler exited: $(tail -3 "$FD/logs/kiln-ssch.log")"
  grep -q 'lost leadership' "$FD"/logs/kiln-{sctl,ssch}.log &&
    fail "a process lost the lease during a ${stall}s stall with a 60 s lease"
  echo "REPORT stall: ${stall}s black hole (established and new connections);" \
    "$resets silent connections closed by the processes; $n Jobs completed" \
    "${took}s after the stall began; $(grep -c accepted "$FD/logs/stallproxy.log") proxy connections"
  expect_pods_once "$ns" $((n * GANG)) "stall"
  stop_kiln
  proxy_stop
}

# Two controller replicas, each its own user: kiln-a through the proxy, kiln-b direct.
# 1. kiln-a leads; the proxy black-holes its connections past the end of its lease; kiln-b
#    takes the lease. What kiln-a had in flight or queued must never reach the API server,
#    even once the proxy forwards again, and kiln-a must step down (exit).
# 2. kiln-b leads, with a slow client so that writes wait in its token bucket; kiln-a runs
#    again (direct) as the standby. kiln-b is frozen (SIGSTOP) past its lease while kiln-a
#    takes over; when kiln-b runs again (SIGCONT) the timers of its queued writes are due at
#    once, and none of those writes may be sent: the fence is asked at each send.
# The audit log must show no write by the old leader received after the new one's first
# Lease write (each time), and each old leader exits.
test_no_write_after_lease_loss() {
  fault_cluster
  local ns=faults-lease-$(suffix) n=$((JOBS / 4)) url kca kcb
  k create namespace "$ns" >/dev/null
  stop_kiln
  url=$(proxy_start) || fail "the proxy did not start"
  kca=$(user kiln-a "$url") || fail "cannot make the kiln-a user"
  kcb=$(user kiln-b) || fail "cannot make the kiln-b user"
  proc kiln-lsch "$SCH_BIN"
  # Slow clients keep each leader busy writing when its turn to fail comes.
  PROC_KUBECONFIG=$kca PROC_LEASE="6s 4s 1s" proc kiln-a "$CTL_BIN" --kube-api-qps=20 \
    --kube-api-burst=20
  wait_for 60 "kiln-a leading" grep -q 'leader election: .* acquired' "$FD/logs/kiln-a.log"
  PROC_KUBECONFIG=$kcb PROC_LEASE="6s 4s 1s" proc kiln-b "$CTL_BIN" --kube-api-qps=4 \
    --kube-api-burst=1
  submit 1 "$n" "$ns"
  wait_for 120 "kiln-a creating pods" bash -c "[ \$(kubectl --kubeconfig $FD/kubeconfig get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge $GANG ]"
  local t0=$SECONDS
  hole
  wait_for 60 "kiln-b leading" grep -q 'leader election: .* acquired' "$FD/logs/kiln-b.log"
  unhole # kiln-a may connect again now: nothing it held may go out
  wait_for 90 "kiln-a stepping down" bash -c "! kill -0 $(cat "$FD/pids/kiln-a.pid") 2>/dev/null"
  local down=$((SECONDS - t0))
  grep -q 'lost leadership' "$FD/logs/kiln-a.log" || fail "kiln-a exited without losing the lease"
  wait_for 300 "all $n Jobs Completed under kiln-b" jobs_done "$ns" "$n"
  lease_checked kiln-a kiln-b "" "stall: kiln-a exited ${down}s after its connection stalled"

  kca=$(user kiln-a) || fail "cannot make the direct kiln-a kubeconfig"
  PROC_KUBECONFIG=$kca PROC_LEASE="6s 4s 1s" proc kiln-a2 "$CTL_BIN"
  wait_for 60 "kiln-a standing by" grep -q 'is held by' "$FD/logs/kiln-a2.log"
  submit $((n + 1)) $((3 * n)) "$ns"
  wait_for 120 "kiln-b creating the new pods" bash -c "[ \$(kubectl --kubeconfig $FD/kubeconfig get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge $(((n + 1) * GANG)) ]"
  local since pid
  since=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
  pid=$(cat "$FD/pids/kiln-b.pid")
  t0=$SECONDS
  kill -STOP "$pid"
  wait_for 60 "kiln-a leading again" grep -q 'leader election: .* acquired' "$FD/logs/kiln-a2.log"
  kill -CONT "$pid"
  wait_for 90 "kiln-b stepping down" bash -c "! kill -0 $pid 2>/dev/null"
  down=$((SECONDS - t0))
  grep -q 'lost leadership' "$FD/logs/kiln-b.log" || fail "kiln-b exited without losing the lease"
  wait_for 300 "all $((3 * n)) Jobs Completed under kiln-a" jobs_done "$ns" $((3 * n))
  lease_checked kiln-b kiln-a "$since" "freeze: kiln-b exited ${down}s after SIGSTOP"
  expect_pods_once "$ns" $((3 * n * GANG)) "lease"
  stop_kiln
  proxy_stop
}

# lease_checked OLD NEW SINCE WHAT: the audit log's verdict on a change of leader after SINCE.
lease_checked() {
  local out takeover before after nafter
  out=$(audit lease "$1" "$2" volcano-system vc-controller-manager ${3:+"$3"})
  read -r takeover before after nafter <<<"$(echo "$out" | head -1)"
  echo "REPORT lease $4; $2 took the lease at $takeover; $1 wrote $before times before," \
    "$after after; $2 $nafter after"
  [ "$takeover" != none ] || fail "no Lease write by $2 in the audit log"
  [ "$before" -gt 0 ] || fail "$1 wrote nothing before: nothing tested"
  [ "$after" -eq 0 ] || fail "$1 wrote after losing the lease: $(echo "$out" | tail -n +2)"
  [ "$nafter" -gt 0 ] || fail "$2 wrote nothing after taking the lease"
}

# The API server throttles: API Priority and Fairness off, 2 requests in flight of which 1
# mutating, so 429s come back (Retry-After: 1). The processes run as a user outside
# system:masters, which the API server never throttles. Every Job completes and no pod is
# created or bound twice. The API server stays throttled: a test after this one gets a new
# cluster (fault_cluster).
test_throttled_api_server() {
  fault_cluster
  local ns=faults-429-$(suffix) n=$((JOBS / 4)) kc pid
  k create namespace "$ns" >/dev/null
  stop_kiln
  touch "$FD/throttled"
  kc=$(user kiln-throttled) || fail "cannot make the kiln-throttled user"
  pid=$(cat "$FD/pids/kube-apiserver.pid")
  local -a cmd
  mapfile -d '' -t cmd <"/proc/$pid/cmdline"
  local i
  for i in "${!cmd[@]}"; do
    case ${cmd[$i]} in
      --max-requests-inflight=*) cmd[$i]=--max-requests-inflight=2 ;;
      --max-mutating-requests-inflight=*) cmd[$i]=--max-mutating-requests-inflight=1 ;;
    esac
  done
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  setsid "${cmd[@]}" --enable-priority-and-fairness=false >>"$FD/logs/kube-apiserver.log" 2>&1 </dev/null &
  echo $! >"$FD/pids/kube-apiserver.pid"
  wait_for 90 "the throttled API server" api_ready
  # Volcano's lease timing, doubled: the lease's own requests wait in the same line (429,
  # Retry-After) as everything else, and a 3 s renew deadline passes while they do.
  PROC_KUBECONFIG=$kc PROC_LEASE="30s 20s 2s" proc kiln-tctl "$CTL_BIN"
  PROC_KUBECONFIG=$kc PROC_LEASE="30s 20s 2s" proc kiln-tsch "$SCH_BIN"
  submit 1 "$n" "$ns"
  wait_for 300 "all $n Jobs Completed under throttling" jobs_done "$ns" "$n"
  local reqs n429 writes
  read -r reqs n429 writes <<<"$(audit throttled kiln-throttled)"
  echo "REPORT throttle: $reqs requests by the processes, $n429 answered 429, $writes writes;" \
    "$n Jobs completed"
  [ "$n429" -gt 0 ] || fail "no 429 came back: the throttling was not exercised"
  grep -q 'lost leadership' "$FD"/logs/kiln-{tctl,tsch}.log && fail "a process lost its lease"
  expect_pods_once "$ns" $((n * GANG)) "throttle"
  alive kiln-tctl || fail "the controller exited under throttling"
  alive kiln-tsch || fail "the scheduler exited under throttling"
}

e2e_main "$@"
rc=$?
# The suite's own cluster goes with the suite (tests/cluster/down stops what it started).
stop_kiln
proxy_stop
[ ! -d "$FD" ] || "$KILN_ROOT/tests/cluster/down" --dir "$FD" >/dev/null 2>&1 || true
exit $rc
