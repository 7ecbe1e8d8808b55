#!/usr/bin/env bash
# Why pending (issue #13), on the real control plane: a gang that does not fit says which
# limit holds it on its PodGroup's Unschedulable condition and, for a Volcano Job, in the
# Job's PodGroupPending event (`kubectl describe vcjob`), most specific first: a pod bigger
# than every node it may use, its queue's capability, the cluster full with the largest free
# block, the predicates per reason with node counts. The condition reason stays Volcano's
# NotEnoughResources. kiln-scheduler runs with its default configuration.
# Each test makes its own kwok nodes (labelled grp=<test>, tainted kiln-why=<test>) and
# selects them, so nothing else lands there and other suites are not disturbed.
# shellcheck shell=bash
SUITE=whypending
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
D=$KILN_CLUSTER_DIR
LOG=$D/logs/kiln-scheduler-why.log
mkdir -p "$D/logs" "$D/pids"

nodes() { # GRP COUNT ARGS...
  local grp=$1 count=$2
  shift 2
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count "$count" --prefix "$grp-" \
    --label "grp=$grp" --taint "kiln-why=$grp:NoSchedule" "$@" >/dev/null \
    || fail "cannot create nodes $grp-*"
}

placement() { # GRP [INDENT]: nodeSelector and toleration for GRP's nodes
  printf '%snodeSelector: {grp: %s}\n%stolerations: [{key: kiln-why, value: %s, effect: NoSchedule}]\n' \
    "${2:-}" "$1" "${2:-}" "$1"
}

vcjob() { # NS NAME QUEUE REPLICAS CPU GRP
  kubectl apply -n "$1" -f - >/dev/null <<EOF || fail "cannot create Job $2"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $2}
spec:
  schedulerName: volcano
  queue: $3
  minAvailable: $4
  tasks:
  - name: w
    replicas: $4
    template:
      spec:
$(placement "$6" "        ")
        containers: [{name: c, image: fake, resources: {requests: {cpu: "$5"}, limits: {cpu: "$5"}}}]
EOF
}

gang() { # NS NAME COUNT CPU GRP [NODE]: a PodGroup and its pods (bound to NODE when given)
  kubectl apply -n "$1" -f - >/dev/null <<EOF || fail "cannot create PodGroup $2"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2}
spec: {minMember: $3, queue: kiln-why}
EOF
  local i
  for ((i = 0; i < $3; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $2-$i
  annotations: {scheduling.k8s.io/group-name: $2}
spec:
  schedulerName: volcano
${6:+  nodeName: $6}
$(placement "$5" "  ")
  containers: [{name: c, image: fake, resources: {requests: {cpu: "$4"}, limits: {cpu: "$4"}}}]
EOF
  done | kubectl apply -n "$1" -f - >/dev/null || fail "cannot create pods $2-*"
}

wait_pg_message() { # SECS NS PREFIX WANT-REASON|MESSAGE (exact)
  local deadline=$((SECONDS + $1)) got
  while :; do
    got=$(pg_message "$2" "$3")
    [ "$got" = "$4" ] && return 0
    [ $SECONDS -lt $deadline ] || fail "PodGroup $3: want '$4', got '$got'"
    sleep 0.3
  done
}

wait_describe() { # SECS NS JOB TEXT: `kubectl describe vcjob` shows TEXT
  local deadline=$((SECONDS + $1))
  until kubectl describe vcjob -n "$2" "$3" 2>/dev/null | tr -s ' \n' ' ' | grep -qF -- "$4"; do
    [ $SECONDS -lt $deadline ] || fail "describe vcjob $3 lacks '$4': $(kubectl describe vcjob -n "$2" "$3" | tail -8)"
    sleep 0.3
  done
}

# ---- suite setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh crd/jobs.batch.volcano.sh >/dev/null 2>&1
queue kiln-why 1000
"$SCHED" --kubeconfig "$KUBECONFIG" --v=3 --leader-elect=false >"$LOG" 2>&1 &
echo $! > "$D/pids/kiln-scheduler-why.pid"
echo "$SCHED" > "$D/pids/kiln-scheduler-why.exe"
"$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false >"$D/logs/kiln-controller-why.log" 2>&1 &
echo $! > "$D/pids/kiln-controller-why.pid"
echo "$CTRL" > "$D/pids/kiln-controller-why.exe"

# ---- tests ----

# The issue's case: 4 nodes of 32 cpu, a Job of 3 pods asking 40 cpu each.
test_pod_bigger_than_every_node() {
  local ns
  ns=$(new_namespace why)
  nodes wbig 4 --cpu 32 --memory 64Gi
  vcjob "$ns" big kiln-why 3 40 wbig
  local want="3/3 tasks in gang unschedulable: pod requests 40 cpu; the largest node allocates 32"
  wait_pg_message 90 "$ns" big "NotEnoughResources|$want"
  wait_describe 60 "$ns" big "PodGroupPending"
  wait_describe 30 "$ns" big "$want"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# Nodes big enough but busy: the cluster is full, and the largest free block is named.
test_cluster_full() {
  local ns
  ns=$(new_namespace why)
  nodes wfull 2 --cpu 4 --memory 16Gi
  gang "$ns" fill-a 1 3 wfull wfull-0
  gang "$ns" fill-b 1 2 wfull wfull-1
  gang "$ns" want 1 3 wfull
  wait_pg_message 90 "$ns" want \
    "NotEnoughResources|1/1 tasks in gang unschedulable: cluster full: pod requests 3 cpu; the largest free block is 2 cpu (node wfull-1)"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# No node takes the pod for another reason: the predicates, counted per reason.
test_predicates_per_reason() {
  local ns total
  ns=$(new_namespace why)
  nodes wtaint 2 --cpu 4 --memory 16Gi
  total=$(kubectl get nodes --no-headers | wc -l)
  kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: shy}
spec: {minMember: 1, queue: kiln-why}
---
apiVersion: v1
kind: Pod
metadata: {name: shy-0, annotations: {scheduling.k8s.io/group-name: shy}}
spec:
  schedulerName: volcano
  nodeSelector: {grp: wtaint}
  containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}}}]
EOF
  local msg deadline=$((SECONDS + 90))
  until msg=$(pg_message "$ns" shy) && [[ $msg == *"nodes are available"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no predicate message: '$msg'"
    sleep 0.3
  done
  # The counts are of the nodes the scheduler sees Ready: other suites' nodes may come and go
  # in a shared cluster, so only this test's two nodes are counted exactly.
  expect_match "^NotEnoughResources\|1/1 tasks in gang unschedulable: 0/[0-9]+ nodes are available: " "$msg"
  expect_match "(: |, )2 node\(s\) had untolerated taint \{kiln-why: wtaint\}" "$msg"
  expect_match "[0-9]+ node\(s\) didn't match Pod's node affinity/selector" "$msg"
  [ "$total" -ge 3 ] || fail "the cluster has $total nodes"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A queue at its capability: the Job stays Pending and says how much is left of what.
test_queue_at_capability() {
  local ns
  ns=$(new_namespace why)
  nodes wcap 2 --cpu 8 --memory 16Gi
  queue kiln-why-cap 1 2
  vcjob "$ns" capped kiln-why-cap 2 2 wcap
  local want="queue kiln-why-cap resource quota insufficient: the gang needs 4 cpu (minResources); the queue has 2 cpu left of 2 cpu"
  wait_pg_message 90 "$ns" capped "NotEnoughResources|2/0 tasks in gang unschedulable: $want"
  wait_describe 60 "$ns" capped "$want"
  expect_eq "" "$(kubectl get pods -n "$ns" -o name)" "pods of a gang its queue holds"
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete queue kiln-why-cap --wait=false >/dev/null 2>&1 || true
}

e2e_main "$@"
rc=$?
for p in kiln-scheduler-why kiln-controller-why; do
  if [ -f "$D/pids/$p.pid" ]; then
    kill "$(cat "$D/pids/$p.pid")" 2>/dev/null
    rm -f "$D/pids/$p.pid" "$D/pids/$p.exe"
  fi
done
kubectl delete queue kiln-why --wait=false >/dev/null 2>&1
kubectl delete nodes -l 'grp in (wbig,wfull,wtaint,wcap)' --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
