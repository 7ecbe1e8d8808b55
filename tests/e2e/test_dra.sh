#!/usr/bin/env bash
# Dynamic Resource Allocation (issue #29 item 3) on the real control plane: a fake driver is
# just objects (a DeviceClass gpu.example.com and a ResourceSlice of devices per kwok node);
# Volcano Jobs ask for devices through a ResourceClaimTemplate, whose claims
# kube-controller-manager's resourceclaim controller makes (tests/cluster/up runs it), and
# kiln-scheduler (predicate.DynamicResourceAllocationEnable) allocates them, writing each
# claim's status.allocation and reservedFor before it binds the pod.
# Each test makes its own kwok nodes (labelled grp=<test>, tainted kiln-dra=<test>) with their
# slices and selects them, so other suites are not disturbed.
# shellcheck shell=bash
SUITE=dra
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
VCCTL=$KILN_BUILD/cli/vcctl
D=$KILN_CLUSTER_DIR
LOG=$D/logs/kiln-scheduler-dra.log
CONF=$D/dra-scheduler.conf
CLASS=gpu.example.com
mkdir -p "$D/logs" "$D/pids"
sched_conf "$CONF" --predicates "predicate.DynamicResourceAllocationEnable: true"

# nodes GRP COUNT DEVICES: kwok nodes GRP-i, each with a ResourceSlice of DEVICES devices
# GRP-i-gpu-k of the driver gpu.example.com.
nodes() {
  local grp=$1 count=$2 ndev=$3 i k
  group_nodes "$grp" "$count" --cpu 32 --memory 64Gi --taint "kiln-dra=$grp:NoSchedule"
  for ((i = 0; i < count; i++)); do
    {
      printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s-%s}\n' "$grp-$i" "$CLASS"
      printf 'spec:\n  driver: %s\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n  devices:\n' \
        "$CLASS" "$grp-$i" "$grp-$i"
      for ((k = 0; k < ndev; k++)); do
        printf '  - name: %s-gpu-%s\n    attributes: {model: {string: a100}, index: {int: %s}}\n' "$grp-$i" "$k" "$k"
        printf '    capacity: {memory: {value: 80Gi}}\n'
      done
    } | kubectl apply -f - >/dev/null || fail "cannot publish the slice of $grp-$i"
  done
}

# vcjob NS NAME REPLICAS GRP [QUEUE]: a Job of REPLICAS pods that must all run, each claiming
# two devices through the template two-gpus (made in NS here), in QUEUE (kiln-dra).
vcjob() {
  kubectl apply -n "$1" -f - >/dev/null <<EOF || fail "cannot create Job $2"
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: $CLASS
          count: 2
          selectors:
          - cel: {expression: 'device.attributes["$CLASS"].model == "a100"'}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $2}
spec:
  schedulerName: volcano
  queue: ${5:-kiln-dra}
  minAvailable: $3
  tasks:
  - name: w
    replicas: $3
    template:
      spec:
        nodeSelector: {grp: $4}
        tolerations: [{key: kiln-dra, value: $4, effect: NoSchedule}]
        resourceClaims: [{name: gpu, resourceClaimTemplateName: two-gpus}]
        containers:
        - name: c
          image: fake
          resources: {requests: {cpu: "1"}, limits: {cpu: "1"}, claims: [{name: gpu}]}
EOF
}

bound() { # NS: pods bound and not being deleted
  kubectl get pods -n "$1" -o jsonpath='{range .items[*]}{.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}' \
    | awk '$1 != "" && $2 == ""' | wc -l
}

wait_bound() { # SECS NS N
  local deadline=$((SECONDS + $1))
  until [ "$(bound "$2")" = "$3" ]; do
    [ $SECONDS -lt $deadline ] || fail "want $3 pods bound in $2, have $(bound "$2")"
    sleep 0.3
  done
}

# allocations NS [JOB]: one line per allocated claim: "claim pod node device device..."
# (pod: its reservedFor, node: its node selector).
allocations() {
  kubectl get resourceclaims -n "$1" -o json | jq -r '.items[] | select(.status.allocation) |
    [.metadata.name, (.status.reservedFor // [] | map(.name) | join(",")),
     (.status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values[0] // "-"),
     (.status.allocation.devices.results | map(.device) | .[])] | join(" ")'
}

pg_message() { # NS: the Unschedulable condition's message of the namespace's PodGroup
  kubectl get podgroups -n "$1" -o json 2>/dev/null | jq -r '.items[].status.conditions[]? |
    select(.type == "Unschedulable") | .message' | tail -1
}

# ---- suite setup ----
kubectl api-resources --api-group=resource.k8s.io -o name | grep -qx 'resourceslices.resource.k8s.io' \
  || { echo "FAIL $SUITE/setup: the API server does not serve resource.k8s.io/v1"; exit 1; }
apply_crds || { echo "FAIL $SUITE/setup: the CRDs are not served"; exit 1; }
kubectl apply -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: kiln-dra}
spec: {weight: 1, reclaimable: false}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $CLASS}
spec:
  selectors:
  - cel: {expression: 'device.driver == "$CLASS"'}
EOF
"$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$CONF" --v=4 --leader-elect=false >"$LOG" 2>&1 &
echo $! > "$D/pids/kiln-scheduler-dra.pid"
echo "$SCHED" > "$D/pids/kiln-scheduler-dra.exe"
"$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false >"$D/logs/kiln-controller-dra.log" 2>&1 &
echo $! > "$D/pids/kiln-controller-dra.pid"
echo "$CTRL" > "$D/pids/kiln-controller-dra.exe"

# ---- tests ----

# A Job of 4 pods each claiming 2 devices, on 2 nodes of 4: 8 distinct devices, each claim
# allocated on its pod's node and reserved for it.
test_gang_gets_distinct_devices() {
  local ns
  ns=$(new_namespace dra)
  nodes dfour 2 4
  vcjob "$ns" four 4 dfour
  wait_bound 120 "$ns" 4
  local lines
  wait_for 30 "4 claims allocated" bash -c "[ \"\$(kubectl get resourceclaims -n $ns -o json | jq '[.items[] | select(.status.allocation)] | length')\" = 4 ]"
  lines=$(allocations "$ns")
  expect_eq 4 "$(wc -l <<<"$lines")" "claims allocated"
  expect_eq 8 "$(awk '{print $4; print $5}' <<<"$lines" | sort -u | wc -l)" "distinct devices"
  local claim pod node d1 d2
  while read -r claim pod node d1 d2; do
    [ -n "$pod" ] || fail "claim $claim is reserved for nobody"
    expect_eq "$(kubectl get pod -n "$ns" "$pod" -o jsonpath='{.spec.nodeName}')" "$node" \
      "node of claim $claim"
    [[ $d1 == "$node-gpu-"* && $d2 == "$node-gpu-"* ]] || fail "claim $claim: devices $d1 $d2 not on $node"
  done <<<"$lines"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A Job asking for more devices than are free (3 pods x 2 on 4) stays Pending, says why, and
# leaves no claim allocated. Devices it may not use (dspare) make the cluster hold more than it
# asks, so that its queue's share (the whole cluster's devices) is not what holds it.
test_more_than_free_stays_pending() {
  local ns
  ns=$(new_namespace dra)
  nodes dshort 2 2
  nodes dspare 1 4
  vcjob "$ns" big 3 dshort
  local msg deadline=$((SECONDS + 90))
  until msg=$(pg_message "$ns") && [[ $msg == *"have no free device of class $CLASS"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no DRA reason on the PodGroup: '$msg'"
    sleep 0.5
  done
  expect_match "nodes are available: .*2 have no free device of class $CLASS" "$msg"
  wait_for 30 "3 claims made" bash -c "[ \"\$(kubectl get resourceclaims -n $ns -o name | wc -l)\" = 3 ]"
  expect_eq 0 "$(bound "$ns")" "pods bound"
  expect_eq "" "$(allocations "$ns")" "claims allocated"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A queue whose capability allows 4 devices of the class holds a Job of 3 pods x 2 although
# the nodes have 8 free: the devices count as a resource named by the class, and the
# PodGroup (and vcctl job view) says so with the numbers.
test_queue_capability_limits_devices() {
  local ns
  ns=$(new_namespace dra)
  nodes dcap 2 4
  kubectl apply -f - >/dev/null <<YAML || fail "cannot create the queue"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: kiln-dra-cap}
spec: {weight: 1, reclaimable: false, capability: {$CLASS: "4"}}
YAML
  vcjob "$ns" capped 3 dcap kiln-dra-cap
  local msg want="queue kiln-dra-cap resource quota insufficient: pod requests 2 $CLASS; the queue's deserved share is 4 $CLASS, 4 $CLASS allocated"
  local deadline=$((SECONDS + 90))
  until msg=$(pg_message "$ns") && [[ $msg == *"$want"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no queue reason naming the devices on the PodGroup: '$msg'"
    sleep 0.5
  done
  expect_eq 0 "$(bound "$ns")" "pods bound"
  expect_eq "" "$(allocations "$ns")" "claims allocated"
  local out
  out=$("$VCCTL" job view -n "$ns" -N capped 2>&1) || fail "vcctl job view: $out"
  [[ $out == *"Why Pending:"*"$want"* ]] || fail "vcctl job view does not show the reason: $out"
  echo "    $(grep 'Why Pending' <<<"$out")" >&2
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete queue kiln-dra-cap --wait=false >/dev/null
}

# The devices of a deleted Job return: a second Job waiting for them is then placed.
test_deleted_jobs_devices_return() {
  local ns
  ns=$(new_namespace dra)
  nodes dback 1 2
  vcjob "$ns" first 1 dback
  wait_bound 120 "$ns" 1
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create Job second"
$(vcjob_yaml_second)
EOF
  local msg deadline=$((SECONDS + 90))
  # Its queue's share is the cluster's 2 devices, all taken: the queue or the nodes say so.
  until msg=$(pg_message "$ns") && [[ $msg == *"$CLASS"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "the second Job does not wait for devices: '$msg'"
    sleep 0.5
  done
  kubectl delete vcjob -n "$ns" first >/dev/null || fail "cannot delete Job first"
  local deadline2=$((SECONDS + 150))
  until [ "$(kubectl get pods -n "$ns" -l volcano.sh/job-name=second -o jsonpath='{.items[*].spec.nodeName}')" = dback-0 ]; do
    [ $SECONDS -lt $deadline2 ] || fail "the second Job never got the devices back: $(allocations "$ns")"
    sleep 0.5
  done
  expect_match "dback-0-gpu-[01] dback-0-gpu-[01]" "$(allocations "$ns" | grep second || true)" "the second Job's claim"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# The Job "second" of test_deleted_jobs_devices_return, one pod of two devices (the template
# exists already in the namespace).
vcjob_yaml_second() {
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: second}
spec:
  schedulerName: volcano
  queue: kiln-dra
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        nodeSelector: {grp: dback}
        tolerations: [{key: kiln-dra, value: dback, effect: NoSchedule}]
        resourceClaims: [{name: gpu, resourceClaimTemplateName: two-gpus}]
        containers:
        - name: c
          image: fake
          resources: {requests: {cpu: "1"}, limits: {cpu: "1"}, claims: [{name: gpu}]}
EOF
}

e2e_main "$@"
rc=$?
for p in kiln-scheduler-dra kiln-controller-dra; do
  if [ -f "$D/pids/$p.pid" ]; then
    kill "$(cat "$D/pids/$p.pid")" 2>/dev/null
    rm -f "$D/pids/$p.pid" "$D/pids/$p.exe"
  fi
done
kubectl delete queue kiln-dra kiln-dra-cap --wait=false >/dev/null 2>&1
kubectl delete deviceclass "$CLASS" --wait=false >/dev/null 2>&1
kubectl delete resourceslices -l '!nothing' --wait=false >/dev/null 2>&1
kubectl delete nodes -l 'grp in (dfour,dshort,dspare,dback,dcap)' --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
