#!/usr/bin/env bash
# Volumes (issue #29 items 1, 2, 4) on the real control plane: static local PersistentVolumes
# with node affinity and a kubernetes.io/no-provisioner WaitForFirstConsumer StorageClass, as
# a cluster of local NVMe disks has them. kiln-scheduler (Volcano's default predicates:
# VolumeBinding, VolumeZone, NodeVolumeLimits on) matches each gang's claims per node, sets
# the chosen volume's claimRef before it binds a pod, and waits until kube-controller-manager's
# PV controller (tests/cluster/up runs it) has bound the claim. A gang whose claims cannot all
# be met binds nothing and leaves every claim unbound; a bound zonal volume keeps its pods in
# its zone.
# Each test makes its own kwok nodes (labelled grp=<test>, tainted kiln-vol=<test>), volumes
# and claims, so other suites are not disturbed.
# shellcheck shell=bash
SUITE=volumes
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
D=$KILN_CLUSTER_DIR
LOG=$D/logs/kiln-scheduler-volumes.log
CONF=$D/volumes-scheduler.conf
LOCAL=kiln-local
ZONAL=kiln-zonal
mkdir -p "$D/logs" "$D/pids"
sched_conf "$CONF" --predicates "volumebinding.bindTimeoutSeconds: 60"

# nodes GRP COUNT [ARGS...]: kwok nodes GRP-i, tainted kiln-vol=GRP.
nodes() {
  local grp=$1 count=$2
  shift 2
  group_nodes "$grp" "$count" --cpu 32 --memory 64Gi --taint "kiln-vol=$grp:NoSchedule" "$@"
}

# local_pv NAME NODE SIZE: a local volume on NODE of class kiln-local.
local_pv() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create PersistentVolume $1"
apiVersion: v1
kind: PersistentVolume
metadata: {name: $1}
spec:
  capacity: {storage: $3}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $LOCAL
  local: {path: /mnt/disks/$1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$2]}]
EOF
}

# claim NS NAME CLASS SIZE
claim() {
  kubectl apply -n "$1" -f - >/dev/null <<EOF || fail "cannot create claim $2"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $2}
spec:
  storageClassName: $3
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: $4}}
EOF
}

# gang NS N SELECTOR: PodGroup g of N pods p-i, each mounting claim data-i, on the nodes
# SELECTOR (a label k=v) selects (they tolerate the suite's kiln-vol taints).
gang() {
  local ns=$1 n=$2 sel=$3 i
  {
    printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n'
    printf 'spec: {minMember: %s, queue: kiln-vol}\n' "$n"
    for ((i = 0; i < n; i++)); do
      cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: p-$i
  annotations: {scheduling.k8s.io/group-name: g}
spec:
  schedulerName: volcano
  nodeSelector: {${sel%%=*}: "${sel#*=}"}
  tolerations: [{key: kiln-vol, operator: Exists, effect: NoSchedule}]
  containers:
  - name: c
    image: fake
    resources: {requests: {cpu: "1"}}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data-$i}
EOF
    done
  } | kubectl apply -n "$ns" -f - >/dev/null || fail "cannot create gang in $ns"
}

bound() { # NS: pods bound
  kubectl get pods -n "$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}

# claims NS: "claim phase volume" per claim
claims() {
  kubectl get pvc -n "$1" -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.spec.volumeName}{"\n"}{end}'
}

pv_node() { # PV: the node of its affinity
  kubectl get pv "$1" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}'
}

# ---- suite setup ----
apply_crds || { echo "FAIL $SUITE/setup: the CRDs are not served"; exit 1; }
kubectl apply -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: kiln-vol}
spec: {weight: 1, reclaimable: false}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $LOCAL}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $ZONAL}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
EOF
kiln_bg scheduler-volumes "$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$CONF" --v=4 \
  --leader-elect=false

# ---- tests ----

# A gang of 4 pods, each with its own WaitForFirstConsumer claim, and one local volume on each
# of 4 nodes (a fifth too small): every pod lands on the node of the volume its claim ends
# bound to, every claim Bound, no volume twice.
test_gang_lands_on_its_volumes() {
  local ns i
  ns=$(new_namespace vol)
  nodes vl 4
  for i in 0 1 2 3; do local_pv "vl-pv-$i" "vl-$i" 10Gi; done
  local_pv vl-pv-small vl-0 1Gi
  for i in 0 1 2 3; do claim "$ns" "data-$i" "$LOCAL" 5Gi; done
  gang "$ns" 4 grp=vl
  wait_for 60 "4 pods bound" bash -c "[ \"\$(kubectl get pods -n $ns -o jsonpath='{.items[*].spec.nodeName}' | wc -w)\" = 4 ]"
  wait_for 30 "4 claims Bound" bash -c "[ \"\$(kubectl get pvc -n $ns -o jsonpath='{.items[*].status.phase}')\" = 'Bound Bound Bound Bound' ]"
  local name phase vol node seen=""
  while read -r name phase vol; do
    node=$(kubectl get pod -n "$ns" "p-${name#data-}" -o jsonpath='{.spec.nodeName}')
    expect_eq "$(pv_node "$vol")" "$node" "node of pod p-${name#data-} (claim $name on $vol)"
    [[ " $seen " != *" $vol "* ]] || fail "volume $vol given twice"
    seen="$seen $vol"
  done < <(claims "$ns")
  [[ $seen != *vl-pv-small* ]] || fail "the 1Gi volume was bound to a 5Gi claim"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A gang of 4 whose nodes have only 3 volumes: nothing is bound, no claim is bound, no volume
# gets a claimRef, and the PodGroup names the claim left without a volume.
test_gang_short_of_volumes_binds_nothing() {
  local ns i
  ns=$(new_namespace vol)
  nodes vs 2
  local_pv vs-pv-0 vs-0 10Gi
  local_pv vs-pv-1 vs-0 10Gi
  local_pv vs-pv-2 vs-1 10Gi
  for i in 0 1 2 3; do claim "$ns" "data-$i" "$LOCAL" 5Gi; done
  gang "$ns" 4 grp=vs
  local msg deadline=$((SECONDS + 60))
  until msg=$(pg_message "$ns" g) && [[ $msg == *"volumes: no node can take pod"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "no volume reason on the PodGroup: '$msg'"
    sleep 0.5
  done
  expect_match "with its claim\(s\) data-[0-3] after 3 pod\(s\) of the gang were placed: node\(s\) didn't find available persistent volumes to bind" "$msg" "the why-pending line"
  # The session that wrote it decided the whole gang: none of it was bound.
  expect_eq 0 "$(bound "$ns")" "pods bound"
  expect_eq "data-0 Pending |data-1 Pending |data-2 Pending |data-3 Pending " \
    "$(claims "$ns" | sort | paste -sd'|')" "claims"
  for i in 0 1 2; do
    expect_eq "" "$(kubectl get pv "vs-pv-$i" -o jsonpath='{.spec.claimRef.name}')" "claimRef of vs-pv-$i"
  done
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# Claims bound (Immediate class) to volumes of zone zb keep their pods in zb: VolumeZone
# against the nodes' topology.kubernetes.io/zone.
test_zonal_volumes_keep_pods_in_their_zone() {
  local ns i
  ns=$(new_namespace vol)
  nodes vza 2 --label topology.kubernetes.io/zone=za --label kiln-vol-zone=yes
  nodes vzb 1 --label topology.kubernetes.io/zone=zb --label kiln-vol-zone=yes
  for i in 0 1; do
    kubectl apply -f - >/dev/null <<EOF || fail "cannot create PersistentVolume vz-pv-$i"
apiVersion: v1
kind: PersistentVolume
metadata:
  name: vz-pv-$i
  labels: {topology.kubernetes.io/zone: zb}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $ZONAL
  hostPath: {path: /tmp/vz-pv-$i}
EOF
    claim "$ns" "data-$i" "$ZONAL" 5Gi
  done
  wait_for 30 "claims bound by the PV controller" bash -c "[ \"\$(kubectl get pvc -n $ns -o jsonpath='{.items[*].status.phase}')\" = 'Bound Bound' ]"
  gang "$ns" 2 kiln-vol-zone=yes
  wait_for 60 "2 pods bound" bash -c "[ \"\$(kubectl get pods -n $ns -o jsonpath='{.items[*].spec.nodeName}' | wc -w)\" = 2 ]"
  expect_eq "vzb-0 vzb-0" "$(kubectl get pods -n "$ns" -o jsonpath='{.items[*].spec.nodeName}')" "nodes"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
rc=$?
if [ -f "$D/pids/kiln-scheduler-volumes.pid" ]; then
  kill "$(cat "$D/pids/kiln-scheduler-volumes.pid")" 2>/dev/null
  rm -f "$D/pids/kiln-scheduler-volumes.pid" "$D/pids/kiln-scheduler-volumes.exe"
fi
kubectl delete queue kiln-vol --wait=false >/dev/null 2>&1
kubectl delete pv vl-pv-0 vl-pv-1 vl-pv-2 vl-pv-3 vl-pv-small vs-pv-0 vs-pv-1 vs-pv-2 vz-pv-0 vz-pv-1 \
  --wait=false >/dev/null 2>&1
kubectl delete storageclass "$LOCAL" "$ZONAL" --wait=false >/dev/null 2>&1
kubectl delete nodes -l 'grp in (vl,vs,vza,vzb)' --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
