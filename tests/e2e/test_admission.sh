#!/usr/bin/env bash
# Admission without a webhook: the install's ValidatingAdmissionPolicies and
# MutatingAdmissionPolicies (manifests/admission/) applied by the README's command, the defaults
# Volcano's mutating webhooks give present in the object a create returns, valid objects
# accepted, and the policies matched narrowly. The refusals, each with Volcano's words, are the
# manifests-invalid/ files that test_manifests.sh creates; here they are checked once more
# right after the install, which shows the policies are in force as soon as the install returns.
# shellcheck shell=bash
SUITE=admission
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MANIFESTS=$KILN_ROOT/manifests
POLICIES=(validatingadmissionpolicy/kiln-job-template validatingadmissionpolicy/kiln-job-update
          validatingadmissionpolicy/kiln-job-queue
          validatingadmissionpolicy/kiln-queue
          validatingadmissionpolicy/kiln-queue-delete
          validatingadmissionpolicy/kiln-pod-budget mutatingadmissionpolicy/kiln-job-defaults
          mutatingadmissionpolicy/kiln-queue-defaults mutatingadmissionpolicy/kiln-podgroup-queue
          mutatingadmissionpolicy/kiln-pod-resource-groups)

ensure_installed() {
  local p
  for p in "${POLICIES[@]}"; do
    kubectl get "$p" >/dev/null 2>&1 || { kiln_install; return; }
  done
  wait_for 60 "admission policies in force" admission_policies_active
}

# Namespaces are deleted and waited for: a later suite's controller must not find these Jobs
# in a namespace that is still terminating (its writes there would be refused).

# create_json NAMESPACE: kubectl create -o json of the object on stdin ('-' for cluster scope).
create_json() {
  if [ "$1" = - ]; then kubectl create -o json -f -; else kubectl create -n "$1" -o json -f -; fi
}

test_install_applies_policies() {
  kiln_install
  local p out
  for p in "${POLICIES[@]}"; do
    kubectl get "$p" >/dev/null || fail "$p not installed by apply -k"
    kubectl get "${p/policy\//policybinding/}" >/dev/null || fail "binding of $p not installed"
  done
  # The API server type-checks each policy against the CRD schemas: no warnings.
  for p in "${POLICIES[@]}"; do
    [[ $p == validating* ]] || continue
    out=$(kubectl get "$p" -o jsonpath='{.status.typeChecking.expressionWarnings}')
    [ -z "$out" ] || fail "$p: type-checking warnings: $out"
  done
}

test_job_defaults_in_create_response() {
  ensure_installed
  local ns out
  ns=$(new_namespace adm-job)
  out=$(create_json "$ns" <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: defaults}
spec:
  maxRetry: 0
  plugins:
    mpi: ["--master=default0", "--worker=default1"]
  tasks:
  - replicas: 1
    template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}
  - replicas: 4
    minAvailable: 2
    maxRetry: 0
    template: {spec: {hostNetwork: true, containers: [{name: c, image: "busybox:1.36"}]}}
EOF
) || fail "create refused: $out"
  expect_eq "default0 default1" "$(jq -r '[.spec.tasks[].name] | join(" ")' <<<"$out")" "task names"
  # Volcano: the sum of each task's minAvailable, or its replicas when unset (1 + 2).
  expect_eq 3 "$(jq -r .spec.minAvailable <<<"$out")" "job minAvailable"
  expect_eq "3 3 3" "$(jq -r '[.spec.maxRetry, .spec.tasks[].maxRetry] | map(tostring) | join(" ")' <<<"$out")" \
    "maxRetry 0 becomes 3"
  expect_eq "null ClusterFirstWithHostNet" \
    "$(jq -r '[.spec.tasks[].template.spec.dnsPolicy] | map(tostring) | join(" ")' <<<"$out")" \
    "dnsPolicy for hostNetwork"
  expect_eq "mpi ssh svc" "$(jq -r '.spec.plugins | keys | join(" ")' <<<"$out")" "mpi adds svc and ssh"
  expect_eq "default volcano" "$(jq -r '"\(.spec.queue) \(.spec.schedulerName)"' <<<"$out")" \
    "queue and scheduler"
  # tensorflow and pytorch add svc only; a plugin already there is kept as given; an explicit
  # minAvailable is left alone.
  local fw
  for fw in tensorflow pytorch; do
    out=$(create_json "$ns" <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $fw}
spec:
  minAvailable: 1
  plugins: {$fw: [], env: []}
  tasks:
  - {name: worker, replicas: 2, template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}}
EOF
) || fail "$fw job refused: $out"
    expect_eq "$(printf '%s\n' env "$fw" svc | sort | paste -sd' ')" \
      "$(jq -r '.spec.plugins | keys | join(" ")' <<<"$out")" "$fw plugins"
    expect_eq 1 "$(jq -r .spec.minAvailable <<<"$out")" "$fw explicit minAvailable kept"
  done
  out=$(create_json "$ns" <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: kept}
spec:
  plugins: {mpi: [], svc: ["--disable-network-policy=true"], ssh: ["--no-root"]}
  tasks:
  - {name: master, replicas: 1, template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}}
  - {name: worker, replicas: 2, template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}}
EOF
) || fail "job with svc and ssh refused: $out"
  expect_eq '["--disable-network-policy=true"] ["--no-root"]' \
    "$(jq -c '.spec.plugins.svc, .spec.plugins.ssh' <<<"$out" | paste -sd' ')" "given plugins kept"
  expect_eq 3 "$(jq -r .spec.minAvailable <<<"$out")" "minAvailable = replicas summed"
  # A partitioned task counts minPartitions x partitionSize, as the controller does.
  out=$(create_json "$ns" <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: parts}
spec:
  tasks:
  - name: w
    replicas: 6
    partitionPolicy: {totalPartitions: 3, partitionSize: 2, minPartitions: 2}
    template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}
  - {name: ps, replicas: 1, template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}}
EOF
) || fail "partitioned job refused: $out"
  expect_eq 5 "$(jq -r .spec.minAvailable <<<"$out")" "minAvailable with partitions (2x2 + 1)"
  kubectl delete ns "$ns" --timeout=120s >/dev/null
}

test_queue_defaults_in_create_response() {
  ensure_installed
  local q=adm-q-$RANDOM out
  out=$(create_json - <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: $q
  annotations: {volcano.sh/hierarchy: sci/dev, volcano.sh/hierarchy-weights: 2/8}
spec: {weight: 0}
EOF
) || fail "queue refused: $out"
  expect_eq "1 true" "$(jq -r '"\(.spec.weight) \(.spec.reclaimable)"' <<<"$out")" "weight and reclaimable"
  expect_eq "root/sci/dev 1/2/8" \
    "$(jq -r '.metadata.annotations | "\(.["volcano.sh/hierarchy"]) \(.["volcano.sh/hierarchy-weights"])"' <<<"$out")" \
    "hierarchy under root"
  # A hierarchy that already starts at root is kept; an explicit weight too.
  out=$(create_json - <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: $q-2
  annotations: {volcano.sh/hierarchy: root/eng, volcano.sh/hierarchy-weights: 1/0.5}
spec: {weight: 7, reclaimable: false}
EOF
) || fail "queue with root hierarchy refused: $out"
  expect_eq "7 false root/eng 1/0.5" \
    "$(jq -r '"\(.spec.weight) \(.spec.reclaimable) \(.metadata.annotations["volcano.sh/hierarchy"]) \(.metadata.annotations["volcano.sh/hierarchy-weights"])"' <<<"$out")" \
    "given values kept"
  kubectl delete queue "$q" "$q-2" --timeout=120s >/dev/null
}

# Volcano's validateQueueDeleting and root queue protection without a webhook: `default` and
# `root` cannot be deleted and the root queue's resources cannot change; its weight can, and
# another queue can be deleted.
test_queue_default_and_root_protected() {
  ensure_installed
  kubectl get queue root >/dev/null 2>&1 || kubectl create -f - >/dev/null <<'EOF' || fail "cannot create root"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: root}
spec: {weight: 1, reclaimable: false}
EOF
  local q out
  for q in default root; do
    out=$(kubectl delete queue "$q" --dry-run=server 2>&1) && fail "deleting $q was accepted"
    expect_match "\`$q\` queue can not be deleted" "$out" "refusal to delete $q"
  done
  for out in '{"spec":{"capability":{"cpu":"3333m"}}}' '{"spec":{"deserved":{"cpu":"3333m"}}}' \
             '{"spec":{"deserved":{"cpu":"3333m"},"guarantee":{"resource":{"cpu":"3333m"}}}}'; do
    out=$(kubectl patch queue root --type=merge -p "$out" --dry-run=server 2>&1) &&
      fail "a change of root's resources was accepted"
    expect_match "root queue's resource attributes \(capability, deserved, guarantee\) cannot be modified" \
      "$out" "refusal to change root's resources"
  done
  out=$(kubectl patch queue root --type=merge -p '{"spec":{"weight":3}}' --dry-run=server 2>&1) ||
    fail "a change of root's weight was refused: $out"
  q=adm-del-$RANDOM
  kubectl create -f - >/dev/null <<EOF || fail "cannot create $q"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $q}
spec: {capability: {cpu: "2"}}
EOF
  out=$(kubectl patch queue "$q" --type=merge -p '{"spec":{"capability":{"cpu":"3"}}}' 2>&1) ||
    fail "a change of another queue's capability was refused: $out"
  out=$(kubectl delete queue "$q" --timeout=120s 2>&1) || fail "deleting $q was refused: $out"
}

# job_to NAMESPACE QUEUE [NAME]: a server dry run of a Job in QUEUE; prints what the API server
# says.
job_to() {
  kubectl create --dry-run=server -n "$1" -f - 2>&1 <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: ${3:-to-$2}}
spec:
  queue: $2
  tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}}]
EOF
}

# job_refused NAMESPACE QUEUE: a Job to QUEUE is refused (for wait_for: the API server reads the
# Queues from its own cache, a moment behind their writes).
job_refused() {
  ! job_to "$1" "$2" probe >/dev/null
}

# Volcano's job webhook refuses a Job whose queue is not Open or has child queues, at create,
# in its words (kiln-job-queue, one evaluation per Queue). A Job to an Open leaf, to a queue
# that does not exist (kiln-controller's QueueNotFound) or to one with no state yet is
# accepted, and a Job already created is not refused an update when its queue closes.
test_job_queue_closed_or_parent_refused() {
  ensure_installed
  local p=adm-jq-$RANDOM ns out st q
  ns=$(new_namespace adm-jq)
  for q in closed closing open parent; do
    printf -- '---\n%s\n%s\nmetadata: {name: %s}\n' "apiVersion: scheduling.volcano.sh/v1beta1" \
      "kind: Queue" "$p-$q"
  done | kubectl create -f - >/dev/null || fail "cannot create the queues"
  kubectl create -f - >/dev/null <<EOF || fail "cannot create $p-child"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: $p-child}
spec: {parent: $p-parent}
EOF
  for st in Closed Closing Open; do
    kubectl patch queue "$p-${st,,}" --subresource=status --type=merge \
      -p "{\"status\":{\"state\":\"$st\"}}" >/dev/null || fail "cannot set $p-${st,,} $st"
  done
  wait_for 30 "$p-closing refused" job_refused "$ns" "$p-closing"
  wait_for 30 "$p-parent refused" job_refused "$ns" "$p-parent"
  for st in Closed Closing; do
    out=$(job_to "$ns" "$p-${st,,}") && fail "a Job to the $st queue was accepted"
    expect_match "denied request: can only submit job to queue with state \`Open\`, queue \`$p-${st,,}\` status is \`$st\`;" \
      "$out" "Job to a $st queue"
  done
  out=$(job_to "$ns" "$p-parent") && fail "a Job to the parent queue was accepted"
  expect_match "denied request: can only submit job to leaf queue, queue \`$p-parent\` has child queues \(one is \`$p-child\`\);" \
    "$out" "Job to a parent queue"
  for q in open child missing; do
    out=$(job_to "$ns" "$p-$q") || fail "a Job to $p-$q was refused: $out"
  done
  # CREATE only: a Job stays updatable once its queue closes.
  kubectl create -n "$ns" -f - >/dev/null <<EOF || fail "cannot create a Job in $p-open"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: early}
spec:
  queue: $p-open
  minAvailable: 1
  tasks: [{name: t, replicas: 2, template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}}]
EOF
  kubectl patch queue "$p-open" --subresource=status --type=merge \
    -p '{"status":{"state":"Closed"}}' >/dev/null || fail "cannot close $p-open"
  wait_for 30 "$p-open refused once closed" job_refused "$ns" "$p-open"
  out=$(kubectl patch vcjob early -n "$ns" --type=merge -p '{"spec":{"minAvailable":2}}' 2>&1) ||
    fail "an update of a Job whose queue closed was refused: $out"
  kubectl delete ns "$ns" --timeout=120s >/dev/null
  kubectl delete queue "$p-closed" "$p-closing" "$p-open" "$p-child" "$p-parent" --timeout=120s >/dev/null
}

test_podgroup_queue_from_namespace() {
  ensure_installed
  local ns plain out
  ns=$(new_namespace adm-pg)
  plain=$(new_namespace adm-pg-plain)
  kubectl annotate ns "$ns" scheduling.volcano.sh/queue-name=team-a >/dev/null
  pg() { # NS NAME [QUEUE]
    create_json "$1" <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2}
spec: {minMember: 1${3:+, queue: $3}}
EOF
  }
  out=$(pg "$ns" unset) || fail "$out"
  expect_eq team-a "$(jq -r .spec.queue <<<"$out")" "queue from the namespace annotation"
  # As in Volcano, "default" counts as not chosen; any other queue is kept.
  out=$(pg "$ns" dflt default) || fail "$out"
  expect_eq team-a "$(jq -r .spec.queue <<<"$out")" "default replaced by the annotation"
  out=$(pg "$ns" mine other) || fail "$out"
  expect_eq other "$(jq -r .spec.queue <<<"$out")" "explicit queue kept"
  out=$(pg "$plain" unset) || fail "$out"
  expect_eq default "$(jq -r .spec.queue <<<"$out")" "no annotation: default"
  kubectl delete ns "$ns" "$plain" --timeout=120s >/dev/null
}

# What Volcano accepts, Kiln accepts: the edges of each policy's rules.
test_valid_objects_accepted() {
  ensure_installed
  local ns out
  ns=$(new_namespace adm-ok)
  out=$(kubectl create --dry-run=server -n "$ns" -f - 2>&1 <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: ok}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        initContainers:
        - {name: init, image: "busybox:1.36", resources: {limits: {cpu: "0", memory: 0}}}
        containers:
        - name: c
          image: busybox:1.36
          resources: {requests: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 1}, limits: {cpu: 1, memory: 1Gi}}
  # topologyPolicy with Guaranteed pods and whole CPUs (requests taken from limits).
  - name: numa
    replicas: 1
    topologyPolicy: single-numa-node
    template:
      spec:
        initContainers:
        - {name: i, image: "busybox:1.36", resources: {limits: {cpu: "1", memory: 64Mi}}}
        containers:
        - {name: c, image: "busybox:1.36", resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}}
EOF
) || fail "valid job refused: $out"
  out=$(kubectl create --dry-run=server -f - 2>&1 <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: adm-ok
  annotations: {volcano.sh/hierarchy: root/a/b, volcano.sh/hierarchy-weights: 1/2.5/1e1}
spec:
  capability: {cpu: "8", memory: 16Gi}
  deserved: {cpu: "4", memory: 8Gi}
  guarantee: {resource: {cpu: "2"}}
EOF
) || fail "valid queue refused: $out"
  local a
  for a in 'volcano.sh/jdb-min-available: "1"' 'volcano.sh/jdb-max-unavailable: "99%"' \
           'volcano.sh/jdb-min-available: "25%"'; do
    out=$(pod_dry_run "$ns" volcano "$a") || fail "pod with {$a} refused: $out"
  done
  # Both annotations are Volcano's business only for its own pods without a PodGroup.
  out=$(pod_dry_run "$ns" default-scheduler 'volcano.sh/jdb-min-available: "1", volcano.sh/jdb-max-unavailable: "0"') \
    || fail "a pod for another scheduler was checked: $out"
  out=$(pod_dry_run "$ns" volcano 'scheduling.k8s.io/group-name: pg, volcano.sh/jdb-min-available: "0"') \
    || fail "a pod of a PodGroup was checked: $out"
  kubectl delete ns "$ns" --timeout=120s >/dev/null
}

# pod_dry_run NS SCHEDULER ANNOTATIONS: create a pod with a server dry run.
pod_dry_run() {
  kubectl create --dry-run=server -n "$1" -f - 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {$3}
spec:
  schedulerName: $2
  containers: [{name: c, image: "busybox:1.36"}]
EOF
}

# The pods of Kiln Jobs (label volcano.sh/job-name) are left out by the object selector, before
# any expression runs, even with annotations the policy would refuse.
test_job_pods_not_matched() {
  ensure_installed
  local ns out
  ns=$(new_namespace adm-sel)
  out=$(kubectl create --dry-run=server -n "$ns" -f - 2>&1 <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {volcano.sh/job-name: j}
  annotations: {volcano.sh/jdb-min-available: "0"}
spec:
  schedulerName: volcano
  containers: [{name: c, image: "busybox:1.36"}]
EOF
) || fail "a Job's pod went through the pod policy: $out"
  expect_eq '[{"key":"volcano.sh/job-name","operator":"DoesNotExist"}]' \
    "$(kubectl get validatingadmissionpolicy kiln-pod-budget -o jsonpath='{.spec.matchConstraints.objectSelector.matchExpressions}')" \
    "object selector"
  kubectl delete ns "$ns" --timeout=120s >/dev/null
}

# pod_json NS [ANNOTATIONS-JSON [SPEC-EXTRA-JSON]]: the pod a server dry run of a create
# returns, after the mutating policies.
pod_json() {
  local a=${2:-'{}'} x=${3:-'{}'}
  jq -n --argjson a "$a" --argjson x "$x" \
    '{apiVersion: "v1", kind: "Pod", metadata: {name: "p", annotations: $a},
      spec: ({containers: [{name: "c", image: "busybox:1.36"}]} + $x)}' |
    kubectl create --dry-run=server -n "$1" -o json -f -
}

# rg_seen NS: the configuration is in force (a pod in the namespace group is mutated).
rg_seen() {
  [ "$(pod_json "$1" | jq -r .spec.schedulerName)" = volcano ]
}

# Volcano's resourceGroups (its pod mutating webhook) as the kiln-pod-resource-groups policy:
# the first group that matches a pod, by namespace, by annotation or by the
# volcano.sh/resource-group annotation, adds its labels to the node selector, sets its affinity
# when the pod has none, appends its tolerations and sets its scheduler name; other pods are
# untouched.
test_pod_resource_groups() {
  ensure_installed
  local ns out other a
  ns=$(new_namespace adm-rg)
  other=$(new_namespace adm-rgout)
  # The CRD comes with the install; the API server may need a moment to serve it.
  wait_for 30 "the AdmissionConfiguration kind served" kubectl get admissionconfigurations
  kubectl apply --server-side -f - >/dev/null <<EOF || fail "AdmissionConfiguration refused"
apiVersion: admission.kiln.dev/v1alpha1
kind: AdmissionConfiguration
metadata: {name: kiln-admission}
resourceGroups:
- resourceGroup: management
  object: {key: namespace, value: [$ns]}
  schedulerName: volcano
  labels: {volcano.sh/nodetype: management}
  tolerations: [{key: mng-taint, operator: Exists, effect: NoSchedule}]
- resourceGroup: cpu
  object:
    key: annotation
    value: ["volcano.sh/resource-group: cpu", "team: 'ml'"]
  labels: {volcano.sh/nodetype: cpu}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [cpu]}]}]
- resourceGroup: gpu
  schedulerName: volcano
  tolerations: [{key: gpu, operator: Equal, value: "true", effect: NoSchedule}]
EOF
  wait_for 30 "the resource groups in force" rg_seen "$ns"

  # The namespace group: labels merged into the pod's own selector, tolerations appended.
  out=$(pod_json "$ns" '{}' '{"nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "own", "operator": "Exists"}]}') || fail "create refused: $out"
  expect_eq '{"disk":"ssd","volcano.sh/nodetype":"management"}' \
    "$(jq -c '.spec.nodeSelector' <<<"$out")" "namespace group: node selector"
  expect_eq "own mng-taint" \
    "$(jq -r '[.spec.tolerations[].key | select(. == "own" or . == "mng-taint")] | join(" ")' <<<"$out")" \
    "namespace group: tolerations appended"
  expect_eq "volcano null" \
    "$(jq -r '[.spec.schedulerName, .spec.affinity] | map(tostring) | join(" ")' <<<"$out")" \
    "namespace group: scheduler, no affinity"
  # Only the first group that matches applies: the namespace group, not the annotation's.
  out=$(pod_json "$ns" '{"volcano.sh/resource-group": "cpu"}') || fail "create refused: $out"
  expect_eq management "$(jq -r '.spec.nodeSelector["volcano.sh/nodetype"]' <<<"$out")" \
    "first group wins"

  # The annotation group, by either of its annotations: selector and affinity; the scheduler
  # name stays the default.
  for a in '{"volcano.sh/resource-group": "cpu"}' '{"team": "ml"}'; do
    out=$(pod_json "$other" "$a") || fail "create refused: $out"
    expect_eq '{"volcano.sh/nodetype":"cpu"}' "$(jq -c .spec.nodeSelector <<<"$out")" \
      "annotation group $a: selector"
    expect_eq cpu "$(jq -r '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]' <<<"$out")" \
      "annotation group $a: affinity"
    expect_eq default-scheduler "$(jq -r .spec.schedulerName <<<"$out")" \
      "annotation group $a: scheduler"
  done
  # A pod's own affinity is kept.
  out=$(pod_json "$other" '{"team": "ml"}' '{"affinity": {"podAffinity": {}}}') ||
    fail "create refused: $out"
  expect_eq '{"podAffinity":{}}' "$(jq -c .spec.affinity <<<"$out")" "own affinity kept"
  # A group without object.key: the pod's volcano.sh/resource-group annotation names it.
  out=$(pod_json "$other" '{"volcano.sh/resource-group": "gpu"}') || fail "create refused: $out"
  expect_eq "volcano gpu null" \
    "$(jq -r '[.spec.schedulerName, ([.spec.tolerations[].key | select(. == "gpu")] | join(",")),
               .spec.nodeSelector] | map(tostring) | join(" ")' <<<"$out")" \
    "group by name"

  # A pod in no group is untouched.
  out=$(pod_json "$other" '{"volcano.sh/resource-group": "none", "team": "web"}') ||
    fail "create refused: $out"
  expect_eq "default-scheduler null null" \
    "$(jq -r '[.spec.schedulerName, .spec.nodeSelector, .spec.affinity] | map(tostring) | join(" ")' <<<"$out")" \
    "pod outside every group"
  expect_eq "" \
    "$(jq -r '[.spec.tolerations[]?.key | select(. == "mng-taint" or . == "gpu")] | join(" ")' <<<"$out")" \
    "pod outside every group: tolerations"

  kubectl delete admissionconfiguration kiln-admission >/dev/null
  kubectl delete ns "$ns" "$other" --timeout=120s >/dev/null
}

# Every refusal a policy makes, with Volcano's words (the files' `# expect:` lines).
test_policy_refusals() {
  ensure_installed
  expect_refused 14 "$E2E_DIR"/manifests-invalid/{job-template-,job-topology-,queue-negative-,queue-hierarchy-,pod-jdb-}*.yaml
}

e2e_main "$@"
rc=$?
remove_admission_policies
exit $rc
