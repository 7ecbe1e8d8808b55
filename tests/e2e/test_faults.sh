#!/usr/bin/env bash
# Faults under load: gang Jobs run while each Kiln process is killed (-9) and restarted, the
# API server is restarted and etcd is restarted. The invariants come from the API server's
# audit log, not from Kiln's own logs: every Job completes, no pod is created twice and no
# pod is bound twice. The suite runs its own small control plane with the audit log on, so
# the shared cluster of the other suites keeps its settings.
#   KILN_FAULT_JOBS (default 12) gang Jobs of KILN_FAULT_GANG (default 3) pods.
source "$(dirname "$0")/lib.sh"
SUITE=faults

JOBS=${KILN_FAULT_JOBS:-12}
GANG=${KILN_FAULT_GANG:-3}
CTL_BIN=$KILN_BUILD/controller/kiln-controller
SCH_BIN=$KILN_BUILD/scheduler/kiln-scheduler
FD=$KILN_CLUSTER_DIR/faults # the suite's own cluster
NS=faults

cluster_start() {
  "$KILN_ROOT/tests/cluster/up" --dir "$FD" --nodes 3 --audit >"$KILN_CLUSTER_DIR/faults-up.log" 2>&1
}

# proc NAME BIN ARGS...: a Kiln process of the suite's cluster, pid in its pids directory.
proc() {
  local name=$1 bin=$2
  shift 2
  setsid "$bin" --kubeconfig "$FD/kubeconfig" -v=2 --leader-elect-lease-duration=4s \
    --leader-elect-renew-deadline=3s --leader-elect-retry-period=1s "$@" \
    >>"$FD/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$FD/pids/$name.pid"
  echo "$bin" >"$FD/pids/$name.exe"
}

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

jobs_done() { # all Jobs Completed
  local n
  n=$(k get vcjob -n "$NS" -o 'jsonpath={range .items[*]}{.status.state.phase}{"\n"}{end}' 2>/dev/null |
    grep -c '^Completed$')
  [ "$n" -eq "$JOBS" ]
}

submit() { # FROM TO
  local i
  for i in $(seq "$1" "$2"); do
    cat <<EOF
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: g$i}
spec:
  schedulerName: volcano
  minAvailable: $GANG
  tasks:
  - name: w
    replicas: $GANG
    template:
      metadata:
        annotations: {"kwok.kiln.dev/run-for": "$((2 + i % 3))s"}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox}]
EOF
  done | k apply -n "$NS" -f - >/dev/null
}

test_gang_jobs_survive_kills_and_restarts() {
  cluster_start || fail "the suite's cluster did not start: $(tail -3 "$KILN_CLUSTER_DIR/faults-up.log")"
  k apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
  k wait --for=condition=Established --timeout=60s crd --all >/dev/null
  k apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
  k create namespace volcano-system >/dev/null
  k create namespace "$NS" >/dev/null
  proc kiln-controller "$CTL_BIN"
  proc kiln-scheduler "$SCH_BIN"
  local third=$((JOBS / 3))
  submit 1 "$third"
  sleep 2
  kill9 kiln-controller
  proc kiln-controller "$CTL_BIN"
  submit $((third + 1)) $((2 * third))
  sleep 2
  kill9 kiln-scheduler
  proc kiln-scheduler "$SCH_BIN"
  sleep 2
  restart_cp kube-apiserver
  wait_for 90 "API server back" api_ready
  submit $((2 * third + 1)) "$JOBS"
  sleep 2
  restart_cp etcd
  wait_for 90 "API server ready after etcd" api_ready
  sleep 1
  kill9 kiln-controller
  kill9 kiln-scheduler
  proc kiln-controller "$CTL_BIN"
  proc kiln-scheduler "$SCH_BIN"
  wait_for 300 "all $JOBS Jobs Completed" jobs_done

  # Invariants from the audit log.
  local stats
  stats=$(python3 - "$FD/logs" "$NS" <<'PY'
import glob, json, sys, collections
logs, ns = sys.argv[1], sys.argv[2]
created = collections.Counter()
bound = collections.Counter()
for path in sorted(glob.glob(logs + "/audit*.log")):
    for line in open(path):
        e = json.loads(line)
        o = e.get("objectRef", {})
        if o.get("namespace") != ns or o.get("resource") != "pods":
            continue
        code = e.get("responseStatus", {}).get("code", 0)
        if e.get("stage") != "ResponseComplete" or not 200 <= code < 300:
            continue
        if e["verb"] == "create" and not o.get("subresource"):
            created[o["name"]] += 1
        elif e["verb"] == "create" and o.get("subresource") == "binding":
            bound[o["name"]] += 1
print(len(created), sum(created.values()), sum(1 for v in created.values() if v > 1),
      len(bound), sum(1 for v in bound.values() if v > 1))
PY
)
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

test_zz_cleanup() {
  local f pid
  for f in "$FD"/pids/kiln-*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
  done
  sleep 1
  "$KILN_ROOT/tests/cluster/down" --dir "$FD" >/dev/null 2>&1 || true
}

e2e_main "$@"
