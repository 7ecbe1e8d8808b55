# Shared helpers for the end-to-end suites. A suite is tests/e2e/test_*.sh; tests/e2e/run
# starts one real control plane, then runs each suite with KUBECONFIG, KILN_BUILD (the meson
# build directory), KILN_CLUSTER_DIR and KILN_BIN (cached control-plane binaries) set.
# A suite defines functions named test_* (and maybe before_each, after_each, finally_*: see
# e2e_main) and ends with `e2e_main "$@"`; each test runs in its own subshell, in any order,
# and prints one line "PASS name" or "FAIL name: why"; a passing test's lines that start with
# "REPORT " follow its PASS line (counts, figures). Tests wait on conditions (wait_for,
# wait_jsonpath, wait_sessions), never on a fixed sleep.
# shellcheck shell=bash

set -uo pipefail

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KILN_ROOT=$(cd "$E2E_DIR/../.." && pwd)
: "${KILN_BUILD:=$KILN_ROOT/build}"
export PATH="${KILN_BIN:+$KILN_BIN:}$PATH"

# fail MESSAGE: end the current test as failed.
fail() {
  echo "    $*" >&2
  exit 1
}

# expect_eq WANT GOT [WHAT]
expect_eq() {
  [ "$1" = "$2" ] || fail "${3:-value}: want '$1', got '$2'"
}

# expect_match REGEX TEXT [WHAT]
expect_match() {
  [[ "$2" =~ $1 ]] || fail "${3:-text}: want match for /$1/, got '$2'"
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds, or fail.
wait_for() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out after ${secs}s waiting for $what"
    sleep 0.2
  done
}

# jsonpath KIND/NAME EXPR [NAMESPACE]
jsonpath() {
  kubectl get "$1" ${3:+-n "$3"} -o "jsonpath=$2" 2>/dev/null
}

# wait_jsonpath SECONDS KIND/NAME EXPR WANT [NAMESPACE]: poll until the jsonpath equals WANT.
wait_jsonpath() {
  local secs=$1 res=$2 expr=$3 want=$4 ns=${5:-} got=""
  local deadline=$((SECONDS + secs))
  while :; do
    got=$(jsonpath "$res" "$expr" "$ns")
    [ "$got" = "$want" ] && return 0
    [ $SECONDS -lt $deadline ] || fail "timed out after ${secs}s waiting for $res $expr = '$want' (last: '$got')"
    sleep 0.2
  done
}

# Ports. Two `tests/e2e/run` on one machine must not collide, so no suite names a fixed port:
# a Kiln process gets `--healthz-address 127.0.0.1:0` (and `--listen-address 127.0.0.1:0`),
# the kernel picks a free port at bind time, and served_port reads it back from the log line
# the process writes once it listens (a port picked free beforehand could be taken by the time
# the process binds it).

# served_port LOG KIND [FROM]: the port of the KIND server (metrics: the one that serves
# /metrics; healthz: one that does not) that the process logging to LOG reported after the
# first FROM lines of LOG (give the line count before a restart); waits up to 60 s.
served_port() {
  local log=$1 kind=$2 from=${3:-0} deadline=$((SECONDS + 60)) lines port
  while :; do
    lines=$(tail -n +"$((from + 1))" "$log" 2>/dev/null | grep -E 'serving /healthz.* \(port [0-9]+\)')
    if [ "$kind" = metrics ]; then
      lines=$(grep -F ', /metrics on ' <<<"$lines")
    else
      lines=$(grep -vF ', /metrics on ' <<<"$lines")
    fi
    port=$(sed -n 's/.* (port \([0-9]*\))$/\1/p' <<<"$lines" | tail -1)
    [ -z "$port" ] || { echo "$port"; return 0; }
    [ $SECONDS -lt $deadline ] || fail "no $kind port in $log after 60s: $(tail -3 "$log" 2>/dev/null)"
    sleep 0.1
  done
}

# session_count [PORT]: the sessions the kiln-scheduler whose metrics server is on PORT
# (default $METRICS_PORT) has run, from its open-session histogram; 0 when unreachable. awk
# reads to the end: with pipefail, a curl cut off by an early exit would fail the caller.
session_count() {
  curl -s "http://127.0.0.1:${1:-$METRICS_PORT}/metrics" |
    awk '$1 == "volcano_open_session_duration_milliseconds_count" {n = $2} END {print n + 0}'
}

# wait_sessions N [PORT]: wait until that scheduler has run N more sessions (up to 90 s). To
# show that something does NOT happen, wait for N >= 2: a session that was already running
# when the state changed may not have seen it; the next one has.
wait_sessions() {
  local want deadline=$((SECONDS + 90))
  want=$(($(session_count "${2:-}") + $1))
  until [ "$(session_count "${2:-}")" -ge "$want" ]; do
    [ $SECONDS -lt $deadline ] || fail "the scheduler ran fewer than $1 more sessions in 90s"
    sleep 0.2
  done
}

# proc_state PID: the first letter of the process' state (S, R, T stopped, Z exited and not
# yet reaped), empty once it is gone.
proc_state() {
  ps -o stat= -p "$1" 2>/dev/null | cut -c1
}

# proc_is PID LETTER: the process' state is LETTER (for wait_for, which runs a command).
proc_is() {
  [ "$(proc_state "$1")" = "$2" ]
}

# exited PID: the process has ended (a zombie waiting for its parent counts as ended).
exited() {
  local st
  st=$(proc_state "$1")
  [ -z "$st" ] || [ "$st" = Z ]
}

# log_lines FILE: how many lines FILE has now (0 when it does not exist), for served_port FROM.
log_lines() {
  if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi
}

# new_namespace PREFIX: create a uniquely named namespace and print its name.
# kubeconfig_with FILE USER_YAML: a kubeconfig for the same server and CA with another user.
kubeconfig_with() {
  local server ca
  server=$(kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
  if [ -z "$ca" ]; then
    ca=$(base64 -w0 < "$(kubectl config view --raw --minify \
      -o 'jsonpath={.clusters[0].cluster.certificate-authority}')")
  fi
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
current-context: t
clusters:
- name: c
  cluster:
    server: $server
    certificate-authority-data: $ca
contexts:
- name: t
  context: {cluster: c, user: u}
users:
- name: u
  user:
$2
EOF
}

new_namespace() {
  local ns
  ns="$1-$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  kubectl create namespace "$ns" >/dev/null || fail "cannot create namespace $ns"
  echo "$ns"
}

# kiln_bg NAME EXE ARGS...: EXE ARGS in the background, its output appended to
# logs/kiln-NAME.log of the cluster directory, recorded in pids/ as kiln-NAME so that
# tests/e2e/run stops it after the suite (variables set before the call reach EXE).
kiln_bg() {
  local name=$1 exe=$2
  shift 2
  mkdir -p "$KILN_CLUSTER_DIR/logs" "$KILN_CLUSTER_DIR/pids"
  "$exe" "$@" >>"$KILN_CLUSTER_DIR/logs/kiln-$name.log" 2>&1 </dev/null &
  echo $! >"$KILN_CLUSTER_DIR/pids/kiln-$name.pid"
  echo "$exe" >"$KILN_CLUSTER_DIR/pids/kiln-$name.exe"
}

# group_nodes PREFIX COUNT ARGS...: kwok nodes PREFIX-0.. labelled grp=PREFIX, Ready and
# schedulable, for a test that selects its own nodes (ARGS go to tests/cluster/nodes). The
# control plane runs no node lifecycle controller, so the not-ready taint that the API server
# puts on every new node is taken off here, as that controller would.
group_nodes() {
  local prefix=$1 count=$2
  shift 2
  "$KILN_ROOT/tests/cluster/nodes" --dir "$KILN_CLUSTER_DIR" --count "$count" --prefix "$prefix-" \
    --label "grp=$prefix" "$@" >/dev/null || fail "cannot create nodes $prefix-*"
  kubectl taint nodes -l "grp=$prefix" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

# queue NAME WEIGHT [CAPABILITY-CPU]: a Queue that is not reclaimable (a suite may define its
# own queue instead).
queue() {
  local cap=""
  [ -z "${3:-}" ] || cap=", capability: {cpu: '$3'}"
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create queue $1"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $1}
spec: {weight: $2, reclaimable: false$cap}
EOF
}

# sched_conf FILE [--actions LIST] [--first LINES] [--predicates LINES] [EXTRA...]: the
# scheduler configuration most suites start from, written to FILE through a rename (a
# running scheduler re-reads it whole):
#   actions "enqueue, allocate, backfill"
#   tier 1: priority, gang, conformance
#   tier 2: drf, predicates, proportion, nodeorder
# --actions: other actions; --first: plugin lines ("  - name: ...") added to the first tier;
# --predicates: the predicates plugin's arguments ("key: value" lines, indented here); EXTRA:
# lines appended as given (second-tier plugins after nodeorder, or top-level keys such as
# configurations).
sched_conf() {
  local file=$1 actions="enqueue, allocate, backfill" first="" pred=""
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --actions) actions=$2 ;;
      --first) first=$2 ;;
      --predicates) pred=$2 ;;
      *) break ;;
    esac
    shift 2
  done
  {
    printf 'actions: "%s"\n' "$actions"
    printf 'tiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n'
    [ -z "$first" ] || printf '%s\n' "$first"
    printf -- '- plugins:\n  - name: drf\n  - name: predicates\n'
    [ -z "$pred" ] || printf '    arguments:\n%s\n' "$(sed 's/^/      /' <<<"$pred")"
    printf '  - name: proportion\n  - name: nodeorder\n'
    [ $# -eq 0 ] || printf '%s\n' "$@"
  } >"$file.tmp" && mv "$file.tmp" "$file"
}

# static_pv NAME SIZE: an Available PersistentVolume of no class, reachable from every node,
# that kube-controller-manager's PV controller binds to a claim of no class asking at most
# SIZE (what a Job's volumeClaim without storageClassName makes). Without one such a claim
# stays Pending and so, as with kube-scheduler, does its pod ("pod has unbound immediate
# PersistentVolumeClaims").
#
# The volume and its class are both named NAME: a claim of no class left Pending by an earlier
# suite would otherwise be bound to it first, and the claim meant for it would never bind.
static_pv() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create PersistentVolume $1"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $1}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: $1}
spec:
  capacity: {storage: $2}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $1
  hostPath: {path: /tmp/$1}
EOF
}

# pg_message NS PODGROUP-NAME-PREFIX: the Unschedulable condition of the PodGroup, as
# "reason|message".
pg_message() {
  kubectl get podgroups -n "$1" -o json 2>/dev/null | jq -r --arg p "$2" \
    '.items[] | select(.metadata.name | startswith($p)) | .status.conditions[]? |
     select(.type == "Unschedulable") | "\(.reason)|\(.message)"' | tail -1
}

# apply_crds: install every Kiln CRD and wait until the API server serves them all.
apply_crds() {
  kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null || return 1
  # A CRD that was just created may have no conditions yet, which `kubectl wait` rejects.
  local i
  for i in $(seq 1 120); do
    kubectl wait --for=condition=Established --timeout=5s crd --all >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

# gang_jobs PREFIX FROM TO GANG RUNFOR [NODESELECTOR]: the YAML of Volcano Jobs PREFIX<i> for
# i in FROM..TO, each one task of GANG pods that all must run (minAvailable GANG) and that
# kwok runs for RUNFOR seconds, an arithmetic expression of i; NODESELECTOR is the body of a
# flow mapping such as 'grp: soak'.
gang_jobs() {
  local prefix=$1 from=$2 to=$3 gang=$4 runfor=$5 sel="" i
  [ -z "${6:-}" ] || sel="nodeSelector: {$6}"
  for i in $(seq "$from" "$to"); do
    cat <<EOF
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $prefix$i}
spec:
  schedulerName: volcano
  minAvailable: $gang
  tasks:
  - name: w
    replicas: $gang
    template:
      metadata:
        annotations: {"kwok.kiln.dev/run-for": "$((runfor))s"}
      spec:
        restartPolicy: Never
        $sel
        containers: [{name: main, image: busybox}]
EOF
  done
}

# e2e_main [NAME]: run the suite's tests (every test_* function, or only NAME), then its
# final checks (every finally_* function): checks of what the whole suite leaves behind, such
# as the shared process' clean stop, which only mean something after every test and so do not
# rely on a name that sorts last. Each runs in its own subshell and prints "PASS suite/name"
# or "FAIL suite/name" with its output.
e2e_main() {
  local only=${1:-} passed=0 failed=0 t
  for t in $(declare -F | awk '{print $3}' | grep '^test_') \
      $(declare -F | awk '{print $3}' | grep '^finally_'); do
    [ -z "$only" ] || [ "$t" = "$only" ] || continue
    # Not in an `if`: bash ignores set -e in all a condition runs, and tests rely on it.
    e2e_run_one "$t"
    if [ $? -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
  echo "suite: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# e2e_run_one NAME: run one test (with the suite's before_each and after_each, if defined:
# what every test needs, set up again if an earlier test changed it so that tests run in any
# order, and a check after every test) or final check, and print its verdict.
e2e_run_one() {
  local t=$1 log start=$SECONDS rc
  log=$(mktemp)
  (
    set -e
    if [[ $t == test_* ]]; then
      ! declare -F before_each >/dev/null || before_each
      "$t"
      ! declare -F after_each >/dev/null || after_each
    else
      "$t"
    fi
  ) >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS ${SUITE:-$(basename "$0" .sh)}/$t ($((SECONDS - start))s)"
    # Figures a passing test reports (lines "REPORT ...") are shown too.
    sed -n 's/^REPORT /    /p' "$log"
  else
    echo "FAIL ${SUITE:-$(basename "$0" .sh)}/$t ($((SECONDS - start))s)"
    sed 's/^/    /' "$log"
  fi
  rm -f "$log"
  return $rc
}

# kiln_install: the README's install, `kubectl apply --server-side -k manifests/`. On a
# fresh cluster kubectl cannot map the default Queue until the CRDs applied in the same call are
# established, so a first pass may fail on that object alone; the second pass must then succeed
# with no error at all. Returns once the admission policies are in force (the API server loads
# new policies from its informers a moment after they are created).
kiln_install() {
  local out other
  if ! out=$(kubectl apply --server-side -k "$KILN_ROOT/manifests" 2>&1); then
    # On a loaded machine the Queue kind may also be known but not served yet ("There can be a
    # delay"); the second pass below covers that too.
    other=$(grep -E '^error|^Error' <<<"$out" | grep -v -e 'resource mapping not found' \
      -e 'There can be a delay' || true)
    [ -z "$other" ] || fail "first apply failed: $other"
  fi
  wait_for 60 "CRDs established" kubectl wait --for=condition=Established --timeout=5s \
    crd/jobs.batch.volcano.sh crd/commands.bus.volcano.sh crd/podgroups.scheduling.volcano.sh \
    crd/queues.scheduling.volcano.sh
  # An established CRD may still be a moment from being served ("There can be a delay"):
  # the second pass is retried for that alone.
  local deadline=$((SECONDS + 30))
  until out=$(kubectl apply --server-side -k "$KILN_ROOT/manifests" 2>&1); do
    grep -q 'There can be a delay' <<<"$out" && [ $SECONDS -lt $deadline ] ||
      fail "second apply failed: $out"
    sleep 1
  done
  wait_for 60 "admission policies in force" admission_policies_active
}

# remove_admission_policies: the suites share one cluster, and the install's policies are
# cluster-wide; a suite that installed them takes them away again when it ends.
remove_admission_policies() {
  kubectl delete -f "$KILN_ROOT/manifests/admission/" --ignore-not-found >/dev/null 2>&1 || true
}

# admission_policies_active: a Job whose container has no image is refused (kiln-job-template).
admission_policies_active() {
  ! kubectl create --dry-run=server -n default -f - >/dev/null 2>&1 <<'EOF2'
{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "probe"},
 "spec": {"tasks": [{"name": "t", "replicas": 1,
                     "template": {"spec": {"containers": [{"name": "c"}]}}}]}}
EOF2
}

# expect_refused MIN FILE...: each file, created with a server dry run in a new namespace, is
# refused with a message matching the extended regex of its `# expect:` line; fails the test
# otherwise, or when fewer than MIN files were given.
expect_refused() {
  local min=$1 ns f expect out n=0 bad=0
  shift
  ns=$(new_namespace refused)
  for f in "$@"; do
    expect=$(sed -n 's/^# expect: //p' "$f")
    [ -n "$expect" ] || fail "$(basename "$f") has no '# expect:' line"
    n=$((n + 1))
    if out=$(kubectl create --dry-run=server -n "$ns" -f "$f" 2>&1); then
      echo "    accepted: $(basename "$f")" >&2
      bad=$((bad + 1))
    elif ! grep -Eq -- "$expect" <<<"$out"; then
      echo "    $(basename "$f"): want /$expect/, got: $out" >&2
      bad=$((bad + 1))
    fi
  done
  kubectl delete ns "$ns" --wait=false >/dev/null
  [ "$n" -ge "$min" ] || fail "only $n objects to refuse"
  [ "$bad" -eq 0 ] || fail "$bad of $n objects were not refused as expected"
}
