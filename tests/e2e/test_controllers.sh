#!/usr/bin/env bash
# vc-controller-manager's other controllers against the real control plane: the queue
# controller (states, Commands, Closing -> Closed, a Job held by a closed queue), the podgroup
# controller (Deployments and StatefulSets with schedulerName volcano), the gc controller
# (ttlSecondsAfterFinished), and --controllers. kiln-controller and kiln-scheduler run
# without leader election (logs in $KILN_CLUSTER_DIR/logs, pids in .../pids, so
# tests/cluster/down stops them); each test uses its own namespace and queues.
# shellcheck shell=bash
SUITE=controllers
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CTL=$KILN_BUILD/controller/kiln-controller
SCHED=$KILN_BUILD/scheduler/kiln-scheduler
D=$KILN_CLUSTER_DIR
CTL_LOG=$D/logs/kiln-controller-mgr.log
mkdir -p "$D/logs" "$D/pids"

setup() {
  kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null || return 1
  local i
  for i in $(seq 1 120); do
    kubectl wait --for=condition=Established --timeout=5s crd --all >/dev/null 2>&1 && break
    [ "$i" -lt 120 ] || return 1
    sleep 0.5
  done
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null || return 1
  # Nodes of our own (every pod here selects them): earlier suites may leave the shared nodes
  # full. The API server taints every new node not-ready; no node controller lifts it here.
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 2 --prefix ctlmgr- --label grp=ctlmgr \
    >/dev/null 2>&1 || return 1
  kubectl taint nodes -l grp=ctlmgr node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

start() { # NAME BIN LOG ARGS...
  local name=$1 bin=$2 log=$3
  shift 3
  "$bin" --kubeconfig "$KUBECONFIG" --leader-elect=false "$@" >>"$log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name.pid"
  echo "$bin" >"$D/pids/$name.exe" # tests/cluster/down checks it before a kill
}

stop() { # NAME
  local f=$D/pids/$1.pid pid
  [ -e "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null
  wait_for 60 "$1 to exit" bash -c "! kill -0 $pid 2>/dev/null"
  rm -f "$f" "${f%.pid}.exe"
}

start_controller() { # NAME LOG ARGS...
  local name=$1 log=$2
  shift 2
  # KILN_CTL_ARGS: more flags, e.g. --kube-api-content-type=application/json to run the suite
  # on JSON pod watches (the default is protobuf).
  # shellcheck disable=SC2086
  start "$name" "$CTL" "$log" -v=2 --kube-api-qps=200 --kube-api-burst=400 ${KILN_CTL_ARGS:-} "$@"
}

alive() { # NAME: the process of this pid file runs
  [ -e "$D/pids/$1.pid" ] && kill -0 "$(cat "$D/pids/$1.pid")" 2>/dev/null
}

# Each test finds kiln-scheduler and kiln-controller (all its controllers) running; a test
# that runs the controller otherwise stops the shared one, and the next test starts it again.
before_each() {
  alive kiln-scheduler-mgr || start kiln-scheduler-mgr "$SCHED" "$D/logs/kiln-scheduler-mgr.log" -v=2
  alive kiln-controller-mgr || start_controller kiln-controller-mgr "$CTL_LOG"
}

queue() { # NAME [PARENT]
  kubectl apply -f - >/dev/null <<Q || fail "cannot create queue $1"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $1}
spec: {weight: 1${2:+, parent: $2}}
Q
}

command() { # NS ACTION QUEUE (as vcctl queue operate makes it)
  local uid
  uid=$(jsonpath "queue/$3" '{.metadata.uid}')
  kubectl create -n "$1" -f - >/dev/null <<C || fail "cannot create the $2 Command"
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: $3-$(tr A-Z a-z <<<"$2")-}
action: $2
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: $3, uid: "$uid"}
C
}

job() { # NS NAME QUEUE [RUN_FOR] [EXTRA_SPEC]
  kubectl apply -n "$1" -f - >/dev/null <<J || fail "cannot create job $2"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $2}
spec:
  schedulerName: volcano
  queue: $3
  minAvailable: 1
${5:-}
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations: {${4:+kwok.kiln.dev/run-for: $4}}
      spec:
        restartPolicy: Never
        nodeSelector: {grp: ctlmgr}
        containers: [{name: main, image: busybox, resources: {requests: {cpu: 10m}}}]
J
}

state() { jsonpath "queue/$1" '{.status.state}'; }

queue_events() { # QUEUE
  kubectl get events -n default --field-selector "involvedObject.kind=Queue,involvedObject.name=$1" \
    -o 'jsonpath={range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}' 2>/dev/null
}

job_events() { # NS JOB
  kubectl get events -n "$1" --field-selector "involvedObject.name=$2" \
    -o 'jsonpath={range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}' 2>/dev/null
}

wait_grep() { # SECS WHAT REGEX COMMAND...
  local secs=$1 what=$2 re=$3 out=""
  shift 3
  local deadline=$((SECONDS + secs))
  while :; do
    # A command that fails is "not yet": the log a process was just started with may not
    # exist yet (the child opens it after the parent goes on), and set -e would end the test.
    out=$("$@" 2>/dev/null) || true
    grep -Eq -- "$re" <<<"$out" && return 0
    [ $SECONDS -lt $deadline ] || fail "timed out after ${secs}s waiting for $what /$re/; last: $out"
    sleep 0.3
  done
}

uniq_name() { echo "$1-$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }

# ---- queue controller ----

test_queue_gets_open_state_and_root_parent() {
  local q
  q=$(uniq_name qopen)
  queue "$q"
  wait_jsonpath 60 "queue/$q" '{.status.state}' Open
  wait_jsonpath 60 "queue/$q" '{.spec.parent}' root
  # root itself: made by kiln-scheduler (as Volcano's scheduler does), Open, with no parent.
  wait_jsonpath 60 queue/root '{.status.state}' Open
  expect_eq "" "$(jsonpath queue/root '{.spec.parent}')" "root's parent"
  wait_jsonpath 60 queue/default '{.spec.parent}' root
  wait_jsonpath 60 queue/default '{.status.state}' Open
  # Who wrote what: the controller applies the state and the counts, never allocated; a queue
  # with no PodGroup has no count at all (Volcano's QueueStatus omits a zero count).
  expect_match '(^| )queue-controller:f:state( |$)' "$(status_managers "$q")" \
    "status fields applied by queue-controller to an empty queue"
  expect_eq "" "$(jsonpath "queue/$q" "$COUNTS")" "an empty queue's counts"
  kubectl delete queue "$q" >/dev/null
}

COUNTS='{.status.pending}{.status.running}{.status.unknown}{.status.inqueue}{.status.completed}'

# status_managers QUEUE: "manager:f:field,..." for each manager of the queue's status.
status_managers() {
  kubectl get queue "$1" --show-managed-fields -o json |
    python3 -c 'import json,sys; o=json.load(sys.stdin); print(" ".join(sorted(m["manager"]+":"+",".join(sorted(m.get("fieldsV1",{}).get("f:status",{}).keys())) for m in o["metadata"]["managedFields"] if m.get("subresource")=="status")))'
}

test_close_queue_closing_then_closed_and_open_again() {
  local ns q
  ns=$(new_namespace qclose)
  q=$(uniq_name qc)
  queue "$q"
  wait_jsonpath 60 "queue/$q" '{.status.state}' Open
  job "$ns" busy "$q"
  wait_jsonpath 90 vcjob/busy '{.status.state.phase}' Running "$ns"
  wait_jsonpath 60 "queue/$q" '{.status.running}' 1
  expect_match '(^| )queue-controller:f:running,f:state( |$)' "$(status_managers "$q")" \
    "status fields applied by queue-controller to a queue with one running PodGroup"
  command "$ns" CloseQueue "$q"
  wait_jsonpath 60 "queue/$q" '{.status.state}' Closing
  wait_for 60 "the Command to be deleted" bash -c "[ -z \"\$(kubectl get commands -n $ns -o name)\" ]"
  wait_grep 60 "the CloseQueue event" '^Normal CloseQueue: Close queue succeed$' queue_events "$q"
  # A Job submitted now waits, and says why in Volcano's words.
  job "$ns" late "$q"
  wait_jsonpath 60 vcjob/late '{.status.state.phase}' Pending "$ns"
  wait_grep 60 "the closed-queue event" \
    "^Warning QueueNotOpen: can only submit job to queue with state \`Open\`, queue \`$q\` status is \`Closing\`" \
    job_events "$ns" late
  expect_eq "" "$(kubectl get podgroups -n "$ns" -o name | grep -v busy || true)" "no PodGroup for the waiting job"
  # The running work goes: the queue is Closed once its last PodGroup is gone.
  # (The PodGroup goes with it as the garbage collector would take it: the collector only
  # learns about new CRDs on its 30 s discovery resync.)
  kubectl delete vcjob -n "$ns" busy --wait=false >/dev/null
  kubectl delete podgroups -n "$ns" --all --wait=false >/dev/null
  wait_jsonpath 90 "queue/$q" '{.status.state}' Closed
  # No PodGroup left: the running count is gone, not 0 (omitempty, as Volcano writes it).
  wait_jsonpath 60 "queue/$q" "$COUNTS" ""
  expect_eq Pending "$(jsonpath vcjob/late '{.status.state.phase}' "$ns")" "the late job still waits"
  command "$ns" OpenQueue "$q"
  wait_jsonpath 60 "queue/$q" '{.status.state}' Open
  expect_eq false "$(jsonpath "queue/$q" '{.metadata.annotations.volcano\.sh/closed-by-parent}')" \
    "closed-by-parent after an open"
  wait_jsonpath 120 vcjob/late '{.status.state.phase}' Running "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null
  wait_for 90 "the queue to empty" bash -c "[ -z \"\$(kubectl get podgroups -A -o jsonpath='{.items[?(@.spec.queue==\"$q\")].metadata.name}')\" ]"
  kubectl delete queue "$q" >/dev/null
}

test_closed_queue_is_never_admitted() {
  # A PodGroup made directly in a Closed queue is never enqueued by kiln-scheduler, while one
  # made at the same time in an open queue is.
  local ns qc qo
  ns=$(new_namespace qadmit)
  qc=$(uniq_name qshut)
  qo=$(uniq_name qlive)
  queue "$qc"
  queue "$qo"
  wait_jsonpath 60 "queue/$qc" '{.status.state}' Open
  command "$ns" CloseQueue "$qc"
  wait_jsonpath 60 "queue/$qc" '{.status.state}' Closed
  local q
  for q in "$qc" "$qo"; do
    kubectl apply -n "$ns" -f - >/dev/null <<PG
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg-$q}
spec: {minMember: 1, queue: $q}
PG
  done
  wait_jsonpath 60 "podgroup/pg-$qo" '{.status.phase}' Inqueue "$ns"
  local ph
  ph=$(jsonpath "podgroup/pg-$qc" '{.status.phase}' "$ns")
  [ "$ph" != Inqueue ] && [ "$ph" != Running ] || fail "a PodGroup of a closed queue was admitted ($ph)"
  # Still Closed (not Closing): a closed queue stays closed while PodGroups come and go.
  expect_eq Closed "$(state "$qc")" "closed queue state"
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete queue "$qc" "$qo" --wait=false >/dev/null
}

test_hierarchy_child_follows_parent() {
  local ns p c
  ns=$(new_namespace qtree)
  p=$(uniq_name qpar)
  c=$(uniq_name qkid)
  queue "$p"
  queue "$c" "$p"
  wait_jsonpath 60 "queue/$c" '{.status.state}' Open
  command "$ns" CloseQueue "$p"
  wait_jsonpath 60 "queue/$c" '{.status.state}' Closed
  expect_eq true "$(jsonpath "queue/$c" '{.metadata.annotations.volcano\.sh/closed-by-parent}')" \
    "child marked closed by its parent"
  # Opened the way an operator does it: vcctl's Command (in "default"), as Volcano's vcctl.
  "$KILN_BUILD/cli/vcctl" queue operate -n "$p" -a open >/dev/null || fail "vcctl queue operate failed"
  wait_jsonpath 60 "queue/$p" '{.status.state}' Open
  wait_jsonpath 60 "queue/$c" '{.status.state}' Open
  kubectl delete queue "$c" "$p" --wait=false >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# ---- podgroup controller ----

# The queue tree rules Volcano's queue webhook checks against other queues, reported after
# the fact as Warning events on the queue (there is no webhook): a parent that does not
# exist (or is deleted), a capability above the parent's, children deserving more than their
# parent.
test_hierarchy_rules_reported() {
  local p c o
  p=$(uniq_name qcap)
  c=$(uniq_name qbig)
  o=$(uniq_name qorph)
  kubectl apply -f - >/dev/null <<Q || fail "cannot create the queues"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $p}
spec: {capability: {cpu: "2"}, deserved: {cpu: "2"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $c}
spec: {parent: $p, capability: {cpu: "4"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $o}
spec: {parent: $o-gone}
Q
  wait_grep 60 "the missing parent reported" \
    "^Warning InvalidHierarchy: failed to get parent queue of queue $o: queues.scheduling.volcano.sh \"$o-gone\" not found" \
    queue_events "$o"
  wait_grep 60 "the capability above the parent's reported" \
    "^Warning InvalidHierarchy: queue $c capability\[cpu\]=4 exceeds its ancestor's capability=2$" \
    queue_events "$c"
  kubectl patch queue "$c" --type=merge -p '{"spec":{"capability":null,"deserved":{"cpu":"3"}}}' \
    >/dev/null 2>&1 || fail "cannot change $c"
  wait_grep 60 "the children's deserved above the parent's reported" \
    "^Warning InvalidHierarchy: parent queue $p validation failed: sum of children's deserved \(cpu 3000.00, memory 0.00\) exceeds parent's deserved limit \(cpu 2000.00, memory 0.00\)$" \
    queue_events "$c"
  # The parent deleted under its child (Volcano refuses that; here it is reported).
  kubectl delete queue "$p" >/dev/null || fail "cannot delete $p"
  wait_grep 60 "the deleted parent reported" \
    "^Warning InvalidHierarchy: failed to get parent queue of queue $c: queues.scheduling.volcano.sh \"$p\" not found" \
    queue_events "$c"
  kubectl delete queue "$c" "$o" --wait=false >/dev/null
}

test_deployment_gets_one_podgroup_and_is_scheduled() {
  local ns
  ns=$(new_namespace pgdep)
  kubectl apply -n "$ns" -f - >/dev/null <<'DEP' || fail "cannot create the Deployment"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {scheduling.volcano.sh/group-min-member: "3", volcano.sh/preemptable: "true"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: volcano
      nodeSelector: {grp: ctlmgr}
      containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m, memory: 32Mi}}}]
DEP
  wait_for 60 "the ReplicaSet" bash -c "[ -n \"\$(kubectl get rs -n $ns -o name)\" ]"
  local rs_uid pg
  rs_uid=$(kubectl get rs -n "$ns" -o 'jsonpath={.items[0].metadata.uid}')
  pg=podgroup-$rs_uid
  wait_for 60 "PodGroup $pg" kubectl get podgroup -n "$ns" "$pg"
  expect_eq "$pg" "$(kubectl get podgroups -n "$ns" -o 'jsonpath={.items[*].metadata.name}')" \
    "one PodGroup for the three pods"
  expect_eq 3 "$(jsonpath "podgroup/$pg" '{.spec.minMember}' "$ns")" "minMember from the owner"
  expect_eq 300m "$(jsonpath "podgroup/$pg" '{.spec.minResources.cpu}' "$ns")" "minResources"
  expect_eq true "$(jsonpath "podgroup/$pg" '{.metadata.annotations.volcano\.sh/preemptable}' "$ns")" \
    "inherited volcano.sh/ annotation"
  expect_eq ReplicaSet "$(jsonpath "podgroup/$pg" '{.metadata.ownerReferences[0].kind}' "$ns")" "owner"
  # Every pod names the group and is bound, by kiln-scheduler.
  wait_for 90 "3 pods annotated" bash -c "[ \$(kubectl get pods -n $ns -o \
    'jsonpath={range .items[*]}{.metadata.annotations.scheduling\.k8s\.io/group-name}{\"\\n\"}{end}' \
    | grep -c '^$pg\$') -eq 3 ]"
  wait_for 90 "3 pods bound" bash -c "[ \$(kubectl get pods -n $ns -o \
    'jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) -eq 3 ]"
  wait_jsonpath 60 "podgroup/$pg" '{.status.phase}' Running "$ns"
  local src
  # The events follow the binds (the recorder sends them after each bind answers).
  wait_for 30 "the Scheduled events" bash -c \
    "kubectl get events -n $ns --field-selector reason=Scheduled -o name | grep -q ."
  src=$(kubectl get events -n "$ns" --field-selector reason=Scheduled \
    -o jsonpath='{range .items[*]}{.source.component}{.reportingComponent}{"\n"}{end}' | sort -u)
  expect_match volcano "$src" "Scheduled events' source"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_statefulset_scaled_to_zero_loses_its_podgroup() {
  local ns
  ns=$(new_namespace pgsts)
  kubectl apply -n "$ns" -f - >/dev/null <<'STS' || fail "cannot create the StatefulSet"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: db}}
  template:
    metadata:
      labels: {app: db}
      annotations: {scheduling.volcano.sh/queue-name: default}
    spec:
      schedulerName: volcano
      nodeSelector: {grp: ctlmgr}
      containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
STS
  local uid pg
  uid=$(jsonpath statefulset/db '{.metadata.uid}' "$ns")
  pg=podgroup-$uid
  wait_for 90 "PodGroup $pg" kubectl get podgroup -n "$ns" "$pg"
  expect_eq default "$(jsonpath "podgroup/$pg" '{.spec.queue}' "$ns")" "queue from the pod annotation"
  wait_for 90 "2 pods bound" bash -c "[ \$(kubectl get pods -n $ns -o \
    'jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) -eq 2 ]"
  kubectl scale statefulset -n "$ns" db --replicas=0 >/dev/null
  wait_for 90 "the PodGroup to go" bash -c "! kubectl get podgroup -n $ns $pg >/dev/null 2>&1"
  wait_for 90 "the pods to go" bash -c "[ -z \"\$(kubectl get pods -n $ns -o name)\" ]"
  # It stays gone: no group is made again for the pods on their way out.
  expect_eq "" "$(kubectl get podgroups -n "$ns" -o name)" "PodGroups after scaling to 0"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# ---- gc controller ----

test_ttl_deletes_finished_job() {
  local ns
  ns=$(new_namespace gcttl)
  job "$ns" short default 1s "  ttlSecondsAfterFinished: 5"
  job "$ns" keep default 1s
  wait_jsonpath 120 vcjob/short '{.status.state.phase}' Completed "$ns"
  local done_at=$SECONDS
  wait_for 60 "the finished job to be deleted" bash -c "! kubectl get vcjob -n $ns short >/dev/null 2>&1"
  local took=$((SECONDS - done_at))
  echo "    deleted ${took}s after Completed was seen" >&2
  # Seconds-precision lastTransitionTime: at least 4 s, and not long after the 5.
  [ "$took" -ge 3 ] || fail "deleted after ${took}s, before its TTL of 5s"
  [ "$took" -le 20 ] || fail "deleted after ${took}s, long after its TTL of 5s"
  wait_jsonpath 60 vcjob/keep '{.status.state.phase}' Completed "$ns"
  expect_eq keep "$(jsonpath vcjob/keep '{.metadata.name}' "$ns")" "a job without TTL is kept"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# ---- --controllers ----

# One LIST and one WATCH per resource for all the controllers (Volcano's shared informer
# factory): the job, gc, cronjob, jobflow and jobtemplate controllers read Jobs, the job,
# podgroup and queue controllers PodGroups, and each used to open its own watch.
test_one_watch_per_resource() {
  local log=$D/logs/kiln-controller-watch.log from r n
  # A controller of its own, started here, so that the log after FROM is its start alone (and
  # not beside the shared one: without leader election both would act on the Jobs).
  stop kiln-controller-mgr
  trap 'stop kiln-controller-watch' EXIT
  from=$(($(log_lines "$log") + 1))
  start_controller kiln-controller-watch "$log"
  for r in jobs podgroups queues commands; do
    wait_grep 60 "the $r informer to watch" "informer $r: list -> watch" tail -n "+$from" "$log"
  done
  for r in jobs podgroups queues commands; do
    n=$(tail -n "+$from" "$log" | grep -c "informer $r: idle -> list")
    expect_eq 1 "$n" "LISTs of $r at start"
  done
}

test_only_job_controller() {
  local log=$D/logs/kiln-controller-only.log from q ns
  # Not beside the shared controller: without leader election both would act on the Jobs.
  stop kiln-controller-mgr
  trap 'stop kiln-controller-only' EXIT
  from=$(($(log_lines "$log") + 1))
  start_controller kiln-controller-only "$log" --controllers=job-controller
  wait_grep 60 "the job controller to start" "Starting job-controller" tail -n "+$from" "$log"
  for c in queue-controller gc-controller pg-controller; do
    wait_grep 60 "$c disabled" "Controller <$c> is not enable" tail -n "+$from" "$log"
  done
  # The job controller works; the queue controller does not (a new queue gets no state).
  q=$(uniq_name qnone)
  queue "$q"
  ns=$(new_namespace only)
  job "$ns" j1 default
  wait_jsonpath 120 vcjob/j1 '{.status.state.phase}' Running "$ns"
  expect_eq "" "$(state "$q")" "state of a queue with the queue controller off"
  stop kiln-controller-only
  from=$(($(log_lines "$log") + 1))
  start_controller kiln-controller-only "$log" '--controllers=*,-job-controller'
  # Its start, in its own log, before the queue's state says anything about it.
  wait_grep 60 "the job controller disabled" "Controller <job-controller> is not enable" \
    tail -n "+$from" "$log"
  wait_grep 60 "the queue controller to start" "Starting queue-controller" tail -n "+$from" "$log"
  wait_jsonpath 60 "queue/$q" '{.status.state}' Open
  ! grep -q "Starting job-controller" <(tail -n "+$from" "$log") ||
    fail "the job controller ran with -job-controller"
  kubectl delete queue "$q" --wait=false >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

setup || {
  echo "FAIL controllers/setup: cannot install the CRDs or add the nodes"
  exit 1
}
before_each
e2e_main "$@"
