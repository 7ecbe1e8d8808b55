#!/usr/bin/env bash
# The deviceshare plugin on the real control plane: kwok nodes annotated as Volcano's vGPU
# device plugin registers them (volcano.sh/node-vgpu-register with each GPU's UUID, split
# count, memory, type, health and mode; volcano.sh/node-vgpu-handshake) and with the
# volcano.sh/vgpu-* resources in their status, or with the volcano.sh/gpu-number and
# volcano.sh/gpu-memory capacity GPU sharing reads. vGPU pods of 8000 MiB share one 24000 MiB
# GPU three at a time and the fourth takes the other, each told its GPU in the annotations
# the device plugin reads; volcano.sh/gpu-number pods never share a card; a gang whose pods
# fit the node's resources but not its GPUs binds none. Each test makes its own nodes
# (labelled grp=<test>, tainted kiln-ds=<test>) and runs its own kiln-scheduler.
# shellcheck shell=bash
SUITE=deviceshare
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
D=$KILN_CLUSTER_DIR
LOG=$D/logs/kiln-scheduler-deviceshare.log
mkdir -p "$D/logs" "$D/pids"

conf() { # FILE ARGUMENT-LINES: a configuration with deviceshare and those arguments
  cat > "$1" <<EOF
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
$2
  - name: nodeorder
EOF
}
VGPU_CONF=$D/deviceshare-vgpu.conf
conf "$VGPU_CONF" "      deviceshare.VGPUEnable: true"
NUMBER_CONF=$D/deviceshare-number.conf
conf "$NUMBER_CONF" "      deviceshare.GPUNumberEnable: true"

start_scheduler() { # CONF: sets METRICS_PORT (wait_sessions reads it)
  local from
  from=$(log_lines "$LOG")
  "$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$1" --v=3 --leader-elect=false \
    --enable-metrics --listen-address 127.0.0.1:0 >>"$LOG" 2>&1 &
  echo $! > "$D/pids/kiln-scheduler-deviceshare.pid"
  echo "$SCHED" > "$D/pids/kiln-scheduler-deviceshare.exe"
  METRICS_PORT=$(served_port "$LOG" metrics "$from")
}

stop_scheduler() {
  [ -f "$D/pids/kiln-scheduler-deviceshare.pid" ] || return 0
  kill "$(cat "$D/pids/kiln-scheduler-deviceshare.pid")" 2>/dev/null || true
  rm -f "$D/pids/kiln-scheduler-deviceshare.pid" "$D/pids/kiln-scheduler-deviceshare.exe"
}

# A failed test ends before its finish: its scheduler (another configuration) must not stay
# and bind the next test's pods.
before_each() {
  stop_scheduler
}

nodes() { # GRP ARGS...: one node GRP-0
  local grp=$1
  shift
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 1 --prefix "$grp-" --label "grp=$grp" \
    --taint "kiln-ds=$grp:NoSchedule" "$@" >/dev/null || fail "cannot create node $grp-0"
  kubectl taint nodes -l "grp=$grp" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

# vgpu_node GRP: GRP-0 with two 24000 MiB GPUs split 10 ways, GPU-GRP-a and GPU-GRP-b,
# registered and handshaken as Volcano's vGPU device plugin does it.
vgpu_node() {
  local grp=$1 now
  nodes "$grp" --extended volcano.sh/vgpu-number=20 --extended volcano.sh/vgpu-memory=48000 \
    --extended volcano.sh/vgpu-cores=200
  now=$(date -u '+%Y.%m.%d %H:%M:%S')
  kubectl annotate node "$grp-0" --overwrite >/dev/null \
    "volcano.sh/node-vgpu-register=GPU-$grp-a,10,24000,NVIDIA-Tesla-T4,true,hami-core:GPU-$grp-b,10,24000,NVIDIA-Tesla-T4,true,hami-core:" \
    "volcano.sh/node-vgpu-handshake=Reported_$now" || fail "cannot annotate $grp-0"
}

# pods NS GRP GROUP MIN RESOURCES NAME...: PodGroup GROUP (minMember MIN) and its pods, each
# with limits RESOURCES (a flow mapping body) on the GRP node.
pods() {
  local ns=$1 grp=$2 group=$3 min=$4 res=$5 p
  shift 5
  {
    printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n'
    printf 'metadata: {name: %s, namespace: %s}\nspec: {minMember: %s, queue: default}\n' \
      "$group" "$ns" "$min"
    for p in "$@"; do
      cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $p
  namespace: $ns
  annotations: {scheduling.k8s.io/group-name: $group}
spec:
  schedulerName: volcano
  nodeSelector: {grp: $grp}
  tolerations: [{key: kiln-ds, value: $grp, effect: NoSchedule}]
  containers: [{name: c, image: fake, resources: {limits: {$res}}}]
EOF
    done
  } | kubectl apply -f - >/dev/null || fail "cannot create $group"
}

node_of() { jsonpath "pod/$2" '{.spec.nodeName}' "$1"; }
ann() { # NS POD KEY
  kubectl get pod "$2" -n "$1" -o json | jq -r --arg k "$3" '.metadata.annotations[$k] // ""'
}

wait_bound() { # SECS NS POD...
  local secs=$1 ns=$2 p deadline
  shift 2
  deadline=$((SECONDS + secs))
  for p in "$@"; do
    until [ -n "$(node_of "$ns" "$p")" ]; do
      [ $SECONDS -lt $deadline ] || fail "$p is not bound"
      sleep 0.3
    done
  done
}

finish() { # NS
  stop_scheduler
  kubectl delete namespace "$1" --wait=false >/dev/null
}

kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh >/dev/null 2>&1

# Three 8000 MiB pods fill one 24000 MiB GPU; a fourth, bound in a later session, finds
# that GPU full from the first three's annotations and takes the other one. Each pod
# carries the assignment in the annotations the device plugin reads.
test_vgpu_memory_shares_one_gpu() {
  local ns p ids a=0 b=0
  ns=$(new_namespace ds)
  vgpu_node dsv
  start_scheduler "$VGPU_CONF"
  local r='volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "8000"'
  for p in v0 v1 v2; do pods "$ns" dsv "$p" 1 "$r" "$p"; done
  wait_bound 90 "$ns" v0 v1 v2
  pods "$ns" dsv v3 1 "$r" v3
  wait_bound 90 "$ns" v3
  for p in v0 v1 v2 v3; do
    ids=$(ann "$ns" "$p" volcano.sh/vgpu-ids-new)
    case $ids in
      "GPU-dsv-a,NVIDIA,8000,0:") a=$((a + 1)) ;;
      "GPU-dsv-b,NVIDIA,8000,0:") b=$((b + 1)) ;;
      *) fail "$p: volcano.sh/vgpu-ids-new is '$ids'" ;;
    esac
    expect_eq "$ids" "$(ann "$ns" "$p" volcano.sh/devices-to-allocate)" "$p devices-to-allocate"
    expect_eq dsv-0 "$(ann "$ns" "$p" volcano.sh/vgpu-node)" "$p vgpu-node"
    expect_eq allocating "$(ann "$ns" "$p" volcano.sh/bind-phase)" "$p bind-phase"
    expect_match '^[0-9]+$' "$(ann "$ns" "$p" volcano.sh/vgpu-time)" "$p vgpu-time"
  done
  # Volcano tries the GPUs from the last registered one: b takes three, a the fourth.
  expect_eq "1 3" "$a $b" "pods on GPU a and GPU b"
  expect_eq "GPU-dsv-a,NVIDIA,8000,0:" "$(ann "$ns" v3 volcano.sh/vgpu-ids-new)" "the fourth's GPU"
  finish "$ns"
}

# Pods of volcano.sh/gpu-number 2 on a node of six cards, two of them reported unhealthy
# (volcano.sh/gpu-unhealthy-ids), take disjoint healthy cards; a third, which the node's
# resources would still take, finds no idle card and says so.
test_gpu_number_never_shares() {
  local ns i0 i1 msg="" deadline
  ns=$(new_namespace ds)
  nodes dsn --extended volcano.sh/gpu-number=6 --extended volcano.sh/gpu-memory=96000
  kubectl annotate node dsn-0 volcano.sh/gpu-unhealthy-ids=4,5 >/dev/null || fail "annotate"
  start_scheduler "$NUMBER_CONF"
  pods "$ns" dsn n0 1 'volcano.sh/gpu-number: "2"' n0
  wait_bound 90 "$ns" n0
  pods "$ns" dsn n1 1 'volcano.sh/gpu-number: "2"' n1
  wait_bound 90 "$ns" n1
  i0=$(ann "$ns" n0 volcano.sh/gpu-index)
  i1=$(ann "$ns" n1 volcano.sh/gpu-index)
  expect_eq "0,1 2,3" "$i0 $i1" "the cards of n0 and n1"
  expect_match '^[0-9]+$' "$(ann "$ns" n0 volcano.sh/predicate-time)" "n0 predicate-time"
  pods "$ns" dsn n2 1 'volcano.sh/gpu-number: "2"' n2
  deadline=$((SECONDS + 60))
  until [[ $msg == *"GpuNumber no enough gpu number on node dsn-0"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no reason for n2: '$msg'"
    sleep 0.5
    msg=$(kubectl get events -n "$ns" --field-selector involvedObject.name=n2 \
      -o jsonpath='{.items[*].message}'; jsonpath podgroup/n2 '{.status.conditions[*].message}' "$ns")
  done
  expect_eq "" "$(node_of "$ns" n2)" "n2's node"
  finish "$ns"
}

# A gang of three 16000 MiB pods on a node with 48000 MiB of vgpu-memory in two 24000 MiB
# GPUs: the resources fit, the GPUs take two; it binds none, and its devices are free again
# for a two-GPU pod that comes later.
test_gang_without_devices_binds_none() {
  local ns msg="" deadline
  ns=$(new_namespace ds)
  vgpu_node dsg
  start_scheduler "$VGPU_CONF"
  pods "$ns" dsg gang 3 'volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "16000"' g0 g1 g2
  deadline=$((SECONDS + 60))
  until [[ $msg == *"hami-vgpuDeviceSharing error"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no device reason for the gang: '$msg'"
    sleep 0.5
    msg=$(jsonpath podgroup/gang '{.status.conditions[*].message}' "$ns")
  done
  wait_sessions 3
  expect_eq "" "$(node_of "$ns" g0)$(node_of "$ns" g1)$(node_of "$ns" g2)" "gang pods' nodes"
  pods "$ns" dsg pair 1 'volcano.sh/vgpu-number: "2", volcano.sh/vgpu-memory: "24000"' pair
  wait_bound 90 "$ns" pair
  expect_eq "GPU-dsg-b,NVIDIA,24000,0:GPU-dsg-a,NVIDIA,24000,0:" \
    "$(ann "$ns" pair volcano.sh/vgpu-ids-new)" "the pair's GPUs"
  finish "$ns"
}

e2e_main "$@"
rc=$?
stop_scheduler
kubectl delete nodes -l 'grp in (dsv,dsn,dsg)' --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
