#!/usr/bin/env bash
# The capacity plugin on the real control plane (kiln-scheduler configured with capacity in
# place of proportion): three queues with deserved 1:1:2 get that split of dedicated nodes
# under contention, and a queue at its capability admits no more; then with enableHierarchy, a
# depth-3 tree (root -> parent -> leaves): deserved 1:1:2 among siblings, a parent's
# capability bounding its children together, jobs only in leaves, reclaim between siblings;
# and hierarchical DRF (drf with enableHierarchy) dividing by the queues' weights.
# Each test makes its own
# kwok nodes (labelled grp=<test>, tainted kiln-cap=<test>) and selects them, so other
# suites are not disturbed. A test that needs every pod in one session creates the pods
# before it starts the scheduler.
# shellcheck shell=bash
SUITE=capacity
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
D=$KILN_CLUSTER_DIR
CONF=$D/capacity-scheduler.conf
LOG=$D/logs/kiln-scheduler-capacity.log
mkdir -p "$D/logs" "$D/pids"
cat > "$CONF" <<'EOF'
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: capacity
- plugins:
  - name: predicates
  - name: nodeorder
EOF
HDRF_CONF=$D/hdrf-scheduler.conf
sed -e 's/^  - name: capacity$/  - name: drf\n    enableHierarchy: true/' "$CONF" > "$HDRF_CONF"
HIER_CONF=$D/capacity-hier-scheduler.conf
sed 's/^  - name: capacity$/  - name: capacity\n    enableHierarchy: true/' "$CONF" > "$HIER_CONF"

nodes() { # GRP COUNT ARGS...
  local grp=$1 count=$2
  shift 2
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count "$count" --prefix "$grp-" \
    --label "grp=$grp" --taint "kiln-cap=$grp:NoSchedule" "$@" >/dev/null \
    || fail "cannot create nodes $grp-*"
}

queue() { # NAME SPEC-EXTRA (a queue without parent is under root)
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create queue $1"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $1}
spec: {weight: 1, reclaimable: false, $2}
EOF
}

gangs() { # NS PREFIX QUEUE COUNT CPU GRP: COUNT one-pod gangs PREFIX-i in QUEUE
  local i
  for ((i = 0; i < $4; i++)); do
    cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2-$i, namespace: $1}
spec: {minMember: 1, queue: $3}
---
apiVersion: v1
kind: Pod
metadata:
  name: $2-$i
  namespace: $1
  annotations: {scheduling.k8s.io/group-name: $2-$i}
spec:
  schedulerName: volcano
  nodeSelector: {grp: $6}
  tolerations: [{key: kiln-cap, value: $6, effect: NoSchedule}]
  containers: [{name: c, image: fake, resources: {requests: {cpu: "$5"}, limits: {cpu: "$5"}}}]
EOF
  done | kubectl apply -f - >/dev/null || fail "cannot create gangs $2-*"
}

bound() { # NS PREFIX: pods PREFIX-* bound and not being deleted
  kubectl get pods -n "$1" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}' \
    | awk -v p="^$2-" '$1 ~ p && $2 != "" && $3 == ""' | wc -l
}

wait_bound() { # SECS NS PREFIX N
  local deadline=$((SECONDS + $1))
  until [ "$(bound "$2" "$3")" = "$4" ]; do
    [ $SECONDS -lt $deadline ] || fail "want $4 pods $3-* bound, have $(bound "$2" "$3")"
    sleep 0.3
  done
}

lender_gang() { # NS QUEUE GRP: PodGroup lend (minMember 1) in QUEUE with four one-cpu pods
  local i
  {
    printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: lend}\nspec: {minMember: 1, queue: %s}\n' "$2"
    for i in 0 1 2 3; do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: lend-%s, annotations: {scheduling.k8s.io/group-name: lend}}\n' "$i"
      printf 'spec:\n  schedulerName: volcano\n  nodeSelector: {grp: %s}\n' "$3"
      printf '  tolerations: [{key: kiln-cap, value: %s, effect: NoSchedule}]\n' "$3"
      printf '  containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}, limits: {cpu: "1"}}}]\n'
    done
  } | kubectl apply -n "$1" -f - >/dev/null || fail "cannot create the gang lend in $2"
}

finish() { # NS QUEUE...: stop the scheduler, delete the namespace, then the queues in order
  local ns=$1 q
  shift
  stop_scheduler
  kubectl delete namespace "$ns" --wait=false >/dev/null
  for q in "$@"; do
    kubectl delete queue "$q" --wait=false >/dev/null 2>&1 || true
  done
}

# metric NAME QUEUE [RESOURCE]: the gauge's value for the queue (and resource), empty when
# not exported.
metric() {
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" \
    | awk -v n="$1{queue_name=\"$2\"${3:+,resource=\"$3\"}}" '$1 == n {print $2}'
}

wait_metric() { # SECS NAME QUEUE WANT [RESOURCE]
  local deadline=$((SECONDS + $1)) got
  until got=$(metric "$2" "$3" "${5:-}") && [ "$got" = "$4" ]; do
    [ $SECONDS -lt $deadline ] || fail "$2{queue_name=$3${5:+,resource=$5}}: want $4, got '$got'"
    sleep 0.3
  done
}

# start_scheduler [CONF]: sets METRICS_PORT, the port the kernel gave its metrics server.
start_scheduler() {
  local from
  from=$(log_lines "$LOG")
  "$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "${1:-$CONF}" --v=3 --leader-elect=false \
    --enable-metrics --listen-address 127.0.0.1:0 >>"$LOG" 2>&1 &
  echo $! > "$D/pids/kiln-scheduler-capacity.pid"
  echo "$SCHED" > "$D/pids/kiln-scheduler-capacity.exe"
  METRICS_PORT=$(served_port "$LOG" metrics "$from")
}

stop_scheduler() {
  [ -f "$D/pids/kiln-scheduler-capacity.pid" ] || return 0
  kill "$(cat "$D/pids/kiln-scheduler-capacity.pid")" 2>/dev/null || true
  rm -f "$D/pids/kiln-scheduler-capacity.pid" "$D/pids/kiln-scheduler-capacity.exe"
}

kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh >/dev/null 2>&1

# Three queues deserving 2, 2 and 4 cpu, each with 8 one-cpu gangs waiting for 8 cpu of
# nodes: the share order gives 2, 2 and 4.
test_deserved_split_under_contention() {
  local ns
  ns=$(new_namespace cap)
  nodes csplit 2 --cpu 4 --memory 16Gi
  queue cap-a "deserved: {cpu: '2'}"
  queue cap-b "deserved: {cpu: '2'}"
  queue cap-c "deserved: {cpu: '4'}"
  gangs "$ns" a cap-a 8 1 csplit
  gangs "$ns" b cap-b 8 1 csplit
  gangs "$ns" c cap-c 8 1 csplit
  start_scheduler
  local deadline=$((SECONDS + 90)) total
  while :; do
    total=$(($(bound "$ns" a) + $(bound "$ns" b) + $(bound "$ns" c)))
    [ "$total" = 8 ] && break
    [ $SECONDS -lt $deadline ] || fail "want 8 pods bound, have $total"
    sleep 0.3
  done
  expect_eq "2 2 4" "$(bound "$ns" a) $(bound "$ns" b) $(bound "$ns" c)" "pods bound per queue a b c"
  wait_metric 60 volcano_queue_deserved_milli_cpu cap-c 4000
  wait_metric 60 volcano_queue_allocated_milli_cpu cap-c 4000
  finish "$ns" cap-a cap-b cap-c
}

# A queue with capability 3 cpu binds three one-cpu gangs of five and holds the rest,
# saying so with the numbers, though the nodes have room.
test_capability_stops_admitting() {
  local ns
  ns=$(new_namespace cap)
  nodes ccap 1 --cpu 8 --memory 16Gi
  queue cap-limited "capability: {cpu: '3'}"
  start_scheduler
  gangs "$ns" l cap-limited 5 1 ccap
  local deadline=$((SECONDS + 90))
  until [ "$(bound "$ns" l)" = 3 ]; do
    [ $SECONDS -lt $deadline ] || fail "want 3 pods bound, have $(bound "$ns" l)"
    sleep 0.3
  done
  local msg=""
  deadline=$((SECONDS + 60))
  until [[ $msg == *"queue cap-limited resource quota insufficient: pod requests 1 cpu; the queue's capability is 3 cpu, 3 cpu allocated"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no capability message: '$msg'"
    sleep 0.5
    msg=$(kubectl get podgroups -n "$ns" -o jsonpath='{range .items[*]}{.status.conditions[*].message}{"\n"}{end}')
  done
  expect_eq 3 "$(bound "$ns" l)" "pods bound in the limited queue"
  wait_metric 60 volcano_queue_capacity_milli_cpu cap-limited 3000
  wait_metric 60 volcano_queue_real_capacity_milli_cpu cap-limited 3000
  finish "$ns" cap-limited
}

# A queue that borrowed idle room gives it back to its owner by reclaim, but never below its
# own guarantee: lender (deserved = guarantee = 2, as the queue rules allow no less) runs 4
# one-cpu pods on a 4-cpu node; owner (deserved 2) then asks for 3; reclaim evicts 2 lender
# pods, not 3, and the owner's third pod waits.
test_reclaim_keeps_guarantee() {
  local ns
  ns=$(new_namespace cap)
  nodes crec 1 --cpu 4 --memory 16Gi
  queue cap-lender "reclaimable: true, deserved: {cpu: '2'}, guarantee: {resource: {cpu: '2'}}"
  queue cap-owner "deserved: {cpu: '2'}"
  start_scheduler
  lender_gang "$ns" cap-lender crec
  wait_bound 90 "$ns" lend 4
  gangs "$ns" own cap-owner 3 1 crec
  wait_bound 90 "$ns" own 2
  wait_bound 60 "$ns" lend 2
  # More sessions: the guarantee holds and the third owner pod keeps waiting.
  wait_sessions 3
  expect_eq "2 2" "$(bound "$ns" lend) $(bound "$ns" own)" "lender and owner pods bound"
  finish "$ns" cap-lender cap-owner
}

# Hierarchy: root -> cap-hs (deserved 8) -> cap-hs-1, -2, -3 deserving 2, 2 and 4, each with 8
# one-cpu gangs waiting for 8 cpu of nodes: the siblings' share order gives 2, 2 and 4.
test_hier_deserved_split_under_contention() {
  local ns
  ns=$(new_namespace cap)
  nodes chsplit 2 --cpu 4 --memory 16Gi
  queue cap-hs "deserved: {cpu: '8'}"
  queue cap-hs-1 "parent: cap-hs, deserved: {cpu: '2'}"
  queue cap-hs-2 "parent: cap-hs, deserved: {cpu: '2'}"
  queue cap-hs-3 "parent: cap-hs, deserved: {cpu: '4'}"
  gangs "$ns" a cap-hs-1 8 1 chsplit
  gangs "$ns" b cap-hs-2 8 1 chsplit
  gangs "$ns" c cap-hs-3 8 1 chsplit
  start_scheduler "$HIER_CONF"
  local deadline=$((SECONDS + 90)) total
  while :; do
    total=$(($(bound "$ns" a) + $(bound "$ns" b) + $(bound "$ns" c)))
    [ "$total" = 8 ] && break
    [ $SECONDS -lt $deadline ] || fail "want 8 pods bound, have $total"
    sleep 0.3
  done
  expect_eq "2 2 4" "$(bound "$ns" a) $(bound "$ns" b) $(bound "$ns" c)" "pods bound per leaf 1 2 3"
  wait_metric 60 volcano_queue_deserved_milli_cpu cap-hs 8000
  wait_metric 60 volcano_queue_allocated_milli_cpu cap-hs-3 4000
  finish "$ns" cap-hs-1 cap-hs-2 cap-hs-3 cap-hs
}

# root -> cap-hc (capability 3 cpu) -> cap-hc-1, cap-hc-2 (no capability of their own): three
# gangs in each, on a node with room for all; three bind in total, the others say which
# queue holds them. A gang put in cap-hc itself is never admitted: jobs go to leaf queues. The
# GPU capability shows in the scalar series, the children's inherited from the parent.
test_hier_parent_capability_bounds_children() {
  local ns
  ns=$(new_namespace cap)
  nodes chcap 1 --cpu 8 --memory 16Gi --gpu 4
  queue cap-hc "capability: {cpu: '3', nvidia.com/gpu: '2'}"
  queue cap-hc-1 "parent: cap-hc"
  queue cap-hc-2 "parent: cap-hc"
  start_scheduler "$HIER_CONF"
  gangs "$ns" l cap-hc-1 3 1 chcap
  gangs "$ns" r cap-hc-2 3 1 chcap
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the inner PodGroup"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: inner}
spec: {minMember: 1, queue: cap-hc, minResources: {cpu: '1'}}
EOF
  local deadline=$((SECONDS + 90))
  until [ $(($(bound "$ns" l) + $(bound "$ns" r))) = 3 ]; do
    [ $SECONDS -lt $deadline ] || fail "want 3 pods bound, have $(($(bound "$ns" l) + $(bound "$ns" r)))"
    sleep 0.3
  done
  local msg=""
  deadline=$((SECONDS + 60))
  until [[ $msg == *"queue cap-hc (an ancestor of queue cap-hc-"[12]") resource quota insufficient: pod requests 1 cpu; the queue's capability is 3 cpu, 3 cpu allocated"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no ancestor capability message: '$msg'"
    sleep 0.5
    msg=$(kubectl get podgroups -n "$ns" -o jsonpath='{range .items[*]}{.status.conditions[*].message}{"\n"}{end}')
  done
  wait_for 60 "the inner PodGroup's leaf message" sh -c \
    "kubectl get podgroup inner -n $ns -o jsonpath='{.status.conditions[*].message}' | grep -q 'The Queue <cap-hc> of Job <$ns/inner> is not leaf queue'"
  expect_eq Pending "$(jsonpath podgroup/inner '{.status.phase}' "$ns")" "inner PodGroup phase"
  expect_eq 3 "$(($(bound "$ns" l) + $(bound "$ns" r)))" "pods bound under cap-hc"
  wait_metric 60 volcano_queue_real_capacity_milli_cpu cap-hc-1 3000
  wait_metric 60 volcano_queue_capacity_scalar_resources cap-hc 2000 nvidia.com/gpu
  wait_metric 60 volcano_queue_real_capacity_scalar_resources cap-hc-2 2000 nvidia.com/gpu
  wait_metric 60 volcano_queue_allocated_scalar_resources cap-hc-1 0 nvidia.com/gpu
  finish "$ns" cap-hc-1 cap-hc-2 cap-hc
}

# root -> cap-hr (deserved 4) -> cap-hr-1, cap-hr-2 (deserved 2 each): cap-hr-1 borrows its
# idle sibling's share (4 pods on a 4-cpu node); cap-hr-2's work arrives and reclaim gives
# it back: 2 and 2.
test_hier_reclaim_between_siblings() {
  local ns
  ns=$(new_namespace cap)
  nodes chrec 1 --cpu 4 --memory 16Gi
  queue cap-hr "deserved: {cpu: '4'}"
  queue cap-hr-1 "parent: cap-hr, reclaimable: true, deserved: {cpu: '2'}"
  queue cap-hr-2 "parent: cap-hr, deserved: {cpu: '2'}"
  start_scheduler "$HIER_CONF"
  lender_gang "$ns" cap-hr-1 chrec
  wait_bound 90 "$ns" lend 4
  gangs "$ns" own cap-hr-2 2 1 chrec
  wait_bound 90 "$ns" own 2
  wait_bound 60 "$ns" lend 2
  finish "$ns" cap-hr-1 cap-hr-2 cap-hr
}

# Hierarchical DRF in place of capacity: root -> cap-hd-a (weight 3), cap-hd-b (weight 1),
# each with 8 one-cpu gangs waiting for 8 cpu of nodes: share / weight orders the queues, so
# they get 6 and 2.
test_hdrf_weights_split_under_contention() {
  local ns
  ns=$(new_namespace cap)
  nodes chdrf 2 --cpu 4 --memory 16Gi
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create the queues"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: cap-hd-a}
spec: {weight: 3, reclaimable: false}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: cap-hd-b}
spec: {weight: 1, reclaimable: false}
EOF
  gangs "$ns" a cap-hd-a 8 1 chdrf
  gangs "$ns" b cap-hd-b 8 1 chdrf
  start_scheduler "$HDRF_CONF"
  local deadline=$((SECONDS + 90)) total
  while :; do
    total=$(($(bound "$ns" a) + $(bound "$ns" b)))
    [ "$total" = 8 ] && break
    [ $SECONDS -lt $deadline ] || fail "want 8 pods bound, have $total"
    sleep 0.3
  done
  expect_eq "6 2" "$(bound "$ns" a) $(bound "$ns" b)" "pods bound in cap-hd-a and cap-hd-b"
  finish "$ns" cap-hd-a cap-hd-b
}

e2e_main "$@"
rc=$?
stop_scheduler
kubectl delete nodes -l 'grp in (csplit,ccap,crec,chsplit,chcap,chrec,chdrf)' --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
