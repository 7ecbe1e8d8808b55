#!/usr/bin/env bash
# Decisions where Kiln must decide as Volcano does (issue 21), on the real control plane with
# kiln-scheduler and kiln-controller: per-task minimums only when minAvailable covers them,
# fair interleaving of ready jobs, scheduling gates, the svc host lists on a scale-up, and
# the sla plugin. Every test makes its own kwok nodes (labelled grp=<name>) and selects
# them, so it does not see other tests' pods. The scheduler runs Volcano's default plugins
# with sla added to the first tier.
# shellcheck shell=bash
SUITE=conform
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
D=$KILN_CLUSTER_DIR
CONF=$D/conform-scheduler.conf
LOG=$D/logs/kiln-scheduler-conform.log
mkdir -p "$D/logs" "$D/pids"

cat >"$CONF" <<'EOF'
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: sla
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
EOF

# nodes PREFIX COUNT ARGS...: kwok nodes labelled grp=PREFIX (lib.sh's group_nodes).
nodes() { group_nodes "$@"; }

# podgroup NS NAME MIN [SPEC_EXTRA] [METADATA_EXTRA]: a PodGroup in the default queue.
podgroup() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create PodGroup $2"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2, namespace: $1${5:+, $5}}
spec: {minMember: $3, queue: default${4:+, $4}}
EOF
}

# pod NS NAME GROUP TASK CPU GRP [EXTRA_SPEC_YAML]: a pod of ours in PodGroup GROUP, of
# Volcano task TASK ("" for none), selecting the nodes of GRP.
pod() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create pod $2"
apiVersion: v1
kind: Pod
metadata:
  name: $2
  namespace: $1
  annotations: {scheduling.k8s.io/group-name: $3${4:+, volcano.sh/task-spec: $4}}
spec:
  schedulerName: volcano
  nodeSelector: {grp: $6}
  containers: [{name: c, image: fake, resources: {requests: {cpu: "$5"}}}]
${7:-}
EOF
}

# job NS NAME MIN_AVAILABLE REPLICAS CPU GRP [TEMPLATE_SPEC_EXTRA] [JOB_SPEC_EXTRA]
#     [CONTAINER_EXTRA]: a Volcano Job with one task "w" whose pods select the nodes of GRP.
job() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create Job $2"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $2, namespace: $1}
spec:
  minAvailable: $3
  schedulerName: volcano
  queue: ${QUEUE:-default}
${8:-}
  tasks:
  - name: w
    replicas: $4
    template:
      spec:
        restartPolicy: Never
        nodeSelector: {grp: $6}
${7:-}
        containers:
        - name: c
          image: fake
          resources: {requests: {cpu: "$5"}}
${9:-}
EOF
}

bound_count() { # NS [SELECTOR]
  kubectl get pods -n "$1" ${2:+-l "$2"} -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' \
    | grep -c . || true
}

pod_count() { # NS [SELECTOR]
  kubectl get pods -n "$1" ${2:+-l "$2"} --no-headers 2>/dev/null | grep -c . || true
}

wait_count() { # SECS WHAT WANT COMMAND...: poll until COMMAND prints WANT
  local secs=$1 what=$2 want=$3 got=""
  shift 3
  local deadline=$((SECONDS + secs))
  while :; do
    got=$("$@")
    [ "$got" = "$want" ] && return 0
    [ $SECONDS -lt $deadline ] || fail "timed out after ${secs}s waiting for $what = $want (last: $got)"
    sleep 0.3
  done
}

# session_count: the sessions the scheduler has run (its end-to-end latency histogram). awk
# reads to the end: with pipefail, a curl cut off by an early exit would fail the test.
session_count() {
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
    awk '/^volcano_e2e_scheduling_latency_milliseconds_count/ {n = $2} END {print n + 0}'
}

# sessions N: wait until the scheduler has run N more sessions.
sessions() {
  local start deadline=$((SECONDS + 60))
  start=$(session_count)
  until [ "$(session_count)" -ge $((${start:-0} + $1)) ] 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "the scheduler ran fewer than $1 sessions in 60s"
    sleep 0.2
  done
}

# still COUNT SESSIONS NS [SELECTOR]: the bound count stays COUNT over SESSIONS sessions.
still() {
  sessions "$2"
  expect_eq "$1" "$(bound_count "$3" "${4:-}")" "pods bound after $2 more sessions"
}

# ---- suite setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh crd/jobs.batch.volcano.sh >/dev/null 2>&1
kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null 2>&1 || true
kubectl create namespace volcano-system >/dev/null 2>&1 || true
"$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$CONF" --v=3 --leader-elect=false \
  --enable-metrics --listen-address 127.0.0.1:0 \
  --dump-snapshot "$D/conform-snapshot.pb" >"$LOG" 2>&1 &
echo $! >"$D/pids/kiln-scheduler-conform.pid"
echo "$SCHED" >"$D/pids/kiln-scheduler-conform.exe"
METRICS_PORT=$(served_port "$LOG" metrics)
"$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false >"$D/logs/kiln-controller-conform.log" 2>&1 &
echo $! >"$D/pids/kiln-controller-conform.pid"
echo "$CTRL" >"$D/pids/kiln-controller-conform.exe"

# ---- tests ----

# The issue's PodGroup: minMember 4, minTaskMember {a: 4, b: 4}, room for 4 pods. The task
# minimums add up to more than minMember, so Volcano skips them: 4 pods run.
test_min_member_below_task_minimums() {
  local ns i
  ns=$(new_namespace cf-mtm)
  nodes cf-mtm 1 --cpu 4
  podgroup "$ns" g 4 "minTaskMember: {a: 4, b: 4}"
  for i in 0 1 2 3; do
    pod "$ns" "a-$i" g a 1 cf-mtm
    pod "$ns" "b-$i" g b 1 cf-mtm
  done
  wait_count 60 "pods bound" 4 bound_count "$ns"
  still 4 2 "$ns"
  wait_jsonpath 30 podgroup/g '{.status.phase}' Running "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A Job with minAvailable 4 of 8 replicas that use a host port, on 4 nodes: one pod per
# node fits, so the Job runs its minimum.
test_host_port_job_runs_its_minimum() {
  local ns
  ns=$(new_namespace cf-hp)
  nodes cf-hp 4 --cpu 8
  job "$ns" hp 4 8 1 cf-hp "" "" "          ports: [{containerPort: 8080, hostPort: 8080}]"
  wait_count 90 "pods of Job hp bound" 4 bound_count "$ns"
  still 4 2 "$ns"
  expect_eq 4 "$(kubectl get pods -n "$ns" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c . || true)" \
    "distinct nodes (one host port each)"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A Job with minAvailable 1 of 2 replicas on room for one pod runs one.
test_one_of_two_runs_one() {
  local ns
  ns=$(new_namespace cf-one)
  nodes cf-one 1 --cpu 2
  job "$ns" one 1 2 2 cf-one
  wait_count 90 "pods of Job one bound" 1 bound_count "$ns"
  wait_count 30 "pods of Job one" 2 pod_count "$ns"
  still 1 2 "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# Three Jobs of 16 pods (minAvailable 2) in one queue with room for 6: each gets its gang
# and they interleave, 2/2/2. The node is added once all 48 pods exist, so that one session
# sees the three jobs together.
test_three_jobs_interleave() {
  local ns j
  ns=$(new_namespace cf-il)
  for j in j1 j2 j3; do job "$ns" "$j" 2 16 1 cf-il; done
  wait_count 120 "pods of the three Jobs" 48 pod_count "$ns"
  nodes cf-il 1 --cpu 6
  wait_count 60 "pods bound" 6 bound_count "$ns"
  still 6 2 "$ns"
  for j in j1 j2 j3; do
    expect_eq 2 "$(bound_count "$ns" "volcano.sh/job-name=$j")" "pods of $j bound"
  done
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# No refused bind of POD: the scheduler never sent one (its log names every bind it sends
# and every refusal), nor did the API server see one when the cluster keeps an audit log.
never_bound() { # NS POD...
  local ns=$1 p
  shift
  for p in "$@"; do
    if grep -E "(bind|bound) $ns/$p to " "$LOG"; then
      fail "the scheduler tried to bind the gated pod $ns/$p (above)"
    fi
    if [ -f "$D/logs/audit.log" ] && grep -F "\"/api/v1/namespaces/$ns/pods/$p/binding\"" "$D/logs/audit.log"; then
      fail "the API server saw a binding of the gated pod $ns/$p"
    fi
  done
}

# Gated pods of a PodGroup are never bound, but their PodGroup is admitted (Inqueue: Volcano's
# enqueue does not look at gates); once the gates are removed the gang binds within a session
# or two.
test_gated_pods_not_bound_until_ungated() {
  local ns
  ns=$(new_namespace cf-gate)
  nodes cf-gate 1 --cpu 4
  local gates="  schedulingGates: [{name: example.com/hold}]"
  pod "$ns" p0 g "" 1 cf-gate "$gates"
  pod "$ns" p1 g "" 1 cf-gate "  schedulingGates: [{name: scheduling.volcano.sh/queue-allocation-gate}]"
  podgroup "$ns" g 2
  wait_jsonpath 30 podgroup/g '{.status.conditions[?(@.type=="Unschedulable")].status}' True "$ns"
  sessions 3
  expect_eq 0 "$(bound_count "$ns")" "gated pods bound"
  expect_eq Inqueue "$(jsonpath podgroup/g '{.status.phase}' "$ns")" "the gated PodGroup's phase"
  expect_eq SchedulingGated \
    "$(jsonpath pod/p0 '{.status.conditions[?(@.type=="PodScheduled")].reason}' "$ns")" \
    "p0's PodScheduled reason"
  never_bound "$ns" p0 p1
  # Offline, kiln-replay on a dump of the cache names the gates that hold the pods.
  local from out
  from=$(($(wc -l <"$LOG") + 1))
  kill -USR2 "$(cat "$D/pids/kiln-scheduler-conform.pid")"
  wait_for 20 "the cache dump" bash -c "tail -n +$from '$LOG' | grep -q 'dumped the cache to'"
  out=$("$KILN_BUILD/scheduler/kiln-replay" --scheduler-conf "$CONF" "$D/conform-snapshot.pb") ||
    fail "kiln-replay failed"
  expect_match "gated $ns/p0: example.com/hold" "$out" "replay"
  expect_match "gated $ns/p1: scheduling.volcano.sh/queue-allocation-gate" "$out" "replay"
  ! grep -E "^(bind|unschedulable) $ns/" <<<"$out" || fail "the replay placed or explained a gated pod"
  local t0=$SECONDS p
  for p in p0 p1; do
    kubectl patch pod -n "$ns" "$p" --type=json \
      -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
  done
  wait_count 30 "pods bound after the gates went" 2 bound_count "$ns"
  echo "bound $((SECONDS - t0))s after the gates were removed"
  wait_jsonpath 30 podgroup/g '{.status.phase}' Running "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# Issue 35: a 4-replica Deployment whose pods are created gated, as a queueing controller
# that lifts the gates once the PodGroup is Inqueue would have it. pg-controller makes its
# PodGroup (minMember 4 from the group-min-member annotation the ReplicaSet inherits); the
# scheduler admits it (Inqueue) with every pod still gated; the test then plays the
# controller, removes the gates, and the gang binds and runs.
test_gated_deployment_inqueue_then_running() {
  local ns pg p
  ns=$(new_namespace cf-gdep)
  nodes cf-gdep 1 --cpu 8
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create the Deployment"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: $ns
  annotations: {scheduling.volcano.sh/group-min-member: "4"}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: volcano
      schedulingGates: [{name: example.com/queue-controller}]
      nodeSelector: {grp: cf-gdep}
      containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}}}]
EOF
  wait_count 60 "gated pods created" 4 pod_count "$ns" app=web
  wait_for 60 "the Deployment's PodGroup" bash -c \
    "kubectl get podgroups -n '$ns' -o name | grep -q ."
  pg=$(kubectl get podgroups -n "$ns" -o name | head -1)
  expect_eq 4 "$(jsonpath "$pg" '{.spec.minMember}' "$ns")" "the PodGroup's minMember"
  wait_jsonpath 60 "$pg" '{.status.phase}' Inqueue "$ns"
  sessions 2
  expect_eq 0 "$(bound_count "$ns" app=web)" "gated pods bound"
  expect_eq Inqueue "$(jsonpath "$pg" '{.status.phase}' "$ns")" "the PodGroup's phase while gated"
  for p in $(kubectl get pods -n "$ns" -l app=web -o name); do
    kubectl patch -n "$ns" "$p" --type=json \
      -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null ||
      fail "cannot remove the gates of $p"
  done
  wait_count 30 "pods bound after the gates went" 4 bound_count "$ns" app=web
  wait_jsonpath 30 "$pg" '{.status.phase}' Running "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A gated Job holds none of its queue: its PodGroup is admitted (a Volcano Job's pods are
# created only then) but its gated pods' requests are not counted, so another Job of the
# same size in a queue that fits only one of them is admitted and runs.
test_gated_job_holds_no_queue_resources() {
  local ns q
  ns=$(new_namespace cf-gq)
  q=$ns
  nodes cf-gq 1 --cpu 8
  kubectl apply -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $q}
spec: {weight: 1, capability: {cpu: "4"}}
EOF
  QUEUE=$q job "$ns" gated 2 2 2 cf-gq "        schedulingGates: [{name: example.com/hold}]"
  wait_count 60 "gated pods created" 2 pod_count "$ns" volcano.sh/job-name=gated
  QUEUE=$q job "$ns" free 2 2 2 cf-gq
  wait_count 60 "pods of Job free bound" 2 bound_count "$ns" volcano.sh/job-name=free
  sessions 2
  expect_eq 0 "$(bound_count "$ns" volcano.sh/job-name=gated)" "gated pods bound"
  never_bound "$ns" gated-w-0 gated-w-1
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete queue "$q" --wait=false >/dev/null 2>&1 || true
}

# A Job scaled from 2 to 4 replicas while it is still Pending (its pods cannot be placed:
# no node has its label yet): the svc ConfigMap lists 4 hosts as soon as the new pods
# exist.
test_svc_lists_new_hosts_before_running() {
  local ns
  ns=$(new_namespace cf-svc)
  job "$ns" s 2 2 1 cf-svc-none "" "  plugins: {svc: []}"
  wait_count 60 "pods of Job s" 2 pod_count "$ns"
  wait_for 30 "the svc ConfigMap" kubectl get configmap -n "$ns" s-svc
  expect_eq Pending "$(jsonpath vcjob/s '{.status.state.phase}' "$ns")" "the Job's phase before the scale"
  kubectl patch vcjob -n "$ns" s --type=json \
    -p '[{"op":"replace","path":"/spec/tasks/0/replicas","value":4}]' >/dev/null
  wait_count 60 "pods of Job s after the scale" 4 pod_count "$ns"
  local hosts
  hosts=$(jsonpath configmap/s-svc '{.data.VC_W_HOSTS}' "$ns")
  expect_eq "s-w-0.s,s-w-1.s,s-w-2.s,s-w-3.s" "$hosts" "VC_W_HOSTS as soon as the 4 pods exist"
  expect_eq 4 "$(jsonpath configmap/s-svc '{.data.w\.host}' "$ns" | grep -c .)" "w.host lines"
  expect_eq Pending "$(jsonpath vcjob/s '{.status.state.phase}' "$ns")" "the Job's phase"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# Two PodGroups wait for one node's room; the younger one has an sla-waiting-time and is
# placed first, where without the plugin the older one would be.
test_sla_job_overtakes_older_job() {
  local ns
  ns=$(new_namespace cf-sla)
  nodes cf-sla 1 --cpu 1
  # Another scheduler's pod fills the node until the test frees it.
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: blocker, namespace: $ns}
spec:
  nodeName: cf-sla-0
  containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}}}]
EOF
  podgroup "$ns" old 1
  pod "$ns" old-0 old "" 1 cf-sla
  wait_jsonpath 30 podgroup/old '{.status.conditions[?(@.type=="Unschedulable")].status}' True "$ns"
  podgroup "$ns" new 1 "" "annotations: {sla-waiting-time: 1h}"
  pod "$ns" new-0 new "" 1 cf-sla
  wait_jsonpath 30 podgroup/new '{.status.conditions[?(@.type=="Unschedulable")].status}' True "$ns"
  [ "$(jsonpath podgroup/old '{.metadata.creationTimestamp}' "$ns")" \
    \< "$(jsonpath podgroup/new '{.metadata.creationTimestamp}' "$ns")" ] ||
    echo "note: both PodGroups have the same creation second"
  kubectl delete pod -n "$ns" blocker --grace-period=0 --force >/dev/null 2>&1
  wait_count 60 "pods bound" 1 bound_count "$ns"
  expect_eq cf-sla-0 "$(jsonpath pod/new-0 '{.spec.nodeName}' "$ns")" "the sla job's pod"
  still 1 2 "$ns"
  expect_eq "" "$(jsonpath pod/old-0 '{.spec.nodeName}' "$ns")" "the older job's pod"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A one-pod ReplicationController (issue 35): the pg-controller gives its pod a PodGroup,
# and one session enqueues the group and binds the pod. Volcano writes the session's phase
# (Inqueue) at session close; Kiln writes it before the bind is sent and binds once it is
# answered, so from the moment the pod has a node its PodGroup never reads Pending. Polled
# as fast as kubectl answers, the pod first and then its PodGroup, until the group runs.
test_one_pod_rc_podgroup_never_pending_once_bound() {
  local ns
  ns=$(new_namespace cf-rc)
  nodes cf-rc 1 --cpu 4
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the ReplicationController"
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 1
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec:
      schedulerName: volcano
      nodeSelector: {grp: cf-rc}
      containers: [{name: c, image: fake, resources: {requests: {cpu: 100m}}}]
EOF
  local deadline=$((SECONDS + 90)) reads=0 bound=0 node phase seen=""
  while :; do
    [ $SECONDS -lt $deadline ] ||
      fail "the PodGroup did not run in 90s (reads $reads, bound in $bound; phases seen:$seen)"
    node=$(kubectl get pods -n "$ns" -l app=rc -o 'jsonpath={.items[*].spec.nodeName}' 2>/dev/null) ||
      node=""
    phase=$(kubectl get podgroups -n "$ns" -o 'jsonpath={.items[*].status.phase}' 2>/dev/null) ||
      phase="?"
    reads=$((reads + 1))
    [[ " $seen " == *" ${phase:-none} "* ]] || seen="$seen ${phase:-none}"
    [ -n "$node" ] || continue
    bound=$((bound + 1))
    case $phase in
      "" | Pending) fail "PodGroup read '${phase}' with its pod bound to $node (read $reads)" ;;
    esac
    [ "$phase" != Running ] || break
  done
  echo "REPORT $reads reads, $bound with the pod bound; PodGroup phases seen:$seen"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
