#!/usr/bin/env bash
# A hostile tenant (issue 27): batches of Jobs, PodGroups, Queues, CronJobs, JobTemplates,
# JobFlows and Commands with extreme but schema-valid values (and some the API server refuses),
# made by a seeded generator (tests/e2e/hostile_gen.py), and a scheduler configuration that
# cannot be used written over the one kiln-scheduler reloads. After each batch both processes
# must be alive and ready, neither event loop may have used more than 100 ms of CPU without
# waiting for I/O (their own volcano_event_loop_busy_cpu_duration_milliseconds histogram; the
# wall-clock stretch is reported beside it), the scheduler
# must have kept its previous configuration, and a normal Job submitted afterwards completes.
# The tenant's namespace has a ResourceQuota of pods, as a real cluster's tenants do, so that a
# Job of 2^31-1 replicas meets refusals instead of filling the machine.
#
#   KILN_HOSTILE_SEED (default: the date), KILN_HOSTILE_BATCHES (3), KILN_HOSTILE_COUNT (24)
#   objects per batch. The larger size, run by hand: KILN_HOSTILE_BATCHES=20 KILN_HOSTILE_COUNT=80.
# shellcheck shell=bash
SUITE=hostile
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$KILN_CLUSTER_DIR
CTRL=$KILN_BUILD/controller/kiln-controller
SCHED=$KILN_BUILD/scheduler/kiln-scheduler
GEN=$E2E_DIR/hostile_gen.py
CONF=$D/kiln-hostile-scheduler.conf
SEED=${KILN_HOSTILE_SEED:-$(date +%Y%m%d)}
BATCHES=${KILN_HOSTILE_BATCHES:-3}
COUNT=${KILN_HOSTILE_COUNT:-24}
STALL_MS=100
mkdir -p "$D/logs" "$D/pids"

good_conf() { # FILE
  sched_conf "$1" "  - name: binpack"
}

start() { # NAME BINARY ARGS...: health and metrics servers on ports the kernel picks
  local name=$1 bin=$2
  shift 2
  "$bin" --kubeconfig "$KUBECONFIG" --leader-elect=false --enable-healthz \
    --healthz-address 127.0.0.1:0 --enable-metrics --listen-address 127.0.0.1:00 -v=2 "$@" \
    >"$D/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name.pid"
  echo "$bin" >"$D/pids/$name.exe" # tests/cluster/down checks it before a kill
}

# stalls PORT: how many loop iterations so far used more than STALL_MS of the loop thread's
# CPU (the CPU histogram's count less its bucket at STALL_MS), the most CPU one used, and the
# longest wall-clock stretch, as "N LONGEST_CPU_MS LONGEST_WALL_MS". The verdict is on CPU
# time: on the 2-core CI machine the API server, etcd, kwok and kubectl keep the loop thread
# waiting for tens of milliseconds at a time, which is the machine's load, not the process's
# work; the wall-clock figure is reported beside it.
stalls() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk -v le="$STALL_MS" '
    $1 == "volcano_event_loop_busy_cpu_duration_milliseconds_count" { n = $2 }
    index($1, "volcano_event_loop_busy_cpu_duration_milliseconds_bucket{le=\"" le "\"}") == 1 { b = $2 }
    $1 == "volcano_event_loop_longest_busy_cpu_milliseconds" { c = $2 }
    $1 == "volcano_event_loop_longest_busy_milliseconds" { l = $2 }
    END { printf "%d %s %s\n", n - b, c, l }'
}

ready() { curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1; }

# alive NAME: the process started as NAME runs and answers /readyz.
alive() {
  local pid
  pid=$(cat "$D/pids/$1.pid")
  kill -0 "$pid" 2>/dev/null && [ "$(proc_state "$pid")" != Z ] ||
    fail "$1 is gone: $(tail -n 5 "$D/logs/$1.log" | tr '\n' ' ')"
  ready "$(cat "$D/$1.healthz")" || fail "$1 does not answer /readyz"
}

setup_hostile() {
  apply_crds || fail "CRDs"
  kubectl get queue default >/dev/null 2>&1 ||
    kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
  group_nodes hostile 3
  good_conf "$CONF"
  local n port
  for n in kiln-hostile-controller kiln-hostile-scheduler; do
    if [ "$n" = kiln-hostile-controller ]; then start "$n" "$CTRL"; else start "$n" "$SCHED" --scheduler-conf "$CONF"; fi
    port=$(served_port "$D/logs/$n.log" healthz) && echo "$port" >"$D/$n.healthz"
    port=$(served_port "$D/logs/$n.log" metrics) && echo "$port" >"$D/$n.metrics"
    wait_for 60 "$n ready" ready "$(cat "$D/$n.healthz")"
  done
}

# normal_job_completes NS: a plain two-pod gang completes (the processes still do their work).
normal_job_completes() {
  kubectl create -n "$1" -f - >/dev/null <<'YAML' || fail "cannot create the normal Job"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: normal}
spec:
  minAvailable: 2
  tasks:
  - name: t
    replicas: 2
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "1s"}}
      spec:
        restartPolicy: Never
        nodeSelector: {grp: hostile}
        containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
YAML
  wait_jsonpath 120 vcjob/normal '{.status.state.phase}' Completed "$1"
}

test_hostile_batches_leave_both_processes_working() {
  setup_hostile
  local b ns out created refused before_c before_s after_c after_s lines total_c=0 total_r=0
  local nb_c na_c cpu_c wall_c nb_s na_s cpu_s wall_s
  for b in $(seq 1 "$BATCHES"); do
    ns=$(new_namespace hostile)
    kubectl create quota tenant -n "$ns" --hard=pods=30 >/dev/null
    # Until the quota controller has counted, the API server refuses every pod of the namespace.
    wait_jsonpath 60 resourcequota/tenant '{.status.hard.pods}' 30 "$ns"
    before_c=$(stalls "$(cat "$D/kiln-hostile-controller.metrics")")
    before_s=$(stalls "$(cat "$D/kiln-hostile-scheduler.metrics")")
    # The objects, each created on its own so that one the API server refuses does not stop
    # the rest; kubectl prints a line per object either way.
    out=$(python3 "$GEN" objects "$SEED" "$b" "$COUNT" "h$b" | kubectl create -n "$ns" -f - 2>&1) || true
    created=$(grep -c ' created$' <<<"$out" || true)
    refused=$(grep -c '^Error from server\|^error:' <<<"$out" || true)
    total_c=$((total_c + created)) total_r=$((total_r + refused))
    # A configuration that cannot be used, written over the one in force.
    lines=$(log_lines "$D/logs/kiln-hostile-scheduler.log")
    python3 "$GEN" conf "$SEED" "$b" >"$CONF.new" && mv "$CONF.new" "$CONF"
    wait_for 30 "the scheduler to refuse the bad configuration" bash -c \
      "tail -n +$((lines + 1)) '$D/logs/kiln-hostile-scheduler.log' | grep -q 'keeping the previous configuration'"
    # Let both chew on the batch for a few scheduling periods.
    wait_sessions 3 "$(cat "$D/kiln-hostile-scheduler.metrics")"
    alive kiln-hostile-controller
    alive kiln-hostile-scheduler
    # The normal Job in a namespace of its own: the tenant's quota may be spent.
    normal_job_completes "$(new_namespace tenant)"
    good_conf "$CONF"
    after_c=$(stalls "$(cat "$D/kiln-hostile-controller.metrics")")
    after_s=$(stalls "$(cat "$D/kiln-hostile-scheduler.metrics")")
    read -r nb_c cpu_c wall_c <<<"$before_c"
    read -r na_c cpu_c wall_c <<<"$after_c"
    read -r nb_s cpu_s wall_s <<<"$before_s"
    read -r na_s cpu_s wall_s <<<"$after_s"
    echo "REPORT batch $b (seed $SEED): $created objects created, $refused refused by the API server;" \
      "loop iterations over ${STALL_MS} ms of CPU: controller $((na_c - nb_c)), scheduler $((na_s - nb_s))" \
      "(most so far: controller ${cpu_c} ms CPU, ${wall_c} ms wall; scheduler ${cpu_s} ms CPU, ${wall_s} ms wall)"
    [ "$na_c" = "$nb_c" ] ||
      fail "batch $b: kiln-controller's loop used over ${STALL_MS} ms of CPU at a stretch (most ${cpu_c} ms); reproduce with KILN_HOSTILE_SEED=$SEED"
    [ "$na_s" = "$nb_s" ] ||
      fail "batch $b: kiln-scheduler's loop used over ${STALL_MS} ms of CPU at a stretch (most ${cpu_s} ms); reproduce with KILN_HOSTILE_SEED=$SEED"
    kubectl delete namespace "$ns" --wait=false >/dev/null
    kubectl get queue -o name | grep "^queue.scheduling.volcano.sh/h$b-q" |
      xargs -r kubectl delete --wait=false >/dev/null 2>&1 || true
  done
  echo "REPORT $BATCHES batches of $COUNT: $total_c objects created, $total_r refused; both processes alive and ready after each"
}

# Pass or fail, what the tenant made goes before the next suite: its namespaces (their Jobs,
# PodGroups and pods with them) and its queues, waited for, so that a batch that failed half
# way leaves nothing for the suites after it to trip on.
finally_tenant_objects_removed() {
  local left
  kubectl get namespace -o name | grep -E '^namespace/(hostile|tenant)-' |
    xargs -r kubectl delete --timeout=180s >/dev/null 2>&1 || true
  kubectl get queue -o name | grep -E '^queue.scheduling.volcano.sh/h[0-9]+-' |
    xargs -r kubectl delete --timeout=60s >/dev/null 2>&1 || true
  left=$(kubectl get namespace -o name | grep -cE '^namespace/(hostile|tenant)-' || true)
  if [ "$left" != 0 ]; then
    # What holds them: the namespace controller's conditions name the kinds it still waits on.
    kubectl get namespace -o json | python3 -c '
import json, sys
for ns in json.load(sys.stdin)["items"]:
    n = ns["metadata"]["name"]
    if n.startswith(("hostile-", "tenant-")):
        for c in ns.get("status", {}).get("conditions", []):
            if c.get("status") == "True":
                print(n, c["type"], c.get("message", ""))'
    fail "$left tenant namespaces are still there after 180 s"
  fi
}

e2e_main "$@"
