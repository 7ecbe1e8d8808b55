#!/usr/bin/env bash
# vcctl job whatif (issue 34) on the real control plane: the answer is compared with what
# kiln-scheduler then does. kiln-scheduler runs with a configuration file that lists preempt;
# vcctl reads the same text from a ConfigMap (--scheduler-configmap), so both decide under the
# same configuration, and nothing changes between the what-if and the submission.
# Each test makes its own kwok nodes (labelled grp=<test>, tainted kiln-whatif=<test>) and its
# Jobs select them, so nothing else lands there.
# shellcheck shell=bash
SUITE=whatif
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
VCCTL=$KILN_BUILD/cli/vcctl
D=$KILN_CLUSTER_DIR
CONF=$D/whatif-scheduler.conf
LOG=$D/logs/kiln-scheduler-whatif.log
CMNS=kiln-whatif-conf
mkdir -p "$D/logs" "$D/pids"

# The configuration the manifests ship, with preempt after allocate, without overcommit
# (whose admission, as Volcano's, counts what a preemptor would free as used), and with the
# predicates plugin's Dynamic Resource Allocation on.
python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["volcano-scheduler.conf"])' \
  "$KILN_ROOT/manifests/scheduler-configmap.yaml" \
  | sed -e 's/^actions: .*/actions: "enqueue, allocate, preempt, backfill"/' \
    -e '/name: overcommit/d' \
    -e 's/^\( *\)- name: predicates$/&\n\1  arguments:\n\1    predicate.DynamicResourceAllocationEnable: true/' \
    > "$CONF"
grep -q DynamicResourceAllocationEnable "$CONF" || { echo "cannot write $CONF"; exit 1; }
grep -q preempt "$CONF" || { echo "cannot write $CONF"; exit 1; }
CLASS=whatif.example.com

nodes() { # GRP COUNT ARGS...
  local grp=$1 count=$2
  shift 2
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count "$count" --prefix "$grp-" \
    --label "grp=$grp" --taint "kiln-whatif=$grp:NoSchedule" "$@" >/dev/null \
    || fail "cannot create nodes $grp-*"
  kubectl taint nodes -l "grp=$grp" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

# job_yaml NAME QUEUE REPLICAS MIN CPU GRP [PRIORITYCLASS]: a Volcano Job on GRP's nodes.
job_yaml() {
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  schedulerName: volcano
  queue: $2
  minAvailable: $4
${7:+  priorityClassName: $7}
  tasks:
  - name: w
    replicas: $3
    template:
      spec:
${7:+        priorityClassName: $7}
        nodeSelector: {grp: $6}
        tolerations: [{key: kiln-whatif, value: $6, effect: NoSchedule}]
        containers: [{name: c, image: fake, resources: {requests: {cpu: "$5"}, limits: {cpu: "$5"}}}]
EOF
}

whatif() { # NS FILE ARGS...: vcctl's answer as JSON
  local ns=$1 file=$2
  shift 2
  "$VCCTL" job whatif -n "$ns" -f "$file" --scheduler-configmap "$CMNS/whatif-conf" -o json "$@"
}

bound_nodes() { # NS PREFIX: the nodes of the bound pods PREFIX-*, sorted
  kubectl get pods -n "$1" -o json | jq -r --arg p "$2-" \
    '.items[] | select(.metadata.name | startswith($p)) | select(.spec.nodeName != null) |
     .spec.nodeName' | sort | tr '\n' ' '
}

all_bound() { # NS PREFIX COUNT
  [ "$(bound_nodes "$1" "$2" | wc -w)" -eq "$3" ]
}

# slices GRP NDEV...: a ResourceSlice of the driver $CLASS on each node GRP-i, with the i-th
# NDEV devices GRP-i-gpu-k (as tests/e2e/test_dra.sh publishes them).
slices() {
  local grp=$1 i=0 k ndev
  shift
  for ndev in "$@"; do
    {
      printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s-%s}\n' "$grp-$i" "$CLASS"
      printf 'spec:\n  driver: %s\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n  devices:\n' \
        "$CLASS" "$grp-$i" "$grp-$i"
      for ((k = 0; k < ndev; k++)); do
        printf '  - name: %s-gpu-%s\n    attributes: {index: {int: %s}}\n' "$grp-$i" "$k" "$k"
      done
    } | kubectl apply -f - >/dev/null || fail "cannot publish the slice of $grp-$i"
    i=$((i + 1))
  done
}

claims_allocated() { # NS COUNT
  [ "$(kubectl get resourceclaims -n "$1" -o json | jq '[.items[] | select(.status.allocation)] | length')" -eq "$2" ]
}

# ---- suite setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh crd/jobs.batch.volcano.sh >/dev/null 2>&1
kubectl create namespace "$CMNS" >/dev/null 2>&1 || true
kubectl create configmap whatif-conf -n "$CMNS" --from-file=volcano-scheduler.conf="$CONF" \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl create priorityclass kiln-whatif-high --value=1000 >/dev/null 2>&1 || true
kubectl create priorityclass kiln-whatif-low --value=10 >/dev/null 2>&1 || true
queue kiln-whatif 1000
"$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$CONF" --v=3 --leader-elect=false \
  >"$LOG" 2>&1 &
echo $! > "$D/pids/kiln-scheduler-whatif.pid"
echo "$SCHED" > "$D/pids/kiln-scheduler-whatif.exe"
"$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false >"$D/logs/kiln-controller-whatif.log" 2>&1 &
echo $! > "$D/pids/kiln-controller-whatif.pid"
echo "$CTRL" > "$D/pids/kiln-controller-whatif.exe"

# ---- tests ----

# With a Job running on two of three nodes, what-if places a gang; submitted, its pods land on
# the predicted nodes. (Pods of one task are interchangeable: which of them takes which node
# follows the uids the API server gives them, so the nodes are compared as a set.)
test_predicted_placement() {
  local ns out want got
  ns=$(new_namespace wi)
  nodes wiplace 3 --cpu 4 --memory 16Gi
  job_yaml busy kiln-whatif 2 2 3 wiplace | kubectl create -n "$ns" -f - >/dev/null
  wait_for 90 "busy's pods bound" all_bound "$ns" busy 2
  job_yaml gang kiln-whatif 2 2 2 wiplace > "$D/gang-$ns.yaml"
  out=$(whatif "$ns" "$D/gang-$ns.yaml") || fail "whatif failed: $out"
  expect_eq true "$(jq -r .admitted <<<"$out")" admitted
  expect_eq true "$(jq -r .placed <<<"$out")" placed
  expect_eq "0" "$(jq -r '.victims | length' <<<"$out")" victims
  want=$(jq -r '.tasks[].node' <<<"$out" | sort | tr '\n' ' ')
  [ "$(wc -w <<<"$want")" -eq 2 ] || fail "predicted: $out"
  # Nothing was written: no Job, PodGroup or pod of the gang.
  expect_eq "" "$(kubectl get vcjob,podgroups,pods -n "$ns" -o name | grep gang || true)" "objects"
  # The text form says the same.
  "$VCCTL" job whatif -n "$ns" -f "$D/gang-$ns.yaml" --scheduler-configmap "$CMNS/whatif-conf" \
    | grep -q "^Placed:       yes" || fail "text form"
  kubectl create -n "$ns" -f "$D/gang-$ns.yaml" >/dev/null
  wait_for 90 "gang's pods bound" all_bound "$ns" gang 2
  got=$(bound_nodes "$ns" gang)
  expect_eq "$want" "$got" "the gang's nodes"
  echo "REPORT predicted and bound on: $got"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A high-priority gang on a node a low-priority Job fills: what-if names the victims, with the
# low Job's priority and queue, and they are the pods preempt evicts once it is submitted.
test_predicted_victims() {
  local ns out want got uids
  ns=$(new_namespace wi)
  nodes wipre 1 --cpu 4 --memory 16Gi
  job_yaml low kiln-whatif 2 1 2 wipre kiln-whatif-low | kubectl create -n "$ns" -f - >/dev/null
  wait_for 90 "low's pods bound" all_bound "$ns" low 2
  uids=$(kubectl get pods -n "$ns" -o json | jq -r '.items[] | "\(.metadata.name)=\(.metadata.uid)"' | sort)
  job_yaml high kiln-whatif 1 1 2 wipre kiln-whatif-high > "$D/high-$ns.yaml"
  out=$(whatif "$ns" "$D/high-$ns.yaml") || fail "whatif failed: $out"
  expect_eq true "$(jq -r .placedAfterEviction <<<"$out")" "placed after eviction"
  expect_eq "$ns/low" "$(jq -r '.victims[0].job' <<<"$out")" "victim job"
  expect_eq "10 kiln-whatif preempt" "$(jq -r '.victims[0] | "\(.priority) \(.queue) \(.action)"' <<<"$out")"
  want=$(jq -r '.victims[].pod' <<<"$out" | sed "s|^$ns/||" | sort | tr '\n' ' ')
  kubectl create -n "$ns" -f "$D/high-$ns.yaml" >/dev/null
  wait_for 120 "high's pod bound" all_bound "$ns" high 1
  # The evicted pods: gone, or recreated under the same name with a new uid.
  got=$(for u in $uids; do
    n=${u%%=*}
    now=$(kubectl get pod -n "$ns" "$n" -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
    [ "$now" = "${u#*=}" ] || echo "$n"
  done | sort | tr '\n' ' ')
  expect_eq "$want" "$got" "the evicted pods"
  echo "REPORT predicted and evicted: $got"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A gang too big for its queue's capability: predicted pending, with the message the PodGroup
# then gets.
test_predicted_queue_refusal() {
  local ns out want got deadline
  ns=$(new_namespace wi)
  nodes wicap 2 --cpu 8 --memory 16Gi
  queue kiln-whatif-cap 1 2
  job_yaml capped kiln-whatif-cap 2 2 2 wicap > "$D/capped-$ns.yaml"
  out=$(whatif "$ns" "$D/capped-$ns.yaml") || fail "whatif failed: $out"
  expect_eq false "$(jq -r .admitted <<<"$out")" admitted
  expect_eq false "$(jq -r .placed <<<"$out")" placed
  want="$(jq -r '"\(.reason)|\(.message)"' <<<"$out")"
  [[ $want == *"queue kiln-whatif-cap"* ]] || fail "predicted message: $want"
  jq -r .whyPending <<<"$out" | grep -qF "$(jq -r .message <<<"$out")" || fail "why pending: $out"
  kubectl create -n "$ns" -f "$D/capped-$ns.yaml" >/dev/null
  deadline=$((SECONDS + 90))
  until got=$(pg_message "$ns" capped) && [ -n "$got" ]; do
    [ $SECONDS -lt $deadline ] || fail "no condition on the PodGroup"
    sleep 0.3
  done
  expect_eq "$want" "$got" "the PodGroup's condition"
  echo "REPORT $got"
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete queue kiln-whatif-cap --wait=false >/dev/null 2>&1 || true
}

# A gang whose pods claim two devices each through a ResourceClaimTemplate, on three nodes with
# 1, 2 and 2 devices: what-if makes the claims kube-controller-manager would make and predicts
# the two nodes with two devices and each pod's devices; submitted, the claims
# kube-controller-manager makes are given those devices on those nodes by kiln-scheduler.
test_predicted_devices() {
  local ns out want got sel text
  kubectl api-resources --api-group=resource.k8s.io -o name | grep -qx resourceslices.resource.k8s.io \
    || fail "the API server does not serve resource.k8s.io/v1"
  ns=$(new_namespace wi)
  nodes widev 3 --cpu 8 --memory 16Gi
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create the DeviceClass"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: $CLASS}
spec:
  selectors:
  - cel: {expression: 'device.driver == "$CLASS"'}
EOF
  slices widev 1 2 2
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the template"
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: $CLASS, count: 2}
EOF
  job_yaml devs kiln-whatif 2 2 1 widev \
    | sed -e 's/^        containers: .*/        resourceClaims: [{name: gpu, resourceClaimTemplateName: two-gpus}]\n&/' \
      -e 's/limits: {cpu: "1"}}/limits: {cpu: "1"}, claims: [{name: gpu}]}/' > "$D/devs-$ns.yaml"
  grep -q 'claims: \[{name: gpu}\]' "$D/devs-$ns.yaml" || fail "job: $(cat "$D/devs-$ns.yaml")"
  out=$(whatif "$ns" "$D/devs-$ns.yaml") || fail "whatif failed: $out"
  expect_eq true "$(jq -r .placed <<<"$out")" placed
  # One line per pod: the node of its claim's allocation (its node selector) and the devices.
  sel='.nodeSelector.nodeSelectorTerms[0].matchFields[0].values[0]'
  want=$(jq -r ".tasks[] | .claims[0].allocation | [$sel, (.devices.results | map(.device) | sort | .[])] | join(\" \")" \
    <<<"$out" | sort)
  expect_eq "widev-1 widev-1-gpu-0 widev-1-gpu-1
widev-2 widev-2-gpu-0 widev-2-gpu-1" "$want" "predicted allocations"
  expect_eq "widev-1 widev-2" "$(jq -r '.tasks[].node' <<<"$out" | sort | tr '\n' ' ' | sed 's/ $//')" "predicted nodes"
  text=$("$VCCTL" job whatif -n "$ns" -f "$D/devs-$ns.yaml" --scheduler-configmap "$CMNS/whatif-conf")
  grep -q "claim devs-w-[01]-gpu-whatif: $CLASS/widev-2/widev-2-gpu-[01], $CLASS/widev-2/widev-2-gpu-[01]$" \
    <<<"$text" || fail "text form: $text"
  sed -n '/^Placed:/,/^Victims:/p' <<<"$text" | sed 's/^/REPORT /'
  expect_eq "" "$(kubectl get resourceclaims -n "$ns" -o name)" "claims before the submission"
  kubectl create -n "$ns" -f "$D/devs-$ns.yaml" >/dev/null
  wait_for 90 "devs's pods bound" all_bound "$ns" devs 2
  wait_for 30 "two claims allocated" claims_allocated "$ns" 2
  got=$(kubectl get resourceclaims -n "$ns" -o json | jq -r ".items[] | .status.allocation // empty |
    [$sel, (.devices.results | map(.device) | sort | .[])] | join(\" \")" | sort)
  expect_eq "$want" "$got" "the claims' allocations"
  echo "REPORT predicted and allocated: $(tr '\n' ';' <<<"$got")"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# A user who may not list pods cluster-wide is told which permission is missing; with the
# ClusterRole of docs/whatif-rbac.yaml (and get on the ConfigMap) the same user gets the answer.
test_permission_message() {
  local ns token out
  ns=$(new_namespace wi)
  kubectl create serviceaccount reader -n "$ns" >/dev/null
  token=$(kubectl create token reader -n "$ns" --duration=10m)
  kubeconfig_with "$D/reader-$ns.kc" "    token: $token"
  job_yaml probe kiln-whatif 1 1 1 none > "$D/probe-$ns.yaml"
  out=$(KUBECONFIG="$D/reader-$ns.kc" "$VCCTL" job whatif -n "$ns" -f "$D/probe-$ns.yaml" \
    --scheduler-configmap "$CMNS/whatif-conf" 2>&1) && fail "allowed: $out"
  [[ $out == *"needs permission to list pods in all namespaces"* ]] || fail "message: $out"
  [[ $out == *'cannot list resource "pods"'* ]] || fail "the 403's words: $out"
  kubectl apply -f "$KILN_ROOT/docs/whatif-rbac.yaml" -l kiln.dev/whatif=reader >/dev/null
  kubectl create clusterrolebinding "whatif-$ns" --clusterrole=kiln-whatif-reader \
    --serviceaccount="$ns:reader" >/dev/null
  kubectl create role whatif-conf -n "$CMNS" --verb=get --resource=configmaps \
    --resource-name=whatif-conf >/dev/null 2>&1 || true
  kubectl create rolebinding "whatif-$ns" -n "$CMNS" --role=whatif-conf \
    --serviceaccount="$ns:reader" >/dev/null
  wait_for 30 "the reader's answer" env KUBECONFIG="$D/reader-$ns.kc" "$VCCTL" job whatif \
    -n "$ns" -f "$D/probe-$ns.yaml" --scheduler-configmap "$CMNS/whatif-conf"
  out=$(KUBECONFIG="$D/reader-$ns.kc" "$VCCTL" job whatif -n "$ns" -f "$D/probe-$ns.yaml" \
    --scheduler-configmap "$CMNS/whatif-conf")
  [[ $out == *"Job Source:   the Job as written"* ]] || fail "no note on the refused dry run: $out"
  kubectl delete clusterrolebinding "whatif-$ns" >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
rc=$?
for p in kiln-scheduler-whatif kiln-controller-whatif; do
  if [ -f "$D/pids/$p.pid" ]; then
    kill "$(cat "$D/pids/$p.pid")" 2>/dev/null
    rm -f "$D/pids/$p.pid"
  fi
done
kubectl delete priorityclass kiln-whatif-high kiln-whatif-low --wait=false >/dev/null 2>&1
kubectl delete queue kiln-whatif --wait=false >/dev/null 2>&1
kubectl delete clusterrole kiln-whatif-reader --wait=false >/dev/null 2>&1
kubectl delete namespace "$CMNS" --wait=false >/dev/null 2>&1
kubectl delete resourceslices "widev-0-$CLASS" "widev-1-$CLASS" "widev-2-$CLASS" --wait=false >/dev/null 2>&1
kubectl delete deviceclass "$CLASS" --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
