#!/usr/bin/env bash
# cronjob-controller against the real control plane. kiln-controller runs only that
# controller (--controllers=cronjob-controller), so the Jobs it creates stay as created and a
# test finishes them by writing their status, as the job controller would. Its clock runs 60x
# the wall clock (--cronjob-test-clock-speed=60): an every-minute CronJob fires every second,
# so no test waits minutes; the schedule arithmetic itself is unit-tested (test_ctl_cron).
source "$(dirname "$0")/lib.sh"
SUITE=cronjob
CTL_BIN=$KILN_BUILD/controller/kiln-controller
CTL_LOG=$KILN_CLUSTER_DIR/logs/kiln-controller-cronjob.log
CTL_PID=$KILN_CLUSTER_DIR/pids/kiln-controller-cronjob.pid


start_controller() {
  mkdir -p "$KILN_CLUSTER_DIR/logs" "$KILN_CLUSTER_DIR/pids"
  "$CTL_BIN" --kubeconfig "$KUBECONFIG" -v=2 --leader-elect=false \
    --controllers=cronjob-controller --cronjob-test-clock-speed=60 \
    --kube-api-qps=200 --kube-api-burst=400 >>"$CTL_LOG" 2>&1 </dev/null &
  echo $! >"$CTL_PID"
  echo "$CTL_BIN" >"${CTL_PID%.pid}.exe"
}

# cronjob NS NAME SCHEDULE [EXTRA SPEC LINES]
cronjob() {
  kubectl apply -n "$1" -f - >/dev/null <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata:
  name: $2
spec:
  schedule: "$3"
${4:-}
  jobTemplate:
    metadata:
      labels: {made-by: cron}
    spec:
      tasks:
      - name: main
        replicas: 1
        template:
          spec:
            containers: [{name: c, image: busybox}]
YAML
}

jobs_of() { # NS CRONJOB: names of its Jobs
  kubectl get vcjob -n "$1" -o json | jq -r --arg c "$2" \
    '.items[] | select(.metadata.ownerReferences[0].name == $c) | .metadata.name'
}
count_jobs() { jobs_of "$1" "$2" | grep -c . || true; }
has_event() { # NS REASON [MESSAGE REGEX]
  kubectl get events -n "$1" -o json | jq -e --arg r "$2" --arg m "${3:-}" \
    '[.items[] | select(.reason == $r and (.message | test($m)))] | length > 0' >/dev/null
}
# finish NS JOB PHASE: what the job controller would write when the Job ends.
finish() {
  kubectl patch vcjob -n "$1" "$2" --subresource=status --type=merge -p \
    "{\"status\":{\"state\":{\"phase\":\"$3\",\"lastTransitionTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}}" \
    >/dev/null
}
finish_all() { # NS CRONJOB PHASE: finish every unfinished Job; prints how many
  local j n=0
  for j in $(kubectl get vcjob -n "$1" -o json | jq -r --arg c "$2" '.items[] |
      select(.metadata.ownerReferences[0].name == $c and
             ((.status.state.phase // "") | test("Completed|Failed") | not)) | .metadata.name'); do
    finish "$1" "$j" "$3" && n=$((n + 1))
  done
  echo "$n"
}

test_every_minute_creates_jobs_and_keeps_the_history() {
  local ns seen=0 deadline
  ns=$(new_namespace cron-every)
  cronjob "$ns" every "* * * * *" "  successfulJobsHistoryLimit: 2
  failedJobsHistoryLimit: 1"
  wait_for 30 "a first Job" bash -c "[ \$(kubectl get vcjob -n $ns --no-headers 2>/dev/null | wc -l) -ge 1 ]"
  local j
  j=$(jobs_of "$ns" every | head -1)
  expect_match '^every-[0-9]+$' "$j" "job name <cronjob>-<minutes>"
  expect_eq "cron" "$(jsonpath "vcjob/$j" '{.metadata.labels.made-by}' "$ns")" "template label"
  expect_match '^20[0-9-]+T[0-9:]+Z$' \
    "$(jsonpath "vcjob/$j" '{.metadata.annotations.volcano\.sh/cronjob-scheduled-timestamp}' "$ns")" \
    "scheduled-timestamp annotation"
  expect_eq "true" "$(jsonpath "vcjob/$j" '{.metadata.ownerReferences[0].controller}' "$ns")" "controller ref"
  # Finish each Job as it comes: one per (fast) minute, and at most 2 completed ones stay.
  deadline=$((SECONDS + 60))
  while [ "$seen" -lt 5 ]; do
    [ $SECONDS -lt $deadline ] || fail "only $seen Jobs finished in 60 s"
    seen=$((seen + $(finish_all "$ns" every Completed)))
    sleep 0.3
  done
  wait_for 20 "history limit of 2 completed" bash -c \
    "[ \$(kubectl get vcjob -n $ns -o json | jq '[.items[] | select(.status.state.phase == \"Completed\")] | length') -le 2 ]"
  [ -n "$(jsonpath cronvj/every '{.status.lastScheduleTime}' "$ns")" ] || fail "no lastScheduleTime"
  [ -n "$(jsonpath cronvj/every '{.status.lastSuccessfulTime}' "$ns")" ] || fail "no lastSuccessfulTime"
  has_event "$ns" SuccessfulCreate "^Created job every-[0-9]+ for CronJob $ns/every$" || fail "no SuccessfulCreate"
  has_event "$ns" SawCompletedJob "^Saw completed job: every-[0-9]+ in active, remove$" || fail "no SawCompletedJob"
  # A failed Job: one is kept (failedJobsHistoryLimit 1).
  wait_for 20 "another Job" bash -c "[ \$(kubectl get vcjob -n $ns -o json | jq '[.items[] | select((.status.state.phase // \"\") == \"\")] | length') -ge 1 ]"
  finish_all "$ns" every Failed >/dev/null
  wait_for 20 "another Job" bash -c "[ \$(kubectl get vcjob -n $ns -o json | jq '[.items[] | select((.status.state.phase // \"\") == \"\")] | length') -ge 1 ]"
  finish_all "$ns" every Failed >/dev/null
  wait_for 20 "history limit of 1 failed" bash -c \
    "[ \$(kubectl get vcjob -n $ns -o json | jq '[.items[] | select(.status.state.phase == \"Failed\")] | length') -eq 1 ]"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_forbid_skips_while_one_runs() {
  local ns
  ns=$(new_namespace cron-forbid)
  cronjob "$ns" forbid "* * * * *" "  concurrencyPolicy: Forbid"
  wait_for 30 "ForbidConcurrent" has_event "$ns" ForbidConcurrent \
    "^Skipping job creation because another job is already running$"
  expect_eq 1 "$(count_jobs "$ns" forbid)" "Jobs while the first still runs"
  expect_eq 1 "$(jsonpath cronvj/forbid '{.status.active[*].name}' "$ns" | wc -w)" "active list"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_replace_replaces_the_running_one() {
  local ns first
  ns=$(new_namespace cron-replace)
  cronjob "$ns" replace "* * * * *" "  concurrencyPolicy: Replace"
  # Replace deletes the running Job before it creates the next, so a moment may hold none:
  # wait for a name, not for a count read a moment earlier.
  local deadline=$((SECONDS + 30))
  until first=$(jobs_of "$ns" replace | head -1) && [ -n "$first" ]; do
    [ $SECONDS -lt $deadline ] || fail "timed out after 30s waiting for a first Job"
    sleep 0.2
  done
  wait_for 30 "ReplaceConcurrent" has_event "$ns" ReplaceConcurrent "^Replacing active job for CronJob$"
  wait_for 30 "$first replaced" bash -c "! kubectl get vcjob -n $ns $first >/dev/null 2>&1 && [ \$(kubectl get vcjob -n $ns --no-headers 2>/dev/null | wc -l) -ge 1 ]"
  # Volcano's deletion event (its reason reads FailedDelete for a success).
  has_event "$ns" FailedDelete "^Deleted job \"$first\"$" || fail "no deletion event for $first"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_suspended_and_bad_zone() {
  local ns
  ns=$(new_namespace cron-susp)
  cronjob "$ns" suspended "* * * * *" "  suspend: true"
  cronjob "$ns" zone "* * * * *" "  timeZone: Mars/Olympus"
  cronjob "$ns" witness "* * * * *"
  wait_for 30 "InvalidTimeZone" has_event "$ns" InvalidTimeZone \
    '^Invalid time zone "Mars/Olympus": unknown time zone Mars/Olympus$'
  # Three (fast) minutes pass for the suspended one: nothing is created. A CronJob created
  # after it with the same schedule shows they have passed (its third Job).
  wait_for 30 "three Jobs of the witness" bash -c "[ \$(kubectl get vcjob -n $ns -o name | grep -c /witness-) -ge 3 ]"
  expect_eq 0 "$(count_jobs "$ns" suspended)" "Jobs of a suspended CronJob"
  expect_eq 0 "$(count_jobs "$ns" zone)" "Jobs of a CronJob with a bad zone"
  # Resuming it starts it.
  kubectl patch cronvj -n "$ns" suspended --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
  wait_for 30 "a Job once resumed" bash -c "kubectl get vcjob -n $ns -o name | grep -q /suspended-"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_schedule_and_zone_refused_at_admission() {
  local ns out
  ns=$(new_namespace cron-adm)
  out=$(cronjob "$ns" bad "61 * * * *" 2>&1) && fail "a minute of 61 was accepted"
  out=$(kubectl apply -n "$ns" -f - 2>&1 <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: bad}
spec:
  schedule: "TZ=UTC 0 * * * *"
  timeZone: Local
  jobTemplate:
    spec:
      tasks: [{name: m, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]
YAML
  ) && fail "TZ= and Local were accepted"
  expect_match "schedule should not contain TZ or CRON_TZ" "$out" "TZ in schedule"
  expect_match "timeZone can't be Local" "$out" "Local zone"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

apply_crds || {
  echo "FAIL cronjob/setup: cannot install the CRDs"
  exit 1
}
start_controller
e2e_main "$@"
