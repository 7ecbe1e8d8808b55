#!/usr/bin/env bash
# Network-topology-aware gangs (issue 30) against the real control plane: 32 kwok nodes of one
# pod each, labelled as 4 leaves (tier 1, 8 nodes) under 2 spines (tier 2); kiln-controller's
# hyperNode-controller turns the labels into HyperNodes (Volcano's discovery configuration), and
# kiln-scheduler, configured with the network-topology-aware plugin, keeps each gang inside
# one HyperNode: a hard tier-1 gang of 8 lands under one leaf, one of 12 waits and its
# PodGroup says which tier and which domain hold it back, a soft gang spreads only when no leaf
# holds it, and a Job of 2 partitions of 4 puts each partition under its own leaf. The nodes
# are tainted kiln-topo, so that no other suite's pods land there.
# shellcheck shell=bash
SUITE=topology
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
D=$KILN_CLUSTER_DIR
SLOG=$D/logs/kiln-scheduler-topo.log
CLOG=$D/logs/kiln-controller-topo.log
CM_NS=topo-system
LEAF=topo.example.com/leaf
SPINE=topo.example.com/spine
mkdir -p "$D/logs" "$D/pids"

start() { # NAME EXE ARGS...: a process of this suite, with the controller's namespace and release
  KUBE_POD_NAMESPACE=$CM_NS HELM_RELEASE_NAME=volcano kiln_bg "$@"
}

# ---- suite setup ----
apply_crds || fail "cannot install the CRDs"
kubectl get ns "$CM_NS" >/dev/null 2>&1 || kubectl create ns "$CM_NS" >/dev/null
queue kiln-topo 1000
"$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 32 --prefix topo- --cpu 1 --memory 4Gi \
  --label grp=topo --taint kiln-topo=tp:NoSchedule >/dev/null || fail "cannot create nodes topo-*"
kubectl taint nodes -l grp=topo node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
for i in $(seq 0 31); do
  kubectl label node "topo-$i" "$LEAF=leaf$((i / 8))" "$SPINE=spine$((i / 16))" --overwrite \
    >/dev/null || fail "cannot label topo-$i"
done
kubectl apply -f - >/dev/null <<EOF || fail "cannot apply the discovery configuration"
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-controller-configmap, namespace: $CM_NS}
data:
  volcano-controller.conf: |
    networkTopologyDiscovery:
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            topo:
              - nodeLabel: "$SPINE"
              - nodeLabel: "$LEAF"
              - nodeLabel: "kubernetes.io/hostname"
EOF
sched_conf "$D/topo-scheduler.conf" "  - name: network-topology-aware
    arguments:
      weight: 10"
start scheduler-topo "$SCHED" --kubeconfig "$KUBECONFIG" --v=3 --leader-elect=false \
  --scheduler-conf="$D/topo-scheduler.conf" --healthz-address=127.0.0.1:0 \
  --listen-address=127.0.0.1:0
start controller-topo "$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --healthz-address=127.0.0.1:0 --listen-address=127.0.0.1:0

# ---- helpers ----

# vcjob NS NAME REPLICAS TOPOLOGY [TASK-EXTRA]: a Job of REPLICAS 1-cpu pods that all must run,
# with the networkTopology body TOPOLOGY (a flow mapping) and more task fields.
vcjob() {
  kubectl apply -n "$1" -f - >/dev/null <<EOF || fail "cannot create Job $2"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $2}
spec:
  schedulerName: volcano
  queue: kiln-topo
  minAvailable: $3
  networkTopology: $4
  tasks:
  - name: w
    replicas: $3
    ${5:-}
    template:
      spec:
        nodeSelector: {grp: topo}
        tolerations: [{key: kiln-topo, value: tp, effect: NoSchedule}]
        containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}, limits: {cpu: "1"}}}]
EOF
}

bound() { # NS JOB: how many of the Job's pods have a node
  kubectl get pods -n "$1" -l "volcano.sh/job-name=$2" -o json |
    jq '[.items[] | select(.spec.nodeName != null)] | length'
}

all_bound() { # NS JOB N
  [ "$(bound "$1" "$2")" = "$3" ]
}

unschedulable() { # NS: the Unschedulable message of the namespace's PodGroup
  kubectl get pg -n "$1" -o jsonpath='{.items[0].status.conditions[?(@.type=="Unschedulable")].message}'
}

says() { # NS REGEX
  [[ $(unschedulable "$1") =~ $2 ]]
}

# leaves NS JOB [PARTITION]: the distinct leaves (label values) of the nodes the Job's pods
# (of one partition) run on, space separated.
leaves() {
  local sel="volcano.sh/job-name=$2"
  [ -z "${3:-}" ] || sel="$sel,volcano.sh/partition-id=$3"
  local n
  for n in $(kubectl get pods -n "$1" -l "$sel" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'); do
    kubectl get node "$n" -o jsonpath="{.metadata.labels['topo\.example\.com/leaf']}{'\n'}"
  done | sort -u | tr '\n' ' '
}

hn_settled() { # 6 label-made HyperNodes of this suite, each with its nodeCount
  kubectl get hn -l volcano.sh/network-topology-source=label -o json |
    jq -e '[.items[] | select(.metadata.labels["'"$LEAF"'"] != null or .metadata.labels["'"$SPINE"'"] != null)] |
      length == 6 and ([.[] | (.status.nodeCount // 0) == (.spec.members | length)] | all)' >/dev/null
}

before_each() {
  wait_for 60 "the HyperNodes of 4 leaves and 2 spines" hn_settled
}

# ---- tests ----

test_discovery_makes_the_tree() {
  local t
  t=$(kubectl get hn -l volcano.sh/network-topology-source=label -o json |
    jq -r '.items[] | select(.metadata.labels["'"$LEAF"'"] != null or .metadata.labels["'"$SPINE"'"] != null) |
      "\(.spec.tier) \(.status.nodeCount)"' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  expect_eq " 4 1 8; 2 2 2;" "$t" "4 leaves of 8 nodes and 2 spines of 2 leaves"
}

test_hard_tier1_gang_of_8_one_leaf() {
  local ns
  ns=$(new_namespace topo)
  vcjob "$ns" g8 8 '{mode: hard, highestTierAllowed: 1}'
  wait_for 60 "8 pods bound" all_bound "$ns" g8 8
  local l
  l=$(leaves "$ns" g8)
  expect_match '^leaf[0-3] $' "$l" "the leaves of g8"
  echo "REPORT hard tier-1 gang of 8 under $l"
  kubectl delete ns "$ns" --wait=true --timeout=60s >/dev/null
}

test_hard_tier1_gang_of_12_waits_and_says_why() {
  local ns
  ns=$(new_namespace topo)
  vcjob "$ns" g12 12 '{mode: hard, highestTierAllowed: 1}'
  local want='12/12 tasks in gang unschedulable: network topology: no HyperNode of tier <= 1 holds the 12 pods the gang needs \(highestTierAllowed 1, mode hard\); the largest free domain, hypernode-topo-tier1-[a-z0-9]+ \(tier 1\), has room for 8'
  local deadline=$((SECONDS + 60)) msg
  until says "$ns" "$want" || [ $SECONDS -ge $deadline ]; do sleep 0.5; done
  msg=$(unschedulable "$ns")
  expect_match "$want" "$msg" "the Unschedulable message"
  expect_eq 0 "$(bound "$ns" g12)" "pods of g12 bound"
  echo "REPORT $msg"
  kubectl delete ns "$ns" --wait=true --timeout=60s >/dev/null
}

test_soft_spreads_only_when_no_leaf_fits() {
  local ns
  ns=$(new_namespace topo)
  vcjob "$ns" s8 8 '{mode: soft, highestTierAllowed: 1}'
  wait_for 60 "s8 bound" all_bound "$ns" s8 8
  expect_match '^leaf[0-3] $' "$(leaves "$ns" s8)" "a soft gang that a leaf holds"
  # 24 nodes are left: no leaf (8) nor spine (16) holds 20, so it spreads.
  vcjob "$ns" s20 20 '{mode: soft, highestTierAllowed: 1}'
  wait_for 60 "s20 bound" all_bound "$ns" s20 20
  local l
  l=$(leaves "$ns" s20)
  expect_match '^(leaf[0-3] ){3}$' "$l" "a soft gang that no leaf holds"
  echo "REPORT soft 8 under $(leaves "$ns" s8); soft 20 over $l"
  kubectl delete ns "$ns" --wait=true --timeout=60s >/dev/null
}

test_subgroups_each_under_one_leaf() {
  local ns
  ns=$(new_namespace topo)
  vcjob "$ns" sg 8 '{mode: hard, highestTierAllowed: 2}' \
    'partitionPolicy: {totalPartitions: 2, partitionSize: 4, networkTopology: {mode: hard, highestTierAllowed: 1}}'
  wait_for 60 "sg bound" all_bound "$ns" sg 8
  local p l
  for p in 0 1; do
    l=$(leaves "$ns" sg "$p")
    expect_match '^leaf[0-3] $' "$l" "the leaf of partition $p"
    echo "REPORT partition $p under $l"
  done
  local spines
  spines=$(for p in $(kubectl get pods -n "$ns" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'); do
    kubectl get node "$p" -o jsonpath="{.metadata.labels['topo\.example\.com/spine']}{'\n'}"
  done | sort -u | wc -l)
  expect_eq 1 "$spines" "spines of the job (hard tier 2)"
  kubectl delete ns "$ns" --wait=true --timeout=60s >/dev/null
}

finally_cleanup() {
  local f
  for f in scheduler-topo controller-topo; do
    [ -e "$D/pids/kiln-$f.pid" ] && kill -TERM "$(cat "$D/pids/kiln-$f.pid")" 2>/dev/null
  done
  sleep 1
  kubectl delete hn -l volcano.sh/network-topology-source=label >/dev/null 2>&1
  kubectl delete node -l grp=topo --wait=false >/dev/null 2>&1
  kubectl delete ns "$CM_NS" --wait=false >/dev/null 2>&1 || true
}

e2e_main "$@"
