#!/usr/bin/env bash
# vcctl against the real control plane, with kiln-controller and kiln-scheduler running so the
# jobs it submits run, its suspend/resume Commands are carried out and a gang that cannot fit
# has a reason to show. Every name the tool answers to is tried: vcctl, the kubectl plugin
# (`kubectl vcctl`) and the Volcano shortcuts, which are one binary read by argv[0].
# shellcheck shell=bash
SUITE=vcctl
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$KILN_CLUSTER_DIR
VCCTL=$KILN_BUILD/cli/vcctl
CTRL=$KILN_BUILD/controller/kiln-controller
SCHED=$KILN_BUILD/scheduler/kiln-scheduler
mkdir -p "$D/logs" "$D/pids" "$D/vcctl-bin"
for n in vcctl kubectl-vcctl vsub vjobs vqueues vsuspend vresume vcancel; do
  ln -sf "$VCCTL" "$D/vcctl-bin/$n"
done
export PATH="$D/vcctl-bin:$PATH"

start() { # NAME BINARY ARGS...: the health server on a port the kernel picks (served_port)
  local name=$1 bin=$2
  shift 2
  "$bin" --kubeconfig "$KUBECONFIG" --leader-elect=false --enable-healthz \
    --healthz-address 127.0.0.1:0 "$@" >"$D/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name.pid"
  echo "$bin" >"$D/pids/$name.exe" # tests/cluster/down checks it before a kill
}

ready() { curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1; }

phase() { jsonpath "vcjob/$2" '{.status.state.phase}' "$1"; }

# run_vc WANT_STATUS COMMAND...: run a vcctl command, keep its output in $OUT, check its status.
run_vc() {
  local want=$1 st=0
  shift
  OUT=$("$@" 2>&1) || st=$?
  [ "$st" = "$want" ] || fail "$*: exit status $st, want $want; output: $OUT"
}

# ---- tests ----

test_job_run_list_view() {
  local ns
  ns=$(new_namespace vc1)
  run_vc 0 vcctl job run -n "$ns" -N train -r 2 -m 2 -R cpu=100m,memory=64Mi -L cpu=100m,memory=64Mi
  expect_eq "run job train successfully" "$OUT" "run output"
  expect_eq "2" "$(jsonpath vcjob/train '{.spec.tasks[0].replicas}' "$ns")" "replicas"
  expect_eq "100m" "$(jsonpath vcjob/train '{.spec.tasks[0].template.spec.containers[0].resources.requests.cpu}' "$ns")" "requests"
  wait_jsonpath 90 vcjob/train '{.status.state.phase}' Running "$ns"
  run_vc 0 vcctl job list -n "$ns"
  expect_match '^Name +Creation +Phase +JobType +Replicas +Min +Pending +Running +Succeeded +Failed +Unknown +RetryCount' "$OUT" "list header"
  expect_match $'\ntrain +[0-9-]{10} +Running +Batch +2 +2 +0 +2 +0 +0 +0 +0' "$OUT" "list row"
  # The kubectl plugin is the same tool.
  run_vc 0 kubectl vcctl job list --all-namespaces --selector trai
  expect_match "$ns +train +[0-9-]{10} +Running" "$OUT" "kubectl vcctl, all namespaces"
  run_vc 0 vcctl job list -n "$ns" --selector nomatch
  expect_eq "No resources found" "$OUT" "filtered list"
  run_vc 0 vcctl job view -n "$ns" -N train
  expect_match $'Name:       \ttrain\nNamespace:  \t'"$ns" "$OUT" "view head"
  expect_match $'Phase:\tRunning' "$OUT" "view phase"
  expect_match $'Cpu:   \t100m' "$OUT" "view requests"
  [[ "$OUT" != *"Why Pending"* ]] || fail "a running job has a why-pending line: $OUT"
  run_vc 0 vcctl pod list -n "$ns" -j train
  expect_match '^Name +Ready +Status +Restart +Age' "$OUT" "pod header"
  expect_eq 2 "$(echo "$OUT" | grep -c '^train-.* Running ')" "running pods listed"
  run_vc 0 vjobs -N "$ns"
  expect_match $'\ntrain ' "$OUT" "vjobs without a name lists"
}

test_job_run_from_file_and_shortcut() {
  local ns f
  ns=$(new_namespace vc2)
  f=$D/vcctl-job.yaml
  cat >"$f" <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: fromfile
  labels: {volcano.sh/job-type: Mpi}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - replicas: 1
    name: main
    template:
      spec:
        restartPolicy: Never
        containers:
        - {name: c, image: busybox, resources: {requests: {cpu: "100m"}}}
EOF
  run_vc 0 vcctl job run -n "$ns" -f "$f"
  expect_eq "run job fromfile successfully" "$OUT" "run -f output"
  run_vc 255 vcctl job run -n "$ns" -f "$D/job.json"
  expect_eq "Failed to run job: only support yaml file" "$OUT" "non-yaml file"
  run_vc 0 vsub -N "$ns" -n shortcut -c "sh -c 'sleep 1000'" -R cpu=100m -L cpu=100m
  expect_eq "run job shortcut successfully" "$OUT" "vsub output"
  expect_eq "sh|-c|sleep 1000" "$(jsonpath vcjob/shortcut '{.spec.tasks[0].template.spec.containers[0].command[0]}|{.spec.tasks[0].template.spec.containers[0].command[1]}|{.spec.tasks[0].template.spec.containers[0].command[2]}' "$ns")" "vsub command"
  wait_jsonpath 90 vcjob/fromfile '{.status.state.phase}' Running "$ns"
  run_vc 0 vcctl job list -n "$ns"
  expect_match $'\nfromfile +[0-9-]{10} +Running +Mpi +1 +1' "$OUT" "job type label"
}

test_suspend_resume() {
  local ns
  ns=$(new_namespace vc3)
  run_vc 0 vcctl job run -n "$ns" -N sr -R cpu=100m,memory=64Mi -L cpu=100m,memory=64Mi
  wait_jsonpath 90 vcjob/sr '{.status.state.phase}' Running "$ns"
  run_vc 0 vcctl job suspend -n "$ns" -N sr
  expect_eq "" "$OUT" "suspend prints nothing (as Volcano's)"
  wait_jsonpath 90 vcjob/sr '{.status.state.phase}' Aborted "$ns"
  # The controller consumed vcctl's Command: it says so on the job.
  local ev
  ev=$(kubectl get events -n "$ns" --field-selector involvedObject.name=sr -o 'jsonpath={range .items[*]}{.reason} {.message}{"\n"}{end}')
  expect_match 'CommandIssued Start to execute command AbortJob' "$ev" "AbortJob event"
  run_vc 0 vresume -N "$ns" -n sr
  wait_jsonpath 90 vcjob/sr '{.status.state.phase}' Running "$ns"
  ev=$(kubectl get events -n "$ns" --field-selector involvedObject.name=sr -o 'jsonpath={range .items[*]}{.reason} {.message}{"\n"}{end}')
  expect_match 'CommandIssued Start to execute command ResumeJob' "$ev" "ResumeJob event"
  run_vc 255 vcctl job suspend -n "$ns"
  expect_eq "Failed to suspend job: job name is mandatory to suspend a particular job" "$OUT" "no name"
  run_vc 255 vsuspend -N "$ns" -n nosuch
  expect_eq "Failed to: jobs.batch.volcano.sh \"nosuch\" not found" "$OUT" "unknown job"
}

test_why_pending() {
  local ns uid
  ns=$(new_namespace vc4)
  # No kwok node has 500 CPUs: the gang cannot be placed.
  run_vc 0 vcctl job run -n "$ns" -N huge -r 2 -m 2 -R cpu=500 -L cpu=500
  uid=$(jsonpath vcjob/huge '{.metadata.uid}' "$ns")
  wait_for 60 "the PodGroup" kubectl get podgroup -n "$ns" "huge-$uid"
  # The scheduler's reason reaches the PodGroup; vcctl job view quotes it.
  wait_for 90 "a reason on the PodGroup" bash -c \
    "kubectl get podgroup -n $ns huge-$uid -o jsonpath='{.status.conditions[*].status}' | grep -q True"
  run_vc 0 vcctl job view -n "$ns" -N huge
  expect_match $'Phase:\tPending' "$OUT" "phase"
  local want="Why Pending:.*\\(PodGroup huge-$uid is [A-Za-z]+: Unschedulable, reason [A-Za-z]+\\)"
  expect_match "$want" "$OUT" "why pending"
  local msg
  msg=$(kubectl get podgroup -n "$ns" "huge-$uid" -o 'jsonpath={.status.conditions[?(@.type=="Unschedulable")].message}')
  [ -n "$msg" ] && [[ "$OUT" == *"$msg"* ]] || fail "view does not quote the condition '$msg': $OUT"
  echo "    $(echo "$OUT" | grep 'Why Pending')" >&2
}

test_delete_and_cancel() {
  local ns
  ns=$(new_namespace vc5)
  run_vc 0 vcctl job run -n "$ns" -N d1 -R cpu=100m -L cpu=100m
  run_vc 0 vsub -N "$ns" -n d2 -R cpu=100m -L cpu=100m
  run_vc 0 vcctl job delete -n "$ns" -N d1
  expect_eq "delete job d1 successfully" "$OUT" "delete output"
  run_vc 0 vcancel -N "$ns" -n d2
  expect_eq "cancel job d2 successfully" "$OUT" "vcancel output"
  wait_for 30 "jobs gone" bash -c "[ -z \"\$(kubectl get vcjob -n $ns -o name)\" ]"
  run_vc 255 vcctl job delete -n "$ns" -N d1
  expect_eq "Failed to delete job: jobs.batch.volcano.sh \"d1\" not found" "$OUT" "second delete"
  run_vc 255 vcctl job view -n "$ns"
  expect_eq "Failed to view job: job name (specified by --name or -N) is mandatory to view a particular job" "$OUT" "view without a name"
}

queue_state_is() { # QUEUE STATE: the queue controller has carried out vcctl's Command
  [ "$(jsonpath "queue/$1" '{.status.state}')" = "$2" ]
}

test_queue_create_list_get_operate_delete() {
  local q
  q=vcq-$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
  run_vc 0 vcctl queue create -n "$q" -w 3
  expect_eq "" "$OUT" "create prints nothing"
  expect_eq 3 "$(jsonpath "queue/$q" '{.spec.weight}')" "weight"
  run_vc 0 vcctl queue list
  expect_match '^Name +Weight +State +Inqueue +Pending +Running +Unknown +Completed' "$OUT" "list header"
  expect_match $'\n'"$q"' +3 ' "$OUT" "list row"
  expect_match $'\ndefault +1 ' "$OUT" "default queue row"
  run_vc 0 vcctl queue get -n "$q"
  expect_match '^Name +Weight +State +Parent +Inqueue' "$OUT" "get header"
  expect_match $'\n'"$q"' +3 ' "$OUT" "get row"
  run_vc 0 vqueues -n "$q"
  expect_match $'\n'"$q"' +3 ' "$OUT" "vqueues"
  run_vc 0 vcctl queue operate -n "$q" -a update -w 5
  expect_eq 5 "$(jsonpath "queue/$q" '{.spec.weight}')" "updated weight"
  # The queue has no PodGroups, so the queue controller takes it straight to Closed; open
  # brings it back. Both go through the Commands vcctl creates.
  run_vc 0 vcctl queue operate -n "$q" -a close
  wait_for 30 "queue $q closed by its CloseQueue Command" queue_state_is "$q" Closed
  run_vc 0 vcctl queue operate -n "$q" -a open
  wait_for 30 "queue $q open again by its OpenQueue Command" queue_state_is "$q" Open
  run_vc 255 vcctl queue operate -n "$q" -a pause
  expect_eq "Failed to operate queue: Action pause invalid, valid actions are open, close and update" "$OUT" "bad action"
  run_vc 0 vcctl queue delete -n "$q"
  wait_for 30 "queue deleted" bash -c "! kubectl get queue $q"
  run_vc 255 vcctl queue get -n "$q"
  expect_eq "Failed to get queue: queues.scheduling.volcano.sh \"$q\" not found" "$OUT" "get after delete"
}

flow_files() { # NS: two JobTemplates in one file, and a JobFlow over them
  cat >"$D/vcctl-jt.yaml" <<EOF
# two templates in one file
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: step-a, namespace: $1}
spec:
  minAvailable: 1
  tasks:
  - {name: main, replicas: 1, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: step-b, namespace: $1}
spec:
  minAvailable: 1
  tasks:
  - {name: main, replicas: 1, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}
EOF
  cat >"$D/vcctl-jf.yaml" <<EOF
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: flow1, namespace: $1}
spec:
  jobRetainPolicy: retain
  flows:
  - name: step-a
  - name: step-b
    dependsOn: {targets: [step-a]}
EOF
}

describe_matches() { # JSON-FILE YAML-FILE: the two describe outputs are the same JobFlow
  python3 - "$1" "$2" <<'EOF'
import json, sys, yaml
j = json.load(open(sys.argv[1]))
y = yaml.safe_load(open(sys.argv[2]))
assert j["kind"] == "JobFlow" and j["metadata"]["name"] == "flow1", j
assert "managedFields" not in j["metadata"]
assert j["spec"]["flows"][1]["dependsOn"]["targets"] == ["step-a"]
assert j == y, (j, y)
EOF
}

test_jobflow_and_jobtemplate() {
  local ns nl=$'\n'
  ns=$(new_namespace vc6)
  flow_files "$ns"
  run_vc 0 vcctl jobtemplate create -f "$D/vcctl-jt.yaml"
  expect_eq "Created JobTemplate: $ns/step-a${nl}Created JobTemplate: $ns/step-b" "$OUT" "jobtemplate create"
  run_vc 0 vcctl jobflow create -f "$D/vcctl-jf.yaml"
  expect_eq "Created JobFlow: $ns/flow1" "$OUT" "jobflow create"
  run_vc 255 vcctl jobflow create -f "$D/vcctl-jf.yaml"
  expect_eq "Failed to create jobflow: create JobFlow $ns/flow1: jobflows.flow.volcano.sh \"flow1\" already exists" "$OUT" "second create"
  run_vc 0 vcctl jobtemplate list -n "$ns"
  expect_match "^Name +Namespace *${nl}step-a +$ns *${nl}step-b +$ns" "$OUT" "jobtemplate list"
  run_vc 0 vcctl jobflow list -n "$ns"
  expect_match "^Name +Namespace +Phase +Age *${nl}flow1 +$ns +[A-Za-z]* +[0-9]+s" "$OUT" "jobflow list"
  run_vc 0 vcctl jobflow get -n "$ns" -N flow1
  expect_match "${nl}flow1 +$ns" "$OUT" "jobflow get"
  # The flow runs on while the two describes are taken: compare a pair that read the same
  # version of it (its status moves as step-a starts).
  local try
  for try in 1 2 3 4 5; do
    run_vc 0 vcctl jobflow describe -n "$ns" -N flow1 -o json
    echo "$OUT" >"$D/vcctl-jf.json"
    run_vc 0 vcctl jobflow describe -n "$ns" -N flow1
    echo "$OUT" >"$D/vcctl-jf-out.yaml"
    [ "$(jq -r .metadata.resourceVersion "$D/vcctl-jf.json")" != \
      "$(sed -n 's/^  resourceVersion: "*\([0-9]*\)"*$/\1/p' "$D/vcctl-jf-out.yaml")" ] || break
  done
  describe_matches "$D/vcctl-jf.json" "$D/vcctl-jf-out.yaml" || fail "describe: json and yaml differ or are wrong"
  run_vc 0 vcctl jobtemplate describe -n "$ns"
  expect_match "${nl}---------------------------------${nl}" "$OUT" "describe of every template, separated"
  run_vc 0 vcctl jobflow delete -n "$ns" -N flow1
  expect_eq "Deleted JobFlow: $ns/flow1" "$OUT" "jobflow delete"
  run_vc 0 vcctl jobtemplate delete -f "$D/vcctl-jt.yaml"
  expect_eq "Deleted JobTemplate: $ns/step-a${nl}Deleted JobTemplate: $ns/step-b" "$OUT" "jobtemplate delete -f"
  run_vc 255 vcctl jobflow get -n "$ns" -N flow1
  expect_eq "Failed to get jobflow: jobflows.flow.volcano.sh \"flow1\" not found" "$OUT" "get after delete"
  run_vc 255 vcctl jobflow delete -n "$ns"
  expect_eq "Failed to delete jobflow: jobflow name must be specified" "$OUT" "delete without a name"
}

test_bad_command_lines() {
  run_vc 1 vcctl job list --bogus
  expect_match '^Error: unknown flag: --bogus' "$OUT" "unknown flag"
  run_vc 1 vcctl jobs list
  expect_match '^Error: unknown command "jobs" for "vcctl"' "$OUT" "unknown command"
  run_vc 255 vcctl job run -N x -R cpu
  expect_eq "Failed to run job: invalid argument syntax cpu, expected <resource>=<value>" "$OUT" "bad requests"
  run_vc 255 vcctl job list --kubeconfig "$D/no-such-kubeconfig"
  expect_match '^Failed to list job: .*no-such-kubeconfig' "$OUT" "missing kubeconfig"
  run_vc 0 vcctl --help
  expect_match 'queue operate' "$OUT" "help"
}

# ---- setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
for _ in $(seq 1 60); do # a CRD just created may have no conditions yet, which wait refuses
  kubectl wait --for=condition=Established --timeout=5s crd --all >/dev/null 2>&1 && break
  sleep 0.5
done
kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
kubectl create namespace volcano-system >/dev/null 2>&1 || true
start kiln-controller "$CTRL"
start kiln-scheduler "$SCHED"
CTL_HEALTH=$(served_port "$D/logs/kiln-controller.log" healthz)
SCH_HEALTH=$(served_port "$D/logs/kiln-scheduler.log" healthz)
for _ in $(seq 1 300); do
  ready "$CTL_HEALTH" && ready "$SCH_HEALTH" && break
  sleep 0.2
done
e2e_main "$@"
