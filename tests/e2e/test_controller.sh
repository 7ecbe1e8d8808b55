#!/usr/bin/env bash
# kiln-controller against the real control plane: Jobs become PodGroups and pods, pods run
# on kwok nodes and end as their annotations say, and the phase machine, policies, Commands,
# events and garbage collection behave as Volcano's job controller does.
#
# Until kiln-scheduler runs here, the suite plays the scheduler itself: a loop moves Pending
# PodGroups of the test's namespace to Inqueue and binds their pods to kwok nodes.
source "$(dirname "$0")/lib.sh"
SUITE=controller

CTL_BIN=$KILN_BUILD/controller/kiln-controller
CTL_LOG=$KILN_CLUSTER_DIR/logs/kiln-controller.log
CTL_PID=$KILN_CLUSTER_DIR/pids/kiln-controller.pid
# The ports the running controller serves on (it binds port 0; see served_port in lib.sh),
# kept in files because tests run in subshells and some restart the controller.
CTL_PORTS=$KILN_CLUSTER_DIR/controller-suite-ports

setup_crds() {
  apply_crds || return 1
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null || return 1
  kubectl get namespace volcano-system >/dev/null 2>&1 ||
    kubectl create namespace volcano-system >/dev/null
}

# start_controller: run kiln-controller in the background with the cluster's kubeconfig; the
# pid file lets tests/cluster/down stop it. Returns once it listens, its ports recorded.
start_controller() {
  mkdir -p "$KILN_CLUSTER_DIR/logs" "$KILN_CLUSTER_DIR/pids" "$CTL_PORTS"
  local from
  from=$(log_lines "$CTL_LOG")
  # Port 0 for both; ":00" is port 0 too but another address, so metrics get a server of their own.
  # KILN_CTL_ARGS: more flags (e.g. --kube-api-content-type=application/json).
  # shellcheck disable=SC2086
  "$CTL_BIN" --kubeconfig "$KUBECONFIG" -v=${KILN_CTL_V:-2} \
    --kube-api-qps=${KILN_CTL_QPS:-200} --kube-api-burst=${KILN_CTL_BURST:-400} \
    --leader-elect-lease-duration=8s --leader-elect-renew-deadline=6s \
    --leader-elect-retry-period=1s \
    --enable-healthz --healthz-address 127.0.0.1:0 \
    --enable-metrics --listen-address 127.0.0.1:00 ${KILN_CTL_ARGS:-} \
    >>"$CTL_LOG" 2>&1 </dev/null &
  echo $! >"$CTL_PID"
  # tests/cluster/down stops a pid only when it still runs this executable.
  echo "$CTL_BIN" >"${CTL_PID%.pid}.exe"
  served_port "$CTL_LOG" healthz "$from" >"$CTL_PORTS/healthz" || return 1
  served_port "$CTL_LOG" metrics "$from" >"$CTL_PORTS/metrics" || return 1
  echo "${KILN_CTL_QPS:-200}" >"$CTL_PORTS/qps"
}

# Every test finds the controller running at its usual rate; a test that stops it or runs it
# otherwise leaves the next test to start it again, so tests run in any order.
before_each() {
  local pid
  pid=$(cat "$CTL_PID" 2>/dev/null) || pid=""
  if [ -z "$pid" ] || exited "$pid" || [ "$(cat "$CTL_PORTS/qps" 2>/dev/null)" != 200 ]; then
    [ -z "$pid" ] || stop_controller "$pid"
    start_controller
  fi
  wait_for 60 "controller ready" controller_ready
}

# stop_controller PID: SIGTERM, then wait for the exit.
stop_controller() {
  kill -TERM "$1" 2>/dev/null || true
  wait_for 60 "controller exit" exited "$1"
}

# ctl_url KIND: the base URL of the running controller's healthz or metrics server.
ctl_url() {
  echo "http://127.0.0.1:$(cat "$CTL_PORTS/$1")"
}

controller_healthy() {
  [ "$(curl -fsS "$(ctl_url healthz)/healthz" 2>/dev/null)" = ok ]
}

controller_ready() {
  curl -fsS "$(ctl_url healthz)/readyz" >/dev/null 2>&1
}

# fake_scheduler NS: Pending PodGroups -> Inqueue, unbound pods -> bound to a kwok node, as
# each appears: two kubectl watches, not a poll (kubectl processes every 0.3 s took a good
# share of the two cores the whole suite runs on).
fake_scheduler() {
  local ns=$1
  trap 'kill $(jobs -p) 2>/dev/null' EXIT
  trap 'exit 0' TERM
  kubectl get podgroups -n "$ns" -w \
    -o 'jsonpath={.metadata.name} {.status.phase}{"\n"}' 2>/dev/null > >(
    while read -r pg phase; do
      [ -n "$phase" ] && [ "$phase" != Pending ] && continue
      retry kubectl patch podgroup -n "$ns" "$pg" --type=merge -p '{"status":{"phase":"Inqueue"}}'
    done
  ) &
  kubectl get pods -n "$ns" -w \
    -o 'jsonpath={.metadata.name} {.spec.nodeName}{.metadata.deletionTimestamp}{"\n"}' 2>/dev/null > >(
    i=0
    while read -r pod rest; do
      [ -z "$rest" ] || continue
      retry bind "$ns" "$pod" "kwok-node-$((i % 3))" && i=$((i + 1))
    done
  ) &
  wait
}

# retry COMMAND...: a write of the fake scheduler, tried again when the API server failed it
# (a watch brings no second chance), up to five times; not when the object is gone or taken.
retry() {
  local n out
  for n in 1 2 3 4 5; do
    out=$("$@" 2>&1) && return 0
    grep -Eqi 'not ?found|already|being deleted|terminat|conflict' <<<"$out" && return 1
    sleep 0.5
  done
  return 1
}

bind() { # ns pod node
  printf '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"%s"},"target":{"apiVersion":"v1","kind":"Node","name":"%s"}}' \
    "$2" "$3" | kubectl create --raw "/api/v1/namespaces/$1/pods/$2/binding" -f -
}

# with_scheduler NS: start the fake scheduler for this test; it stops when the test ends.
with_scheduler() {
  fake_scheduler "$1" &
  SCHED_PID=$!
  trap 'kill $SCHED_PID 2>/dev/null || true' EXIT
}

# job NAME [TASKS_YAML] [SPEC_EXTRA]: a Job manifest with the given tasks.
job_yaml() {
  cat <<JOB
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: $1
spec:
  schedulerName: volcano
  queue: ${QUEUE:-default}
${3:-}
  tasks:
$2
JOB
}

# task NAME REPLICAS [ANNOTATIONS] [EXTRA] [COMMAND]: one task of a Job (indented for job_yaml).
# COMMAND is the container's command as a YAML flow list; kwok runs it as a node would
# (tests/cluster/kwok-stages.yaml: sleep N, exit N, true, false). Without it a pod runs until
# deleted, or as its kwok.kiln.dev annotations say.
task() {
  cat <<TASK
  - name: $1
    replicas: $2
${4:-}
    template:
      metadata:
        annotations: {${3:-}}
      spec:
        restartPolicy: Never
        containers:
        - {name: main, image: busybox${5:+, command: $5}}
TASK
}

phase() { # ns job
  jsonpath "vcjob/$2" '{.status.state.phase}' "$1"
}

wait_phase() { # secs ns job phase
  wait_jsonpath "$1" "vcjob/$3" '{.status.state.phase}' "$4" "$2"
}

podgroup_exists() { # ns
  [ -n "$(kubectl get podgroup -n "$1" -o name 2>/dev/null)" ]
}

pod_count() { # ns [selector]
  kubectl get pods -n "$1" ${2:+-l "$2"} --no-headers 2>/dev/null | wc -l
}

events_of() { # ns job
  kubectl get events -n "$1" --field-selector "involvedObject.name=$2" \
    -o 'jsonpath={range .items[*]}{.type} {.reason} {.message}{"\n"}{end}'
}

# ---- tests ----

test_flags_and_health() {
  local out
  out=$("$CTL_BIN" --help)
  for f in kube-api-qps kube-api-burst scheduler-name worker-threads max-requeue-num \
    leader-elect leader-elect-lease-duration listen-address healthz-address enable-healthz \
    enable-metrics controllers; do
    expect_match "--$f " "$out" "--help lists --$f"
  done
  expect_match 'kube-api-qps float .*default 50' "$out" "qps default"
  expect_match 'kube-api-burst int .*default 100' "$out" "burst default"
  out=$(timeout 10 "$CTL_BIN" --no-such-flag 2>&1) && fail "an unknown flag was accepted"
  expect_match 'unknown flag: --no-such-flag' "$out" "unknown flag error"
  out=$(timeout 10 "$CTL_BIN" --max-requeue-num=-5 2>&1) && fail "--max-requeue-num=-5 was accepted"
  expect_match 'max-requeue-num' "$out" "bad value error"
  out=$(timeout 10 "$CTL_BIN" --leader-elect-lease-duration=1s --leader-elect-renew-deadline=2s 2>&1) &&
    fail "renew deadline over the lease duration was accepted"
  wait_for 60 "controller ready" controller_ready
  # A standby replica answers ready before it holds the lease; once it leads, its caches sync
  # and /healthz fails until they have. So /healthz must come to say ok, not be ok at once.
  wait_for 60 "/healthz says ok" controller_healthy
  out=$(curl -fsS "$(ctl_url metrics)/metrics")
  expect_match 'volcano_controller_job_to_pod_creation_latency_milliseconds' "$out" metrics
  expect_match 'workqueue_depth\{name="job"\}' "$out" "work queue depth"
  expect_match 'workqueue_queue_duration_seconds' "$out" "work queue latency"
  expect_match '^.+_[0-9a-f-]{36}$' "$(kubectl get lease -n volcano-system vc-controller-manager \
    -o jsonpath='{.spec.holderIdentity}')" "the lease is held"
}

test_one_task_job_completes() {
  local ns
  ns=$(new_namespace ctl1)
  with_scheduler "$ns"
  job_yaml one "$(task main 1 '"kwok.kiln.dev/run-for": "2s"')" "  minAvailable: 1" |
    kubectl apply -n "$ns" -f - >/dev/null
  wait_for 60 "PodGroup" podgroup_exists "$ns"
  local uid
  uid=$(jsonpath vcjob/one '{.metadata.uid}' "$ns")
  expect_eq "one-$uid" "$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].metadata.name}')" \
    "PodGroup name"
  wait_phase 60 "$ns" one Completed
  expect_eq "one-main-0" "$(kubectl get pods -n "$ns" -o 'jsonpath={.items[0].metadata.name}')" \
    "pod name"
  expect_eq 1 "$(jsonpath vcjob/one '{.status.succeeded}' "$ns")" "succeeded"
  expect_eq volcano "$(jsonpath pod/one-main-0 '{.spec.schedulerName}' "$ns")" "schedulerName"
  expect_eq "one-$uid" \
    "$(jsonpath pod/one-main-0 '{.metadata.annotations.scheduling\.k8s\.io/group-name}' "$ns")" \
    "group-name annotation"
  expect_eq Job "$(jsonpath pod/one-main-0 '{.metadata.ownerReferences[0].kind}' "$ns")" "owner"
  local m
  m=$(curl -fsS "$(ctl_url metrics)/metrics")
  expect_match 'volcano_job_completed_phase_count\{job_name="one",queue_name="default"\} 1' "$m" \
    "completed-phase metric"
  expect_match 'volcano_queue_pod_group_inqueue_count\{queue_name="default"\}' "$m" \
    "PodGroup gauges"
}

test_gang_of_three() {
  local ns
  ns=$(new_namespace ctl2)
  job_yaml gang "$(task work 3)" "  minAvailable: 3" | kubectl apply -n "$ns" -f - >/dev/null
  # No scheduler yet: the PodGroup waits Pending with the gang size, and no pod is made.
  wait_for 60 "PodGroup" podgroup_exists "$ns"
  local pg
  pg=$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].metadata.name}')
  expect_eq 3 "$(jsonpath "podgroup/$pg" '{.spec.minMember}' "$ns")" "minMember"
  expect_eq default "$(jsonpath "podgroup/$pg" '{.spec.queue}' "$ns")" "queue"
  wait_phase 60 "$ns" gang Pending
  # A sync writes the status after its pods (ctl_exec.c's stages): a sync that made pods
  # before the PodGroup is Inqueue would show them now.
  expect_eq 0 "$(pod_count "$ns")" "pods before Inqueue"
  with_scheduler "$ns"
  wait_jsonpath 60 vcjob/gang '{.status.running}' 3 "$ns"
  wait_phase 60 "$ns" gang Running
  expect_eq 3 "$(pod_count "$ns")" "pods"
  expect_eq 3 "$(jsonpath vcjob/gang '{.status.minAvailable}' "$ns")" "status.minAvailable"
}

test_exit_code_restarts_job_until_max_retry() {
  local ns
  ns=$(new_namespace ctl3)
  with_scheduler "$ns"
  # Each pod's container exits with 3 after a second, and the Job's policy on that code acts.
  job_yaml rj "$(task main 2 '' '' '[sh, -c, "sleep 1; exit 3"]')" \
    "  minAvailable: 2
  maxRetry: 2
  policies:
  - {exitCode: 3, action: RestartJob}" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 120 "$ns" rj Failed
  expect_eq 2 "$(jsonpath vcjob/rj '{.status.retryCount}' "$ns")" "retryCount"
  local v
  v=$(jsonpath vcjob/rj "{.status.version}" "$ns") || fail "cannot read the version"
  [ "$v" -ge 2 ] || fail "version did not bump on each restart: $v"
  expect_match 'Restarting' "$(jsonpath vcjob/rj '{.status.conditions[*].status}' "$ns")" \
    "conditions"
  expect_match 'Normal ExecuteAction Start to execute action RestartJob' "$(events_of "$ns" rj)" \
    "ExecuteAction event"
}

test_pod_evicted_restarts_task() {
  local ns
  ns=$(new_namespace ctl4)
  with_scheduler "$ns"
  job_yaml ev "$(task a 1)
$(task b 1 '' '    policies:
    - {event: PodEvicted, action: RestartTask}')" "  minAvailable: 2" |
    kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" ev Running
  local old_a old_b
  old_a=$(jsonpath pod/ev-a-0 '{.metadata.uid}' "$ns")
  old_b=$(jsonpath pod/ev-b-0 '{.metadata.uid}' "$ns")
  # Removed at once (grace 0), and marked so that kwok leaves it alone: kwok deletes a deleted
  # pod again by name, without the uid precondition a kubelet uses, and under load that late
  # delete landed on the replacement the controller had just made (audit log: kubectl's
  # delete, the replacement 13 ms later, kwok's delete 16 ms later, 200), a real second
  # eviction and retryCount 2 in about one run in twenty.
  kubectl annotate pod -n "$ns" ev-b-0 kwok.kiln.dev/skip-delete=true >/dev/null
  kubectl delete pod -n "$ns" ev-b-0 --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_for 60 "ev-b-0 recreated" bash -c \
    "u=\$(kubectl get pod -n $ns ev-b-0 -o jsonpath='{.metadata.uid}') && [ -n \"\$u\" ] && [ \"\$u\" != $old_b ]"
  wait_phase 60 "$ns" ev Running
  expect_eq "$old_a" "$(jsonpath pod/ev-a-0 '{.metadata.uid}' "$ns")" "task a untouched"
  expect_eq 1 "$(jsonpath vcjob/ev '{.status.retryCount}' "$ns")" "retryCount"
  expect_match 'Start to execute action RestartTask' "$(events_of "$ns" ev)" "event"
}

test_task_completed_completes_job() {
  local ns
  ns=$(new_namespace ctl5)
  with_scheduler "$ns"
  job_yaml tc "$(task master 1 '' '    policies:
    - {event: TaskCompleted, action: CompleteJob}' '[sleep, "3"]')
$(task worker 2)" "  minAvailable: 3" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" tc Completed
  wait_for 60 "workers gone" bash -c "[ \$(kubectl get pods -n $ns -l volcano.sh/task-spec=worker --no-headers 2>/dev/null | wc -l) = 0 ]"
  expect_eq Succeeded "$(jsonpath pod/tc-master-0 '{.status.phase}' "$ns")" "master kept"
  expect_match 'Completing' "$(jsonpath vcjob/tc '{.status.conditions[*].status}' "$ns")" \
    "went through Completing"
}

command_yaml() { # name action job
  cat <<CMD
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: $1}
action: $2
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: $3, uid: "$4"}
CMD
}

test_suspend_and_resume_by_command() {
  local ns uid
  ns=$(new_namespace ctl6)
  with_scheduler "$ns"
  job_yaml sr "$(task main 2)" "  minAvailable: 2" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" sr Running
  uid=$(jsonpath vcjob/sr '{.metadata.uid}' "$ns")
  command_yaml suspend AbortJob sr "$uid" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" sr Aborted
  wait_for 60 "pods gone" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) = 0 ]"
  kubectl get command -n "$ns" suspend >/dev/null 2>&1 && fail "the Command was not deleted"
  command_yaml resume ResumeJob sr "$uid" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" sr Running
  local conds
  conds=$(jsonpath vcjob/sr '{.status.conditions[*].status}' "$ns")
  # One condition per phase, ordered by its last transition.
  expect_match 'Aborting.*Aborted.*Restarting.*Running' "$conds" "phases"
  expect_match 'Normal CommandIssued Start to execute command AbortJob' "$(events_of "$ns" sr)" \
    "CommandIssued event"
}

test_min_success() {
  local ns
  ns=$(new_namespace ctl7)
  with_scheduler "$ns"
  job_yaml ms "$(task ok 2 '"kwok.kiln.dev/run-for": "1s"')
$(task long 2)" "  minAvailable: 2
  minSuccess: 2" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" ms Completed
  expect_eq 2 "$(jsonpath vcjob/ms '{.status.succeeded}' "$ns")" "succeeded"
}

test_scale_down() {
  local ns
  ns=$(new_namespace ctl8)
  with_scheduler "$ns"
  job_yaml sd "$(task main 4)" "  minAvailable: 2" | kubectl apply -n "$ns" -f - >/dev/null
  wait_jsonpath 60 vcjob/sd '{.status.running}' 4 "$ns"
  kubectl patch vcjob -n "$ns" sd --type=json \
    -p '[{"op":"replace","path":"/spec/tasks/0/replicas","value":2}]' >/dev/null
  wait_for 60 "scaled to 2" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) = 2 ]"
  kubectl get pod -n "$ns" sd-main-0 sd-main-1 >/dev/null || fail "the low indexes were not kept"
  wait_jsonpath 60 vcjob/sd '{.status.running}' 2 "$ns"
}

test_delete_job_collects_children() {
  local ns
  ns=$(new_namespace ctl9)
  with_scheduler "$ns"
  job_yaml del "$(task main 2)" "  minAvailable: 2
  volumes:
  - mountPath: /data
    volumeClaim:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" del Running
  expect_eq 1 "$(kubectl get pvc -n "$ns" --no-headers | wc -l)" "PVC created"
  expect_eq 1 "$(kubectl get podgroup -n "$ns" --no-headers | wc -l)" "PodGroup"
  kubectl delete vcjob -n "$ns" del --wait=false >/dev/null
  wait_for 90 "children collected" bash -c \
    "[ \$(kubectl get pods,podgroups,pvc -n $ns --no-headers 2>/dev/null | grep -vc Terminating) = 0 ]"
}

test_describe_shows_events() {
  local ns
  ns=$(new_namespace ctl10)
  with_scheduler "$ns"
  job_yaml de "$(task main 1 '' '' '[sh, -c, "sleep 1 && exit 2"]')" \
    "  minAvailable: 1
  policies:
  - {event: PodFailed, action: AbortJob}" | kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" de Aborted
  # Events are written asynchronously, after the status.
  wait_for 60 "describe shows the events" bash -c "kubectl describe vcjob -n $ns de |
    grep -Eq 'Normal +ExecuteAction .*vc-controller-manager +Start to execute action AbortJob'"
}

test_missing_queue_stays_pending_others_flow() {
  local ns
  ns=$(new_namespace ctl11)
  with_scheduler "$ns"
  QUEUE=nosuchqueue job_yaml lost "$(task main 1)" "  minAvailable: 1" |
    kubectl apply -n "$ns" -f - >/dev/null 2>&1 || true
  kubectl get vcjob -n "$ns" lost >/dev/null 2>&1 || fail "the API server refused the Job"
  job_yaml fine "$(task main 1 '"kwok.kiln.dev/run-for": "1s"')" "  minAvailable: 1" |
    kubectl apply -n "$ns" -f - >/dev/null
  wait_phase 60 "$ns" fine Completed
  wait_for 60 "Warning event" bash -c "kubectl get events -n $ns --field-selector involvedObject.name=lost -o jsonpath='{.items[*].type}' | grep -q Warning"
  expect_eq Pending "$(phase "$ns" lost)" "phase of the Job with a missing queue"
  expect_match 'nosuchqueue' "$(events_of "$ns" lost)" "the event names the queue"
  expect_eq 0 "$(pod_count "$ns" volcano.sh/job-name=lost)" "no pods for it"
}

# Volcano's capacity plugin refuses a Job in a queue with child queues; the controller keeps it
# Pending with reason QueueNotLeaf and Volcano's words, and starts it once the child is gone.
test_non_leaf_queue_waits_until_leaf() {
  local ns q=ctl-parent-$RANDOM
  ns=$(new_namespace ctl-leaf)
  kubectl create -f - >/dev/null <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $q}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $q-child}
spec: {weight: 1, parent: $q}
EOF
  QUEUE=$q job_yaml nl "$(task main 1)" "  minAvailable: 1" | kubectl apply -n "$ns" -f - >/dev/null
  wait_jsonpath 60 vcjob/nl '{.status.state.reason}' QueueNotLeaf "$ns"
  wait_for 60 "QueueNotLeaf event" bash -c "kubectl get events -n $ns --field-selector involvedObject.name=nl -o jsonpath='{.items[*].reason}' | grep -q QueueNotLeaf"
  expect_match "The Queue <$q> of Job <$ns/nl> is not leaf queue" "$(events_of "$ns" nl)" "event"
  ! podgroup_exists "$ns" || fail "a PodGroup was created for a Job in a queue with children"
  kubectl delete queue "$q-child" >/dev/null
  wait_for 60 "PodGroup once the queue is a leaf" podgroup_exists "$ns"
  kubectl delete queue "$q" --wait=false >/dev/null
}

test_pod_pending_timeout_runs_delayed_action() {
  local ns pg
  ns=$(new_namespace ctl13)
  # Inqueue but never bound: the pods stay Pending past the policy's timeout.
  job_yaml pt "$(task main 2 '' '    policies:
    - {event: PodPending, action: AbortJob, timeout: 3s}')" "  minAvailable: 2" |
    kubectl apply -n "$ns" -f - >/dev/null
  wait_for 60 "PodGroup" podgroup_exists "$ns"
  pg=$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].metadata.name}')
  kubectl patch podgroup -n "$ns" "$pg" --type=merge -p '{"status":{"phase":"Inqueue"}}' >/dev/null
  wait_for 60 "2 pods" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) = 2 ]"
  local t0=$SECONDS
  wait_phase 60 "$ns" pt Aborted
  [ $((SECONDS - t0)) -ge 2 ] || fail "aborted before the 3s timeout"
  local ev
  ev=$(events_of "$ns" pt)
  expect_match 'Execute action AbortJob after 3s' "$ev" "delayed action event"
  expect_match 'Start to execute action AbortJob' "$ev" "execution event"
}

test_missing_pvc_stays_pending() {
  local ns
  ns=$(new_namespace ctl14)
  job_yaml nopvc "$(task main 1)" "  minAvailable: 1
  volumes:
  - {mountPath: /data, volumeClaimName: not-there}" | kubectl apply -n "$ns" -f - >/dev/null
  wait_for 60 "Warning event" bash -c "kubectl get events -n $ns --field-selector involvedObject.name=nopvc -o jsonpath='{.items[*].message}' | grep -q not-there"
  expect_eq Pending "$(phase "$ns" nopvc)" "phase"
  expect_eq 0 "$(pod_count "$ns")" "pods"
  # The claim appears: the Job moves on without any other change.
  kubectl apply -n "$ns" -f - >/dev/null <<'PVC'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: not-there}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
PVC
  wait_for 60 "PodGroup" podgroup_exists "$ns"
}

test_standby_replica_does_not_act() {
  local port holder sby_log=$KILN_CLUSTER_DIR/logs/kiln-controller-standby.log from
  wait_for 60 "controller ready" controller_ready
  holder=$(kubectl get lease -n volcano-system vc-controller-manager -o jsonpath='{.spec.holderIdentity}')
  from=$(log_lines "$sby_log")
  "$CTL_BIN" --kubeconfig "$KUBECONFIG" --leader-elect-lease-duration=8s \
    --leader-elect-renew-deadline=6s --leader-elect-retry-period=1s --enable-healthz \
    --healthz-address 127.0.0.1:0 >>"$sby_log" 2>&1 &
  SBY_PID=$!
  trap 'kill $SBY_PID 2>/dev/null || true' EXIT
  port=$(served_port "$sby_log" healthz "$from")
  wait_for 60 "standby health endpoint" curl -fsS "http://127.0.0.1:$port/healthz"
  # It has tried the lease and found it held: it stays a standby while the leader renews.
  wait_for 60 "the standby seeing the leader" bash -c \
    "tail -n +$((from + 1)) '$sby_log' | grep -q 'new leader: $holder'"
  ! grep -q 'starting the job controller' "$KILN_CLUSTER_DIR/logs/kiln-controller-standby.log" ||
    fail "the standby started the job controller"
  expect_eq "$holder" "$(kubectl get lease -n volcano-system vc-controller-manager \
    -o jsonpath='{.spec.holderIdentity}')" "lease holder"
  kill -TERM $SBY_PID
  wait $SBY_PID || fail "the standby did not exit cleanly on SIGTERM"
}

# A task without a name is default<i>, as Volcano's webhook names it: pods, keys, the
# PodGroup's minTaskMember, the status counts, and the name written back into the spec.
test_unnamed_task_gets_default_name() {
  local ns
  ns=$(new_namespace ctl-anon)
  with_scheduler "$ns"
  kubectl create -n "$ns" -f - >/dev/null <<'JOB'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: anon
spec:
  schedulerName: volcano
  tasks:
  - replicas: 2
    template:
      metadata:
        annotations: {"kwok.kiln.dev/run-for": "2s"}
      spec:
        restartPolicy: Never
        containers:
        - {name: main, image: busybox}
JOB
  wait_for 60 "PodGroup" podgroup_exists "$ns"
  expect_eq 2 "$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].spec.minTaskMember.default0}')" \
    "minTaskMember"
  wait_phase 60 "$ns" anon Completed
  expect_eq "anon-default0-0 anon-default0-1" \
    "$(kubectl get pods -n "$ns" -o 'jsonpath={.items[*].metadata.name}')" "pod names"
  expect_eq default0 \
    "$(jsonpath pod/anon-default0-1 '{.metadata.labels.volcano\.sh/task-spec}' "$ns")" "task-spec label"
  expect_eq default0 "$(jsonpath vcjob/anon '{.spec.tasks[0].name}' "$ns")" "name written back"
  expect_eq 2 "$(jsonpath vcjob/anon '{.status.taskStatusCount.default0.phase.Succeeded}' "$ns")" \
    "taskStatusCount"
}

# A partitioned task: pods carry their partition id, the PodGroup has the sub-gang and
# Volcano's minResources, and a RestartPartition policy replaces only the failed pod's
# partition.
test_partition_restart_replaces_one_partition() {
  local ns
  ns=$(new_namespace ctl-part)
  with_scheduler "$ns"
  job_yaml part "  - name: worker
    replicas: 4
    partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartitions: 1}
    policies:
    - {event: PodFailed, action: RestartPartition}
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
          resources:
            requests: {cpu: 100m, memory: 64Mi}
            limits: {cpu: 200m}" "  maxRetry: 3" | kubectl apply -n "$ns" -f - >/dev/null
  wait_jsonpath 60 vcjob/part '{.status.running}' 4 "$ns"
  local i ids=""
  for i in 0 1 2 3; do
    ids="$ids $(jsonpath "pod/part-worker-$i" '{.metadata.labels.volcano\.sh/partition-id}' "$ns")"
  done
  expect_eq " 0 0 1 1" "$ids" "partition ids"
  local pg
  pg=$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].metadata.name}')
  expect_eq 2 "$(jsonpath "podgroup/$pg" '{.spec.minMember}' "$ns")" "minMember"
  expect_eq '{"labelSelector":{"matchLabels":{"volcano.sh/task-spec":"worker"}},"matchLabelKeys":["volcano.sh/partition-id"],"minSubGroups":1,"name":"worker","subGroupSize":2}' \
    "$(kubectl get podgroup -n "$ns" "$pg" -o json | jq -cS '.spec.subGroupPolicy[0]')" "subGroupPolicy"
  expect_eq '{"count/pods":"2","cpu":"200m","limits.cpu":"400m","memory":"128Mi","pods":"2","requests.cpu":"200m","requests.memory":"128Mi"}' \
    "$(kubectl get podgroup -n "$ns" "$pg" -o json | jq -cS '.spec.minResources')" "minResources"
  local pg_uid uid0 uid1 uid2 uid3
  pg_uid=$(jsonpath "podgroup/$pg" '{.metadata.uid}' "$ns")
  for i in 0 1 2 3; do
    eval "uid$i=\$(jsonpath pod/part-worker-$i '{.metadata.uid}' \"\$ns\")"
  done
  # The kwok fail stage matches the annotations of a running pod: worker-3 exits with 3.
  kubectl annotate pod -n "$ns" part-worker-3 kwok.kiln.dev/run-for=1s kwok.kiln.dev/exit-code=3 >/dev/null
  local new
  for i in 2 3; do
    eval "new=\$uid$i"
    wait_for 60 "part-worker-$i replaced" bash -c \
      "u=\$(kubectl get pod -n $ns part-worker-$i -o jsonpath='{.metadata.uid}' 2>/dev/null) && [ -n \"\$u\" ] && [ \"\$u\" != $new ]"
  done
  wait_jsonpath 60 vcjob/part '{.status.running}' 4 "$ns"
  expect_eq "$uid0" "$(jsonpath pod/part-worker-0 '{.metadata.uid}' "$ns")" "partition 0 untouched (worker-0)"
  expect_eq "$uid1" "$(jsonpath pod/part-worker-1 '{.metadata.uid}' "$ns")" "partition 0 untouched (worker-1)"
  expect_eq 1 "$(jsonpath pod/part-worker-2 '{.metadata.labels.volcano\.sh/partition-id}' "$ns")" \
    "the new pod's partition"
  expect_eq 1 "$(jsonpath vcjob/part '{.status.retryCount}' "$ns")" "retryCount"
  expect_eq "$pg_uid" "$(jsonpath "podgroup/$pg" '{.metadata.uid}' "$ns")" "PodGroup kept"
  expect_match 'Restarting' "$(jsonpath vcjob/part '{.status.conditions[*].status}' "$ns")" \
    "went through Restarting"
  expect_match 'Normal ExecuteAction Start to execute action RestartPartition' \
    "$(events_of "$ns" part)" "ExecuteAction event"
}

test_sigterm_shuts_down_cleanly() {
  local pid ns pg n=150
  ns=$(new_namespace ctl15)
  job_yaml term "$(task main $n)" "  minAvailable: 1" | kubectl apply -n "$ns" -f - >/dev/null
  wait_for 60 "PodGroup" podgroup_exists "$ns"
  pg=$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].metadata.name}')
  kubectl patch podgroup -n "$ns" "$pg" --type=merge -p '{"status":{"phase":"Inqueue"}}' >/dev/null
  wait_for 60 "some pods" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge 10 ]"
  # SIGTERM while writing: the writes in flight finish, then the process exits 0.
  pid=$(cat "$CTL_PID")
  stop_controller "$pid"
  local tail_log
  tail_log=$(tail -5 "$CTL_LOG")
  expect_match 'exiting with status 0' "$tail_log" "exit log"
  expect_match '0 plans abandoned' "$tail_log" "writes drained"
  start_controller
  wait_for 60 "controller ready again" controller_ready
  wait_for 120 "$n pods" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge $n ]"
}

test_restart_mid_job_creates_no_pod_twice() {
  local ns n=200
  # A slow client (20 requests/s) so the kill lands in the middle of the job on any machine:
  # at the default rate a quiet machine makes all 200 pods before the test can look.
  stop_controller "$(cat "$CTL_PID")"
  KILN_CTL_QPS=20 KILN_CTL_BURST=20 start_controller
  ns=$(new_namespace ctl12)
  job_yaml big "$(task main $n)" "  minAvailable: 1" | kubectl apply -n "$ns" -f - >/dev/null
  wait_for 60 "PodGroup" podgroup_exists "$ns"
  local pg
  pg=$(kubectl get podgroup -n "$ns" -o 'jsonpath={.items[0].metadata.name}')
  kubectl patch podgroup -n "$ns" "$pg" --type=merge -p '{"status":{"phase":"Inqueue"}}' >/dev/null
  wait_for 60 "some pods" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge 20 ]"
  kill -9 "$(cat "$CTL_PID")"
  local before
  before=$(kubectl get pods -n "$ns" -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort)
  local nb
  nb=$(echo "$before" | grep -c =)
  [ "$nb" -lt "$n" ] || fail "all $n pods were made before the kill; nothing tested"
  start_controller
  wait_for 120 "$n pods" bash -c "[ \$(kubectl get pods -n $ns --no-headers 2>/dev/null | wc -l) -ge $n ]"
  # The controller's status counts them all: a sync that saw every pod has finished (its
  # status comes after its pods), so no pod is still to come.
  wait_jsonpath 60 vcjob/big '{.status.pending}' "$n" "$ns"
  expect_eq "$n" "$(pod_count "$ns")" "pod count"
  local after missing
  after=$(kubectl get pods -n "$ns" -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort)
  missing=$(comm -23 <(echo "$before") <(echo "$after"))
  [ -z "$missing" ] || fail "pods made before the restart were replaced: $missing"
  echo "    $nb of $n pods existed at the kill" >&2
  wait_for 60 "controller ready again" controller_ready
}

setup_crds || {
  echo "FAIL controller/setup: cannot install the CRDs"
  exit 1
}
before_each
e2e_main "$@"
