#!/usr/bin/env bash
# jobflow-controller and jobtemplate-controller against the real control plane, with the job
# controller and kiln-scheduler running the Jobs on kwok nodes (each pod exits 0 after 1 s):
# a diamond a -> (b, c) -> d runs in dependency order and reports each Job's phase; the
# JobTemplates list their Jobs; jobRetainPolicy delete removes the Jobs once the flow has
# succeeded; a cycle or an undefined target fails the flow with Volcano's webhook message.
source "$(dirname "$0")/lib.sh"
SUITE=jobflow
D=$KILN_CLUSTER_DIR
mkdir -p "$D/logs" "$D/pids"

start() { # NAME BINARY ARGS...
  local name=$1 bin=$2
  shift 2
  "$bin" --kubeconfig "$KUBECONFIG" --leader-elect=false "$@" >"$D/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name.pid"
  echo "$bin" >"$D/pids/$name.exe"
}

setup() {
  apply_crds || return 1
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null || return 1
  kubectl get namespace volcano-system >/dev/null 2>&1 || kubectl create namespace volcano-system >/dev/null
  # A node of the suite's own: pods that earlier suites' namespaces still hold as they go away
  # can fill the shared nodes ("Too many pods" was seen right after the controller suite).
  group_nodes jflow 1 2>/dev/null
  start kiln-controller-flow "$KILN_BUILD/controller/kiln-controller" -v=2 \
    --kube-api-qps=200 --kube-api-burst=400
  start kiln-scheduler-flow "$KILN_BUILD/scheduler/kiln-scheduler" -v=2
}

template() { # NS NAME
  kubectl apply -n "$1" -f - >/dev/null <<YAML
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata:
  name: $2
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations: {kwok.kiln.dev/run-for: "1s"}
      spec:
        nodeSelector: {grp: jflow}
        restartPolicy: Never
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: 100m, memory: 64Mi}}
YAML
}

phase_of() { jsonpath "vcjob/$2" '{.status.state.phase}' "$1"; }

# diag NS: what the flows, Jobs and pods of NS look like (printed when a wait fails).
diag() {
  {
    kubectl get jf,vcjob,podgroups,pods -n "$1" -o wide
    kubectl get events -n "$1" --sort-by=.lastTimestamp | tail -15
  } 2>&1 | sed 's/^/      /' >&2
}

# watch_order NS FLOW DEPS...: DEPS are "job:dep1,dep2"; every Job, when first seen, must find
# its dependencies Completed already; returns once all have been seen.
watch_order() {
  local ns=$1 flow=$2
  shift 2
  local -A seen=()
  local deadline=$((SECONDS + 90)) spec job deps d
  while [ ${#seen[@]} -lt $# ]; do
    [ $SECONDS -lt $deadline ] || fail "only saw Jobs: ${!seen[*]}"
    for spec in "$@"; do
      job=${spec%%:*}
      deps=${spec#*:}
      [ -z "${seen[$job]:-}" ] || continue
      kubectl get vcjob -n "$ns" "$flow-$job" >/dev/null 2>&1 || continue
      for d in ${deps//,/ }; do
        expect_eq Completed "$(phase_of "$ns" "$flow-$d")" "$flow-$d when $flow-$job appeared"
      done
      seen[$job]=1
      echo "    $flow-$job appeared" >&2
    done
    sleep 0.2
  done
}

test_diamond_runs_in_order_and_reports_phases() {
  local ns t
  ns=$(new_namespace flow-diamond)
  for t in a b c d; do template "$ns" "$t"; done
  trap 'diag "$ns"' EXIT
  kubectl apply -n "$ns" -f - >/dev/null <<'YAML'
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: diamond
spec:
  jobRetainPolicy: retain
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a]}
  - name: c
    dependsOn: {targets: [a]}
  - name: d
    dependsOn: {targets: [b, c]}
YAML
  watch_order "$ns" diamond "a:" "b:a" "c:a" "d:b,c"
  wait_jsonpath 90 jf/diamond '{.status.state.phase}' Succeed "$ns"
  expect_eq "diamond-a diamond-b diamond-c diamond-d" \
    "$(jsonpath jf/diamond '{.status.completedJobs[*]}' "$ns" | tr ' ' '\n' | sort | xargs)" "completedJobs"
  expect_eq "Completed Completed Completed Completed" \
    "$(jsonpath jf/diamond '{.status.jobStatusList[*].state}' "$ns")" "jobStatusList states"
  expect_eq "Completed" "$(jsonpath jf/diamond '{.status.conditions.diamond-d.phase}' "$ns")" "condition of d"
  [ -n "$(jsonpath jf/diamond '{.status.jobStatusList[0].runningHistories[0].startTimestamp}' "$ns")" ] ||
    fail "no running history"
  expect_eq "Succeed" "$(kubectl get jf -n "$ns" diamond --no-headers | awk '{print $2}')" "Status column"
  # The Jobs carry Volcano's labels and a controller reference to the flow.
  expect_eq "$ns.b" "$(jsonpath vcjob/diamond-b '{.metadata.labels.volcano\.sh/createdByJobTemplate}' "$ns")" "template label"
  expect_eq "$ns.diamond" "$(jsonpath vcjob/diamond-b '{.metadata.annotations.volcano\.sh/createdByJobFlow}' "$ns")" "flow annotation"
  expect_eq "JobFlow" "$(jsonpath vcjob/diamond-b '{.metadata.ownerReferences[0].kind}' "$ns")" "owner"
  # Events and the templates' lists; retain keeps the Jobs.
  kubectl get events -n "$ns" --field-selector reason=Created -o jsonpath='{.items[*].message}' |
    grep -q 'create a job named diamond-d!' || fail "no Created event for diamond-d"
  wait_jsonpath 30 jt/b '{.status.jobDependsOnList[*]}' diamond-b "$ns"
  expect_eq 4 "$(kubectl get vcjob -n "$ns" --no-headers | wc -l)" "Jobs kept (retain)"
  trap - EXIT
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_retain_delete_removes_jobs_on_success() {
  local ns
  ns=$(new_namespace flow-delete)
  template "$ns" first
  template "$ns" second
  kubectl apply -n "$ns" -f - >/dev/null <<'YAML'
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: tidy
spec:
  jobRetainPolicy: delete
  flows:
  - name: first
  - name: second
    dependsOn: {targets: [first]}
YAML
  trap 'diag "$ns"' EXIT
  wait_for 90 "tidy-second" kubectl get vcjob -n "$ns" tidy-second
  wait_jsonpath 90 jf/tidy '{.status.state.phase}' Succeed "$ns"
  wait_for 30 "the Jobs deleted" bash -c "[ \$(kubectl get vcjob -n $ns --no-headers 2>/dev/null | wc -l) -eq 0 ]"
  trap - EXIT
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_cycle_and_undefined_target_are_refused() {
  local ns
  ns=$(new_namespace flow-cycle)
  # The controller's own check, for a JobFlow created while the kiln-jobflow admission policy
  # (which refuses both at create, tested by the manifests suite) is not installed.
  kubectl delete validatingadmissionpolicybinding kiln-jobflow --ignore-not-found >/dev/null
  wait_for 30 "the kiln-jobflow policy to be out of force" kubectl create --dry-run=server -n "$ns" \
    -f "$E2E_DIR/manifests-invalid/jobflow-cycle.yaml"
  for t in a b c; do template "$ns" "$t"; done
  kubectl apply -n "$ns" -f - >/dev/null <<'YAML'
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: loop
spec:
  flows:
  - name: a
    dependsOn: {targets: [c]}
  - name: b
    dependsOn: {targets: [a]}
  - name: c
    dependsOn: {targets: [b]}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: dangling
spec:
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [x]}
YAML
  wait_jsonpath 30 jf/loop '{.status.state.phase}' Failed "$ns"
  wait_jsonpath 30 jf/dangling '{.status.state.phase}' Failed "$ns"
  local msgs
  msgs=$(kubectl get events -n "$ns" --field-selector reason=InvalidJobFlow -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  # Volcano's webhook messages, whole lines.
  echo "$msgs" | grep -qx 'jobflow Flow is not DAG' || fail "cycle message: got '$msgs'"
  echo "$msgs" | grep -qx 'jobflow Flow is not DAG: vertex is not defined: x' ||
    fail "undefined target message: got '$msgs'"
  expect_eq 0 "$(kubectl get vcjob -n "$ns" --no-headers 2>/dev/null | wc -l)" "Jobs of refused flows"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# After every test: the controller survived it (a crash after a test's last wait, as a status
# write-through freed twice once did, would otherwise pass unseen). A check after each test
# rather than a test named to run last, so that tests run in any order and a crash is blamed
# on the test that caused it.
after_each() {
  local pid
  pid=$(cat "$D/pids/kiln-controller-flow.pid")
  kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ] || fail "kiln-controller exited: $(tail -5 "$D/logs/kiln-controller-flow.log")"
  ! grep -E 'AddressSanitizer|runtime error:|corrupted' "$D/logs/kiln-controller-flow.log" >&2 ||
    fail "kiln-controller reported memory errors"
}

setup || {
  echo "FAIL jobflow/setup: cannot install the CRDs"
  exit 1
}
e2e_main "$@"
rc=$?
kubectl delete nodes -l grp=jflow --wait=false >/dev/null 2>&1
exit $rc
