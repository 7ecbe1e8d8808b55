#!/usr/bin/env bash
# Preemption and reclaim end to end: kiln-scheduler with a Volcano-format configuration that
# lists preempt and reclaim, against the real control plane with kwok nodes.
# Every test makes its own small nodes (labelled grp=<test>, tainted kiln-preempt=<test> so
# no other pod lands there) and selects them, so the full-node scenarios disturb nobody.
# The queue tests use an extended resource only their nodes have: proportion's fair shares
# are then shares of those nodes alone.
# A `kubectl get -w` per test records every pod version, so the DisruptionTarget condition an
# evicted pod carries just before its deletion can be checked afterwards.
# shellcheck shell=bash
SUITE=preempt
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
D=$KILN_CLUSTER_DIR
CONF=$D/preempt-scheduler.conf
LOG=$D/logs/kiln-scheduler-preempt.log
mkdir -p "$D/logs" "$D/pids"

# write_conf [shuffle|pdb]: the suite's configuration; with shuffle, shuffle runs too, with
# the rescheduling plugin every second (lowNodeUtilization: low under 20%, high over 90%),
# before preempt (which ends by evicting the same plugin's victims, as "evict"); with pdb,
# the pdb plugin votes on victims in the first tier.
write_conf() {
  local shuffle="" pdb=""
  [ "${1:-}" = shuffle ] && shuffle=1
  [ "${1:-}" = pdb ] && pdb=1
  local args=(--actions "enqueue, allocate, ${shuffle:+shuffle, }preempt, reclaim, backfill")
  [ -z "$pdb" ] || args+=(--first "  - name: pdb")
  [ -z "$shuffle" ] || args+=("  - name: rescheduling
    arguments:
      interval: 1s
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {cpu: 20, memory: 20}
          targetThresholds: {cpu: 90, memory: 90}")
  sched_conf "$CONF" "${args[@]}"
}
write_conf

# nodes GRP COUNT ARGS...: kwok nodes only this test's pods tolerate.
nodes() {
  local grp=$1 count=$2
  shift 2
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count "$count" --prefix "$grp-" \
    --label "grp=$grp" --taint "kiln-preempt=$grp:NoSchedule" "$@" >/dev/null \
    || fail "cannot create nodes $grp-*"
  kubectl taint nodes -l "grp=$grp" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

# placement GRP: the spec lines that put a pod on GRP's nodes.
placement() {
  printf '  nodeSelector: {grp: %s}\n  tolerations: [{key: kiln-preempt, value: %s, effect: NoSchedule}]\n' "$1" "$1"
}

# podgroup NS NAME MIN QUEUE [PRIORITYCLASS]
podgroup() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create PodGroup $2"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2, namespace: $1}
spec: {minMember: $3, queue: $4${5:+, priorityClassName: $5}}
EOF
}

# pods NS GROUP COUNT REQUESTS GRP [PRIORITYCLASS] [ANNOTATIONS]: GROUP-0..COUNT-1, labelled
# app=GROUP.
pods() {
  local ns=$1 group=$2 count=$3 req=$4 grp=$5 pc=${6:-} ann=${7:-} i
  for ((i = 0; i < count; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $group-$i
  namespace: $ns
  labels: {app: $group}
  annotations: {scheduling.k8s.io/group-name: $group${ann:+, $ann}}
spec:
  schedulerName: volcano
${pc:+  priorityClassName: $pc}
  containers: [{name: c, image: fake, resources: {requests: $req, limits: $req}}]
$(placement "$grp")
EOF
  done | kubectl apply -f - >/dev/null || fail "cannot create pods $group-*"
}

queue() { # NAME WEIGHT [RECLAIMABLE]
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create queue $1"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $1}
spec: {weight: $2, reclaimable: ${3:-true}}
EOF
}

bound() { # NS PREFIX: pods of the namespace named PREFIX-* that are bound and not deleting
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

# watch_pods NS: records every version of the namespace's pods into $D/watch-NS.json. Returns
# once the watch sees a sentinel pod that no scheduler of this suite takes (its own
# schedulerName): what changes after that is recorded.
watch_pods() {
  kubectl get pods -n "$1" -w -o json > "$D/watch-$1.json" 2>/dev/null &
  echo $! > "$D/pids/watch-$1.pid"
  echo "$(command -v kubectl)" > "$D/pids/watch-$1.exe"
  kubectl create -n "$1" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: watch-sentinel}
spec:
  schedulerName: kiln-e2e-nobody
  containers: [{name: c, image: fake}]
EOF
  wait_for 60 "the pod watch of $1" grep -q '"name": "watch-sentinel"' "$D/watch-$1.json"
}

# seen NS POD JQ: some recorded version of POD gives JQ a result.
seen() {
  jq -c --arg n "$2" "select(.metadata.name == \$n) | $3" "$D/watch-$1.json" | grep -q .
}

unwatch_pods() {
  kill "$(cat "$D/pids/watch-$1.pid")" 2>/dev/null || true
  rm -f "$D/pids/watch-$1.pid" "$D/pids/watch-$1.exe"
}

evictions() { # NS: pods the scheduler started evicting in NS, one line each time
  grep -ao "evicting $1/[^ :]*: Pod is evicted" "$LOG" | sed 's/^evicting //; s/: Pod is evicted$//' || true
}

# no_double_eviction NS: no pod of NS was evicted twice.
no_double_eviction() {
  local twice
  twice=$(evictions "$1" | sort | uniq -d)
  [ -z "$twice" ] || fail "evicted more than once: $twice"
}

# not_overcommitted GRP: the bound, live pods on each GRP node fit its allocatable cpu.
not_overcommitted() {
  local n alloc used
  for n in $(kubectl get nodes -l "grp=$1" -o name); do
    n=${n#node/}
    alloc=$(jsonpath "node/$n" '{.status.allocatable.cpu}')
    used=$(kubectl get pods -A --field-selector "spec.nodeName=$n" \
      -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{range .spec.containers[*]}{.resources.requests.cpu}{" "}{end}{"\n"}{end}' \
      | awk -F'|' '$1 == "" {split($2, c, " "); for (i in c) s += c[i]} END {print s + 0}')
    [ "$used" -le "$alloc" ] || fail "node $n: $used cpu requested on $alloc"
  done
}

ensure_controller() {
  if [ -f "$D/pids/kiln-controller.pid" ] && kill -0 "$(cat "$D/pids/kiln-controller.pid")" 2>/dev/null; then
    return 0
  fi
  "$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false >"$D/logs/kiln-controller-preempt.log" 2>&1 &
  echo $! > "$D/pids/kiln-controller.pid"
  echo "$CTRL" > "$D/pids/kiln-controller.exe"
}

# ---- suite setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh crd/jobs.batch.volcano.sh >/dev/null 2>&1
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-e2e-high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-e2e-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-e2e-high-never}
value: 1000
preemptionPolicy: Never
EOF
# The preempt tests' queue: a weight far above any other queue's, so that its fair share is
# what it asks for and only priority decides inside it.
queue kiln-preempt 1000
"$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$CONF" --v=3 --leader-elect=false \
  --enable-metrics --listen-address 127.0.0.1:0 >"$LOG" 2>&1 &
echo $! > "$D/pids/kiln-scheduler-preempt.pid"
echo "$SCHED" > "$D/pids/kiln-scheduler-preempt.exe"
METRICS_PORT=$(served_port "$LOG" metrics)
wait_sessions 1

# ---- tests ----

# The operator's file loads as written: preempt and reclaim run, nothing is skipped.
test_configuration_loaded() {
  grep -q 'loaded scheduler configuration .*actions "enqueue, allocate, preempt, reclaim, backfill"' \
    "$LOG" || fail "configuration not loaded: $(grep -i configuration "$LOG" | head -3)"
  grep -q "not implemented" "$LOG" && fail "an action was skipped"
  true
}

# A high-priority gang takes exactly the room it needs from a low-priority Volcano Job of
# the same queue, and binds; the victims get DisruptionTarget and the Evict events; the low
# Job restarts as its PodEvicted policy says.
test_high_gang_preempts_low_job() {
  local ns
  ns=$(new_namespace preempt)
  nodes pa 2 --cpu 2 --memory 8Gi
  ensure_controller
  watch_pods "$ns"
  kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: low}
spec:
  schedulerName: volcano
  queue: kiln-preempt
  minAvailable: 1
  priorityClassName: kiln-e2e-low
  policies: [{event: PodEvicted, action: RestartJob}]
  tasks:
  - name: w
    replicas: 4
    minAvailable: 1
    template:
      spec:
        restartPolicy: Never
        priorityClassName: kiln-e2e-low
        containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}}}]
$(placement pa | sed 's/^/      /')
EOF
  wait_bound 90 "$ns" low-w 4
  podgroup "$ns" high 2 kiln-preempt kiln-e2e-high
  pods "$ns" high 2 '{cpu: "1"}' pa kiln-e2e-high
  wait_bound 90 "$ns" high 2
  unwatch_pods "$ns"
  # Exactly two victims, each once, each from the low job.
  local victims
  victims=$(evictions "$ns" | sort -u)
  expect_eq 2 "$(grep -c . <<<"$victims")" "victims: $victims"
  no_double_eviction "$ns"
  grep -qv "^$ns/low-w-" <<<"$victims" && fail "a victim outside the low job: $victims"
  local v
  for v in $victims; do
    v=${v#*/}
    seen "$ns" "$v" '.status.conditions[]? | select(.type == "DisruptionTarget" and
      .status == "True" and .reason == "PreemptionByScheduler")' \
      || fail "$v never had DisruptionTarget=True (PreemptionByScheduler)"
    seen "$ns" "$v" '.status.conditions[]? | select(.type == "Ready" and .status == "False" and
      .reason == "Evict")' || fail "$v never had Ready=False (Evict)"
    wait_event 60 "$ns" "^Pod/$v Warning Evict: Pod is evicted, because of preempt$"
  done
  wait_event 60 "$ns" "^PodGroup/low-[^ ]* Normal Evict: preempt$"
  # The preemptors were nominated to the freed nodes before they bound.
  seen "$ns" high-0 '.status.nominatedNodeName | select(. != null and . != "")' \
    || fail "high-0 was never nominated"
  # The low job restarts (RestartJob) and runs again on what is left.
  wait_event 60 "$ns" "^Job/low Normal ExecuteAction: Start to execute action RestartJob"
  wait_jsonpath 90 vcjob/low '{.status.state.phase}' Running "$ns"
  not_overcommitted pa
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# A gang that needs all of its pods is never cut: not even one of them goes.
test_gang_never_cut_below_min_available() {
  local ns
  ns=$(new_namespace pgang)
  nodes pb 2 --cpu 2 --memory 8Gi
  podgroup "$ns" low 4 kiln-preempt kiln-e2e-low
  pods "$ns" low 4 '{cpu: "1"}' pb kiln-e2e-low
  wait_bound 60 "$ns" low 4
  podgroup "$ns" high 1 kiln-preempt kiln-e2e-high
  pods "$ns" high 1 '{cpu: "1"}' pb kiln-e2e-high
  wait_sessions 4
  expect_eq "" "$(evictions "$ns")" "evictions"
  expect_eq 4 "$(bound "$ns" low)" "low pods still bound"
  expect_eq 0 "$(bound "$ns" high)" "high pod bound"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# A preemptor whose PriorityClass says preemptionPolicy: Never waits; pods marked
# volcano.sh/preemptable: "false" are never victims.
test_preemption_policy_never_and_preemptable_false() {
  local ns
  ns=$(new_namespace pnever)
  nodes pc 1 --cpu 2 --memory 8Gi
  podgroup "$ns" low 1 kiln-preempt kiln-e2e-low
  pods "$ns" low 2 '{cpu: "1"}' pc kiln-e2e-low
  wait_bound 60 "$ns" low 2
  podgroup "$ns" never 1 kiln-preempt kiln-e2e-high-never
  pods "$ns" never 1 '{cpu: "1"}' pc kiln-e2e-high-never
  expect_eq Never "$(jsonpath pod/never-0 '{.spec.preemptionPolicy}' "$ns")" "preemptionPolicy"
  wait_sessions 4
  expect_eq "" "$(evictions "$ns")" "evictions for a Never preemptor"
  kubectl delete pod -n "$ns" never-0 --wait=false >/dev/null

  local ns2
  ns2=$(new_namespace pfalse)
  nodes pd 1 --cpu 2 --memory 8Gi
  podgroup "$ns2" low 1 kiln-preempt kiln-e2e-low
  pods "$ns2" low 2 '{cpu: "1"}' pd kiln-e2e-low '"volcano.sh/preemptable": "false"'
  wait_bound 60 "$ns2" low 2
  podgroup "$ns2" high 1 kiln-preempt kiln-e2e-high
  pods "$ns2" high 1 '{cpu: "1"}' pd kiln-e2e-high
  wait_sessions 4
  expect_eq "" "$(evictions "$ns2")" "evictions of preemptable=false pods"
  expect_eq 2 "$(bound "$ns2" low)" "low pods still bound"
  kubectl delete ns "$ns" "$ns2" --wait=false >/dev/null
}

# Two queues of equal weight on nodes only they use: the job of the empty queue reclaims
# half of the slots from the full one, no more, node by node; a `reclaimable: false` queue
# loses nothing.
test_reclaim_half_between_equal_queues() {
  local ns
  ns=$(new_namespace reclaim)
  nodes pe 2 --cpu 8 --memory 8Gi --extended example.com/pe-slot=2
  queue kiln-reclaim-a 1
  queue kiln-reclaim-b 1
  podgroup "$ns" a 1 kiln-reclaim-a
  pods "$ns" a 4 '{example.com/pe-slot: "1"}' pe
  wait_bound 60 "$ns" a 4
  # b's pods are in the scheduler's cache before its PodGroup: proportion gives b a deserved
  # share from the pods it sees at the first reclaim, and with minMember 1 b stops starving
  # once one pod runs (Volcano's JobStarving), so a PodGroup seen before its last pods would
  # leave b one pod short for good (seen in CI under load).
  pods "$ns" b 4 '{example.com/pe-slot: "1"}' pe
  wait_sessions 2
  podgroup "$ns" b 1 kiln-reclaim-b
  wait_bound 90 "$ns" b 2
  wait_sessions 4
  expect_eq 2 "$(bound "$ns" b)" "b's pods bound (its half)"
  expect_eq 2 "$(bound "$ns" a)" "a's pods left (its half)"
  expect_eq 2 "$(evictions "$ns" | sort -u | grep -c "^$ns/a-")" "pods reclaimed from a"
  no_double_eviction "$ns"
  wait_event 60 "$ns" "Warning Evict: Pod is evicted, because of reclaim$"
  kubectl delete ns "$ns" --wait=false >/dev/null
  kubectl delete queue kiln-reclaim-a kiln-reclaim-b --wait=false >/dev/null 2>&1 || true
}

test_reclaim_never_from_unreclaimable_queue() {
  local ns
  ns=$(new_namespace noreclaim)
  nodes pf 1 --cpu 8 --memory 8Gi --extended example.com/pf-slot=2
  queue kiln-keep 1 false
  queue kiln-want 1
  podgroup "$ns" keep 1 kiln-keep
  pods "$ns" keep 2 '{example.com/pf-slot: "1"}' pf
  wait_bound 60 "$ns" keep 2
  podgroup "$ns" want 1 kiln-want
  pods "$ns" want 2 '{example.com/pf-slot: "1"}' pf
  wait_sessions 4
  expect_eq "" "$(evictions "$ns")" "evictions from a reclaimable:false queue"
  expect_eq 2 "$(bound "$ns" keep)" "keep's pods"
  kubectl delete ns "$ns" --wait=false >/dev/null
  kubectl delete queue kiln-keep kiln-want --wait=false >/dev/null 2>&1 || true
}

# shuffle with rescheduling's lowNodeUtilization: a node at 100% of its cpu gives up its
# lowest pod (down to 75%, under the 90% target) for the emptier nodes, once.
test_shuffle_evicts_from_overloaded_node() {
  local ns from
  ns=$(new_namespace shuffle)
  nodes pg 1 --cpu 4 --memory 8Gi
  podgroup "$ns" full 1 kiln-preempt
  pods "$ns" full 4 '{cpu: "1"}' pg
  wait_bound 60 "$ns" full 4
  from=$(($(wc -l < "$LOG") + 1))
  write_conf shuffle
  wait_for 60 "the shuffle configuration" bash -c \
    "tail -n +$from '$LOG' | grep -aq 'loaded scheduler configuration .*allocate, shuffle, preempt'"
  wait_event 60 "$ns" "Warning Evict: Pod is evicted, because of shuffle$"
  wait_sessions 4
  write_conf
  expect_eq 1 "$(evictions "$ns" | sort -u | grep -c .)" "pods shuffled off the full node"
  no_double_eviction "$ns"
  expect_eq 3 "$(bound "$ns" full)" "pods left on the node"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# A PodDisruptionBudget is never broken by preempt: four low pods under a budget that allows
# one disruption; a gang that needs two victims takes none, a single preemptor takes one.
# The test cluster runs no disruption controller, so the test writes the status that
# controller would (minAvailable 3 of 4 healthy: one disruption allowed).
test_pdb_not_violated_by_preempt() {
  local ns from
  ns=$(new_namespace ppdb)
  nodes ph 2 --cpu 2 --memory 8Gi
  podgroup "$ns" low 1 kiln-preempt kiln-e2e-low
  pods "$ns" low 4 '{cpu: "1"}' ph kiln-e2e-low
  wait_bound 60 "$ns" low 4
  kubectl apply -n "$ns" -f - >/dev/null <<'EOF'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: low}
spec: {minAvailable: 3, selector: {matchLabels: {app: low}}}
EOF
  kubectl patch pdb low -n "$ns" --subresource=status --type=merge -p \
    '{"status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 4, "desiredHealthy": 3, "expectedPods": 4}}' \
    >/dev/null
  from=$(($(wc -l < "$LOG") + 1))
  write_conf pdb
  wait_for 60 "the pdb configuration" bash -c \
    "tail -n +$from '$LOG' | grep -aq 'loaded scheduler configuration .*2 tiers, 8 plugins'"
  podgroup "$ns" pair 2 kiln-preempt kiln-e2e-high
  pods "$ns" pair 2 '{cpu: "1"}' ph kiln-e2e-high
  wait_sessions 4
  expect_eq "" "$(evictions "$ns")" "evictions for a gang that needs two"
  kubectl delete pod -n "$ns" pair-0 pair-1 --wait=false >/dev/null
  podgroup "$ns" one 1 kiln-preempt kiln-e2e-high
  pods "$ns" one 1 '{cpu: "1"}' ph kiln-e2e-high
  wait_bound 60 "$ns" one 1
  wait_sessions 4
  write_conf
  expect_eq 1 "$(evictions "$ns" | sort -u | grep -c .)" "victims under a budget allowing one"
  expect_eq 3 "$(bound "$ns" low)" "low pods left (the budget's minAvailable)"
  no_double_eviction "$ns"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# After every test: the scheduler stops cleanly and nothing was evicted twice in the suite.
finally_no_double_eviction_and_clean_stop() {
  local twice
  twice=$(grep -ao "evicting [^ :]*: Pod is evicted" "$LOG" | sort | uniq -d)
  [ -z "$twice" ] || fail "evicted more than once: $twice"
  local pid
  pid=$(cat "$D/pids/kiln-scheduler-preempt.pid")
  kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "still running 5s after SIGTERM"
  if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$LOG"; then
    fail "the sanitizer reported a problem (above)"
  fi
  rm -f "$D/pids/kiln-scheduler-preempt.pid"
}

e2e_main "$@"
rc=$?
if [ -f "$D/pids/kiln-controller.pid" ]; then
  kill "$(cat "$D/pids/kiln-controller.pid")" 2>/dev/null
  rm -f "$D/pids/kiln-controller.pid"
fi
kubectl delete priorityclass kiln-e2e-high kiln-e2e-low kiln-e2e-high-never --wait=false >/dev/null 2>&1
kubectl delete queue kiln-preempt --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
