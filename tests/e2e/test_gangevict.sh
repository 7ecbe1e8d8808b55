#!/usr/bin/env bash
# Gang-aware eviction end to end: kiln-scheduler with a Volcano-format configuration listing
# gangpreempt and gangreclaim (no preempt, no reclaim), against the real control plane with
# kwok nodes. Two "leaves" of two 2-cpu nodes each (labelled leaf=<test>-l0/l1) are filled by
# two low-priority gangs of four 1-cpu pods, one gang per leaf; a starving gang of four takes
# one gang whole, and nothing of the other: the room of one leaf, not a pod from each.
# Every test makes its own nodes (labelled grp=<test>, tainted kiln-gangevict=<test>) and
# selects them; the reclaim test counts an extended resource only its nodes have, so that
# proportion's fair shares are shares of those nodes alone.
# shellcheck shell=bash
SUITE=gangevict
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
D=$KILN_CLUSTER_DIR
CONF=$D/gangevict-scheduler.conf
LOG=$D/logs/kiln-scheduler-gangevict.log
mkdir -p "$D/logs" "$D/pids"

sched_conf "$CONF" --actions "enqueue, allocate, gangpreempt, gangreclaim, backfill" \
  "  - name: network-topology-aware" "configurations:
- name: gangpreempt
  arguments:
    maxDomains: 4
    allowWholeBundle: true"

# leaves GRP ARGS...: four kwok nodes GRP-0..3 only this test's pods tolerate, GRP-0 and GRP-1
# labelled leaf=GRP-l0, GRP-2 and GRP-3 leaf=GRP-l1.
leaves() {
  local grp=$1 i
  shift
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 4 --prefix "$grp-" --label "grp=$grp" \
    --taint "kiln-gangevict=$grp:NoSchedule" --cpu 2 --memory 8Gi "$@" >/dev/null \
    || fail "cannot create nodes $grp-*"
  kubectl taint nodes -l "grp=$grp" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  for i in 0 1 2 3; do
    kubectl label node "$grp-$i" "leaf=$grp-l$((i / 2))" --overwrite >/dev/null
  done
}

# gang NS NAME MIN QUEUE COUNT REQUESTS SELECTOR [PRIORITYCLASS] [SPEC]: a PodGroup (with SPEC
# added to its spec) and its COUNT pods NAME-0.., placed by the node selector SELECTOR.
gang() {
  local ns=$1 name=$2 min=$3 queue=$4 count=$5 req=$6 sel=$7 pc=${8:-} extra=${9:-} grp i
  grp=$(sed 's/.*grp: *\([^,}]*\).*/\1/' <<<"$sel")
  {
    cat <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $name, namespace: $ns}
spec: {minMember: $min, queue: $queue${pc:+, priorityClassName: $pc}${extra:+, $extra}}
EOF
    for ((i = 0; i < count; i++)); do
      cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $name-$i
  namespace: $ns
  annotations: {scheduling.k8s.io/group-name: $name}
spec:
  schedulerName: volcano
${pc:+  priorityClassName: $pc}
  containers: [{name: c, image: fake, resources: {requests: $req, limits: $req}}]
  nodeSelector: $sel
  tolerations: [{key: kiln-gangevict, value: $grp, effect: NoSchedule}]
EOF
    done
  } | kubectl apply -f - >/dev/null || fail "cannot create gang $name"
}

bound() { # NS PREFIX: pods NS/PREFIX-* bound and not deleting
  kubectl get pods -n "$1" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}' \
    | awk -v p="^$2-" '$1 ~ p && $2 != "" && $3 == ""' | wc -l
}

wait_bound() { # SECS NS PREFIX N
  local deadline=$((SECONDS + $1)) n
  while :; do
    n=$(bound "$2" "$3")
    [ "$n" = "$4" ] && return 0
    [ $SECONDS -lt $deadline ] || fail "want $4 pods $3-* bound in $2, have $n after $1s"
    sleep 0.3
  done
}

nodes_of() { # NS PREFIX: the nodes the bound pods NS/PREFIX-* are on, sorted, unique
  kubectl get pods -n "$1" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}' \
    | awk -v p="^$2-" '$1 ~ p && $2 != "" && $3 == "" {print $2}' | sort -u | tr '\n' ' '
}

evictions() { # NS: pods the scheduler started evicting in NS, one line each time
  grep -ao "evicting $1/[^ :]*: Pod is evicted" "$LOG" | sed 's/^evicting //; s/: Pod is evicted$//' || true
}

events_in() { # NS: every event of the namespace, "kind/name type reason: message"
  kubectl get events -n "$1" -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name} {.type} {.reason}: {.message}{"\n"}{end}' 2>/dev/null
}

wait_event() { # SECS NS REGEX
  local deadline=$((SECONDS + $1))
  until events_in "$2" | grep -Eq -- "$3"; do
    [ $SECONDS -lt $deadline ] || fail "no event matching /$3/ in $2 after $1s: $(events_in "$2")"
    sleep 0.3
  done
}

evicted_gangs() { # NS: "gang count" per gang with evicted pods
  evictions "$1" | sort -u | sed 's|^[^/]*/||; s/-[0-9]*$//' | sort | uniq -c | awk '{print $2, $1}'
}

ge_queue() { # NAME WEIGHT (a CRD just established may be missing from discovery a moment)
  local i
  for i in $(seq 1 50); do
    printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: %s}\nspec: {weight: %s, reclaimable: true}\n' \
      "$1" "$2" | kubectl apply -f - >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "cannot create queue $1"
}

# ---- suite setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh >/dev/null 2>&1
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-ge-high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-ge-low}
value: 10
EOF
# The preemption tests' queue: a weight far above any other, so its share is what it asks.
ge_queue kiln-gangevict 1000
kiln_bg scheduler-gangevict "$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$CONF" --v=3 \
  --leader-elect=false --enable-metrics --listen-address 127.0.0.1:0
METRICS_PORT=$(served_port "$LOG" metrics)
wait_sessions 1

# ---- tests ----

# The file loads as written: both gang actions run, none is skipped, their arguments read.
test_configuration_loaded() {
  grep -q 'loaded scheduler configuration .*actions "enqueue, allocate, gangpreempt, gangreclaim, backfill"' \
    "$LOG" || fail "configuration not loaded: $(grep -i configuration "$LOG" | head -3)"
  grep -q "is not implemented by kiln-scheduler" "$LOG" && fail "an action was skipped"
  grep -q "gangpreempt: maxDomains\|argument \"maxDomains\"" "$LOG" && fail "maxDomains named as not read"
  true
}

# gangpreempt: two low gangs fill two leaves; a high gang of four takes one gang whole (the
# later one) and binds on that gang's leaf; the other gang keeps every pod.
test_gangpreempt_frees_one_leaf() {
  local ns freed kept
  ns=$(new_namespace gpreempt)
  leaves gp
  gang "$ns" a 4 kiln-gangevict 4 '{cpu: "1"}' '{grp: gp, leaf: gp-l0}' kiln-ge-low
  wait_bound 60 "$ns" a 4
  gang "$ns" b 4 kiln-gangevict 4 '{cpu: "1"}' '{grp: gp, leaf: gp-l1}' kiln-ge-low
  wait_bound 60 "$ns" b 4
  gang "$ns" high 4 kiln-gangevict 4 '{cpu: "1"}' '{grp: gp}' kiln-ge-high
  wait_bound 60 "$ns" high 4
  local ev
  ev=$(evicted_gangs "$ns")
  expect_eq 1 "$(grep -c . <<<"$ev")" "gangs with victims: $ev"
  expect_match '^[ab] 4$' "$ev" "victims"
  freed=${ev%% *}
  kept=a
  [ "$freed" = a ] && kept=b
  expect_eq 4 "$(bound "$ns" "$kept")" "pods of the gang kept"
  expect_eq "$(nodes_of "$ns" high)" "$(kubectl get nodes -l "leaf=gp-l$([ "$freed" = a ] && echo 0 || echo 1)" \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | tr '\n' ' ')" "the high gang's nodes"
  wait_event 60 "$ns" "^Pod/$freed-0 Warning Evict: Pod is evicted, because of gangpreempt$"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# The surplus goes first and only as far as needed: gang a runs 4 pods with minMember 2; a
# high gang of 2 takes two of a's pods and nothing of b (minMember 4).
test_gangpreempt_surplus_before_whole_gang() {
  local ns
  ns=$(new_namespace gsafe)
  leaves gs
  gang "$ns" a 2 kiln-gangevict 4 '{cpu: "1"}' '{grp: gs, leaf: gs-l0}' kiln-ge-low
  gang "$ns" b 4 kiln-gangevict 4 '{cpu: "1"}' '{grp: gs, leaf: gs-l1}' kiln-ge-low
  wait_bound 60 "$ns" a 4
  wait_bound 60 "$ns" b 4
  gang "$ns" high 2 kiln-gangevict 2 '{cpu: "1"}' '{grp: gs}' kiln-ge-high
  wait_bound 60 "$ns" high 2
  expect_eq "a 2" "$(evicted_gangs "$ns")" "victims"
  expect_eq 4 "$(bound "$ns" b)" "b's pods"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# gangreclaim: queue ga's two gangs hold all four nodes' slots; queue gb (equal weight)
# reclaims its half as one whole gang of ga, not two pods of each.
test_gangreclaim_takes_one_gang_across_queues() {
  local ns
  ns=$(new_namespace greclaim)
  leaves gr --extended example.com/gr-slot=2
  ge_queue kiln-ge-a 1
  ge_queue kiln-ge-b 1
  gang "$ns" a 4 kiln-ge-a 4 '{example.com/gr-slot: "1"}' '{grp: gr, leaf: gr-l0}'
  gang "$ns" b 4 kiln-ge-a 4 '{example.com/gr-slot: "1"}' '{grp: gr, leaf: gr-l1}'
  wait_bound 60 "$ns" a 4
  wait_bound 60 "$ns" b 4
  gang "$ns" c 4 kiln-ge-b 4 '{example.com/gr-slot: "1"}' '{grp: gr}'
  wait_bound 90 "$ns" c 4
  local ev
  ev=$(evicted_gangs "$ns")
  expect_match '^[ab] 4$' "$ev" "victims"
  wait_event 60 "$ns" "Warning Evict: Pod is evicted, because of gangreclaim$"
  kubectl delete ns "$ns" --wait=false >/dev/null
  kubectl delete queue kiln-ge-a kiln-ge-b --wait=false >/dev/null 2>&1 || true
}

# hn NAME TIER TYPE MEMBER...: a HyperNode whose members are nodes or HyperNodes by name.
hn() {
  local name=$1 tier=$2 type=$3 m
  shift 3
  {
    printf 'apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: %s}\n' "$name"
    printf 'spec:\n  tier: %s\n  members:\n' "$tier"
    for m in "$@"; do
      printf '  - {type: %s, selector: {exactMatch: {name: %s}}}\n' "$type" "$m"
    done
  } | kubectl apply -f - >/dev/null || fail "cannot create HyperNode $name"
}

# A hard tier-1 gang frees one leaf: leaves ge-l0 (gt-0, gt-1) and ge-l1 (gt-2, gt-3) under
# the spine ge-s. Gangs a and b take half of each leaf, gang c (the latest, so the first
# victim) the other halves, across both leaves. Taking c whole would leave 2 cpu in each leaf;
# the high gang (4 cpu, hard, highestTierAllowed 1) instead takes what one leaf holds, c's
# pods there and a, binds in that leaf, and evicts nothing in the other.
test_gangpreempt_hard_topology_frees_one_leaf() {
  local ns ev leaf0
  ns=$(new_namespace gtopo)
  leaves gt
  hn ge-l0 1 Node gt-0 gt-1
  hn ge-l1 1 Node gt-2 gt-3
  hn ge-s 2 HyperNode ge-l0 ge-l1
  gang "$ns" a 2 kiln-gangevict 2 '{cpu: "1"}' '{grp: gt, leaf: gt-l0}' kiln-ge-low
  gang "$ns" b 2 kiln-gangevict 2 '{cpu: "1"}' '{grp: gt, leaf: gt-l1}' kiln-ge-low
  wait_bound 60 "$ns" a 2
  wait_bound 60 "$ns" b 2
  sleep 1 # c is created a second later than a and b: the latest job is the first victim
  gang "$ns" c 4 kiln-gangevict 4 '{cpu: "1"}' '{grp: gt}' kiln-ge-low
  wait_bound 60 "$ns" c 4
  gang "$ns" high 4 kiln-gangevict 4 '{cpu: "1"}' '{grp: gt}' kiln-ge-high \
    'networkTopology: {mode: hard, highestTierAllowed: 1}'
  wait_bound 60 "$ns" high 4
  leaf0="gt-0 gt-1 "
  expect_eq "$leaf0" "$(nodes_of "$ns" high)" "the high gang's nodes (one leaf)"
  ev=$(evicted_gangs "$ns")
  expect_eq "a 2
c 2" "$ev" "victims (c's and a's pods in ge-l0)"
  expect_eq 2 "$(bound "$ns" b)" "b's pods (ge-l1)"
  expect_eq 2 "$(bound "$ns" c)" "c's pods left (in ge-l1)"
  kubectl delete ns "$ns" --wait=false >/dev/null
  kubectl delete hypernode ge-l0 ge-l1 ge-s --wait=false >/dev/null 2>&1 || true
}

# After every test: nothing evicted twice; the scheduler stops cleanly, sanitizers quiet.
finally_clean_stop() {
  local twice pid
  twice=$(grep -ao "evicting [^ :]*: Pod is evicted" "$LOG" | sort | uniq -d)
  [ -z "$twice" ] || fail "evicted more than once: $twice"
  pid=$(cat "$D/pids/kiln-scheduler-gangevict.pid")
  kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "still running 5s after SIGTERM"
  if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$LOG"; then
    fail "the sanitizer reported a problem (above)"
  fi
  rm -f "$D/pids/kiln-scheduler-gangevict.pid"
}

e2e_main "$@"
rc=$?
kubectl delete priorityclass kiln-ge-high kiln-ge-low --wait=false >/dev/null 2>&1
kubectl delete queue kiln-gangevict --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
