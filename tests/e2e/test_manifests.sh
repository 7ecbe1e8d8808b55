#!/usr/bin/env bash
# The install manifests against a real API server: the CRDs and the whole install apply
# (server dry run first, then for real), the RBAC matrix holds, `kubectl explain` and the
# printer columns work, every example is accepted, and every object under manifests-invalid/
# is refused with the message its `# expect:` line names. Nothing here waits for the
# Deployments to run (the cluster has no container runtime); their pods are checked with a
# server dry run against Pod Security "restricted" instead.
# shellcheck shell=bash
SUITE=manifests
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MANIFESTS=$KILN_ROOT/manifests
INVALID_DIR=$E2E_DIR/manifests-invalid
CRDS=(jobs.batch.volcano.sh commands.bus.volcano.sh podgroups.scheduling.volcano.sh
      queues.scheduling.volcano.sh cronjobs.batch.volcano.sh jobtemplates.flow.volcano.sh
      jobflows.flow.volcano.sh hypernodes.topology.volcano.sh
      numatopologies.nodeinfo.volcano.sh)

ensure_installed() {
  if ! kubectl get queue default >/dev/null 2>&1 || ! kubectl get deploy -n kiln-system \
      kiln-scheduler >/dev/null 2>&1 || ! admission_policies_active; then
    kiln_install
  fi
}

test_apply_dry_run_then_install() {
  local out
  # A server dry run of everything that does not depend on an earlier object of the install.
  out=$(kubectl apply --server-side --dry-run=server -f "$MANIFESTS/crd" \
        -f "$MANIFESTS/namespace.yaml" 2>&1) || fail "server dry run of the CRDs: $out"
  for crd in "${CRDS[@]}"; do
    expect_match "$crd serverside-applied \(server dry run\)" "$out" "dry run of $crd"
  done
  kiln_install
  for crd in "${CRDS[@]}"; do
    expect_eq True "$(jsonpath "crd/$crd" '{.status.conditions[?(@.type=="Established")].status}')" \
      "$crd established"
  done
  expect_eq "true 1" "$(jsonpath queue/default '{.spec.reclaimable} {.spec.weight}')" \
    "default queue (reclaimable, weight 1)"
  # Now that the namespace and CRDs exist, the whole install passes a server dry run, both
  # server-side and client-side (the last-applied annotation must fit in 256 KiB).
  out=$(kubectl apply --server-side --dry-run=server -k "$MANIFESTS" 2>&1) \
    || fail "server-side dry run of the install: $out"
  out=$(kubectl apply --dry-run=server -k "$MANIFESTS" 2>&1) \
    || fail "client-side apply dry run of the install: $out"
  expect_match "deployment.apps/kiln-scheduler" "$out"
}

# The pods the Deployments would create, checked by the API server in kiln-system, where
# Pod Security "restricted" is enforced. A copy without the security context must be refused,
# which shows the check bites.
test_deployment_pods_valid() {
  ensure_installed
  local d pod out
  for d in kiln-controller kiln-scheduler; do
    pod=$(kubectl get deploy -n kiln-system "$d" -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["spec"]["template"]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": d["metadata"]["name"] + "-dry-run",
                               "namespace": "kiln-system", "labels": t["metadata"]["labels"]},
                  "spec": t["spec"]}))')
    out=$(kubectl create --dry-run=server -f - <<<"$pod" 2>&1) || fail "$d pod refused: $out"
    [[ "$out" != *Warning* ]] || fail "$d pod draws warnings: $out"
    out=$(python3 -c '
import json, sys
p = json.loads(sys.argv[1])
del p["spec"]["securityContext"]
for c in p["spec"]["containers"]:
    del c["securityContext"]
print(json.dumps(p))' "$pod" | kubectl create --dry-run=server -f - 2>&1) \
      && fail "$d pod without a security context was accepted"
    expect_match 'violates PodSecurity "restricted' "$out" "$d without securityContext"
    # Volcano-style flags and the health probes.
    local args
    args=$(jsonpath "deploy/$d" '{.spec.template.spec.containers[0].args}' kiln-system)
    for flag in '--logtostderr' '-v=[0-9]' '--leader-elect=true' '--enable-healthz=true' \
                '--healthz-address=:11251' '--enable-metrics=true' '--listen-address=:808'; do
      expect_match "$flag" "$args" "$d args"
    done
    # Liveness is the loop turning (/livez), not the informers' first sync (/healthz).
    expect_eq "/livez 11251" \
      "$(jsonpath "deploy/$d" '{.spec.template.spec.containers[0].livenessProbe.httpGet.path} {.spec.template.spec.containers[0].ports[?(@.name=="healthz")].containerPort}' kiln-system)" \
      "$d liveness probe"
    expect_eq /readyz \
      "$(jsonpath "deploy/$d" '{.spec.template.spec.containers[0].readinessProbe.httpGet.path}' kiln-system)" \
      "$d readiness probe"
    # The binary accepts exactly these arguments (flags are parsed before --help is acted on).
    local argv=() perr
    mapfile -t argv < <(jq -r '.[]' <<<"$args")
    perr=$("$KILN_BUILD/${d#kiln-}/$d" "${argv[@]}" --help 2>&1 >/dev/null) \
      || fail "$d refuses its Deployment's arguments: $perr"
    expect_match '^[0-9]+m?$' \
      "$(jsonpath "deploy/$d" '{.spec.template.spec.containers[0].resources.requests.cpu}' kiln-system)" \
      "$d cpu request"
  done
  expect_match '--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf' \
    "$(jsonpath deploy/kiln-scheduler '{.spec.template.spec.containers[0].args}' kiln-system)"
  expect_match 'actions: "enqueue, allocate, backfill"' \
    "$(jsonpath cm/kiln-scheduler-configmap '{.data.volcano-scheduler\.conf}' kiln-system)"
  for d in kiln-controller kiln-scheduler; do
    expect_eq "$d" "$(jsonpath "svc/$d-metrics" '{.spec.selector.app\.kubernetes\.io/name}' kiln-system)" \
      "metrics service selector"
  done
}

# kiln-ingress: applied, it selects both Deployments' pods, admits the scraper to the port each
# names "metrics", and names no peer for the health port (the kubelet probes from the pod's own
# node, which NetworkPolicy always admits).
test_network_policy() {
  ensure_installed
  local np=networkpolicy/kiln-ingress d labels
  expect_eq Ingress "$(jsonpath "$np" '{.spec.policyTypes[*]}' kiln-system)" "policy types"
  expect_eq "metrics" "$(jsonpath "$np" '{.spec.ingress[*].ports[*].port}' kiln-system)" \
    "only the metrics port is admitted"
  expect_eq "monitoring prometheus" \
    "$(jsonpath "$np" '{.spec.ingress[0].from[0].namespaceSelector.matchLabels.kubernetes\.io/metadata\.name} {.spec.ingress[0].from[0].podSelector.matchLabels.app\.kubernetes\.io/name}' kiln-system)" \
    "default scraper"
  for d in kiln-controller kiln-scheduler; do
    labels=$(jsonpath "deploy/$d" '{.spec.template.metadata.labels.app\.kubernetes\.io/name}' kiln-system)
    expect_match "$labels" "$(jsonpath "$np" '{.spec.podSelector.matchExpressions[0].values}' kiln-system)" \
      "$d selected"
    expect_match '^[0-9]+$' \
      "$(jsonpath "deploy/$d" '{.spec.template.spec.containers[0].ports[?(@.name=="metrics")].containerPort}' kiln-system)" \
      "$d names its metrics port"
  done
}

test_examples_accepted() {
  ensure_installed
  local ns f out
  ns=$(new_namespace examples)
  for f in "$MANIFESTS"/examples/*.yaml; do
    out=$(kubectl create --dry-run=server -n "$ns" -f "$f" 2>&1) \
      || fail "example $(basename "$f") refused: $out"
  done
  # One for real, to see the schema defaults that replace Volcano's mutating webhook.
  kubectl create -n "$ns" -f "$MANIFESTS/examples/job-single.yaml" >/dev/null
  expect_eq "default volcano 3 3" \
    "$(jsonpath vcjob/hello '{.spec.queue} {.spec.schedulerName} {.spec.maxRetry} {.spec.tasks[0].maxRetry}' "$ns")" \
    "defaults"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# Every file in manifests-invalid/ is refused, with the message of its `# expect:` line.
test_invalid_objects_rejected() {
  ensure_installed
  expect_refused 30 "$INVALID_DIR"/*.yaml
}

# job_patch NS JSON-PATCH: apply a JSON patch to vcjob/upd and print the server's answer.
job_patch() {
  kubectl patch vcjob upd -n "$1" --type=json -p "$2" 2>&1
}

test_update_rules() {
  ensure_installed
  local ns out
  ns=$(new_namespace updates)
  kubectl create -n "$ns" -f - >/dev/null <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: upd
spec:
  minAvailable: 2
  policies: [{event: PodEvicted, action: RestartJob}]
  volumes:
    - mountPath: /scratch
      volumeClaim: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
    - mountPath: /data
      volumeClaimName: data
  tasks:
    - name: a
      replicas: 2
      template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}
    - name: b
      replicas: 1
      template: {spec: {containers: [{name: c, image: "busybox:1.36"}]}}
EOF
  # What Volcano lets change.
  local allowed=(
    '[{"op":"replace","path":"/spec/tasks/0/replicas","value":4}]'
    '[{"op":"add","path":"/spec/tasks/0/minAvailable","value":3}]'
    '[{"op":"replace","path":"/spec/minAvailable","value":3}]'
    '[{"op":"add","path":"/spec/priorityClassName","value":"high"}]'
    '[{"op":"add","path":"/metadata/labels","value":{"team":"ml"}}]'
    # The controller records the claim it created from volumeClaim.
    '[{"op":"add","path":"/spec/volumes/0/volumeClaimName","value":"upd-pvc-abc123def456"}]'
  )
  local p
  for p in "${allowed[@]}"; do
    out=$(job_patch "$ns" "$p") || fail "allowed update refused: $p: $out"
  done
  # What it does not, each with the message an operator should see.
  local refused=(
    '[{"op":"remove","path":"/spec/tasks/1"}]|job updates may not add or remove tasks'
    '[{"op":"add","path":"/spec/tasks/-","value":{"name":"c","replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"x"}]}}}}]|job updates may not add or remove tasks'
    '[{"op":"replace","path":"/spec/tasks/0/template/spec/containers/0/image","value":"busybox:2"}]|a task.s name, template, policies'
    '[{"op":"replace","path":"/spec/tasks/0/name","value":"renamed"}]|a task.s name, template, policies'
    '[{"op":"add","path":"/spec/tasks/1/policies","value":[{"event":"PodFailed","action":"RestartTask"}]}]|a task.s name, template, policies'
    '[{"op":"replace","path":"/spec/tasks/0/maxRetry","value":9}]|a task.s name, template, policies'
    '[{"op":"replace","path":"/spec/queue","value":"other"}]|job updates may not change fields other than `minAvailable`, `tasks\[\*\].replicas under spec`'
    '[{"op":"replace","path":"/spec/schedulerName","value":"default-scheduler"}]|job updates may not change fields other than'
    '[{"op":"remove","path":"/spec/policies"}]|job updates may not change fields other than'
    '[{"op":"replace","path":"/spec/maxRetry","value":7}]|job updates may not change fields other than'
    '[{"op":"add","path":"/spec/plugins","value":{"svc":[]}}]|job updates may not change fields other than'
    '[{"op":"replace","path":"/spec/volumes/0/mountPath","value":"/other"}]|job updates may not change fields other than .*volumes are fixed'
    '[{"op":"replace","path":"/spec/volumes/1/volumeClaimName","value":"other"}]|volumes are fixed'
    # Volcano's words for these differ on update (validateJobUpdate) from create.
    '[{"op":"replace","path":"/spec/tasks/0/replicas","value":1}]|on update: .minAvailable. must be <= .replicas. in task'
    '[{"op":"replace","path":"/spec/minAvailable","value":50}]|on update: job .minAvailable. must not be greater than total replicas'
    # A negative count is the schema's (minimum), refused in the API server's words as on Volcano.
    '[{"op":"replace","path":"/spec/tasks/1/replicas","value":-1}]|spec.tasks\[1\].replicas: Invalid value: -1: spec.tasks\[1\].replicas in body should be greater than or equal to 0'
    '[{"op":"replace","path":"/spec/minAvailable","value":-1}]|spec.minAvailable: Invalid value: -1: spec.minAvailable in body should be greater than or equal to 0'
  )
  local entry msg
  for entry in "${refused[@]}"; do
    p=${entry%%|*}
    msg=${entry#*|}
    out=$(job_patch "$ns" "$p") && fail "update accepted: $p"
    expect_match "$msg" "$out" "refusal of $p"
  done
  # The status subresource is the controller's and is not held to the spec rules.
  out=$(kubectl patch vcjob upd -n "$ns" --subresource=status --type=merge \
        -p '{"status":{"state":{"phase":"Pending"},"minAvailable":3}}' 2>&1) \
    || fail "status update refused: $out"
  out=$(kubectl patch vcjob upd -n "$ns" --subresource=status --type=merge \
        -p '{"status":{"state":{"phase":"Sleeping"}}}' 2>&1) && fail "bad phase accepted"
  expect_match 'Unsupported value: "Sleeping"' "$out"
  out=$(kubectl patch vcjob upd -n "$ns" --subresource=status --type=merge \
        -p '{"status":{"running":-1}}' 2>&1) && fail "negative status count accepted"
  # The status subresource is validated against the status schema: the path in the message
  # is relative to it.
  expect_match 'status.running: Invalid value: -1: running in body should be greater than or equal to 0' "$out"
  # A Command cannot be retargeted.
  kubectl create -n "$ns" -f - >/dev/null <<EOF
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: suspend}
action: AbortJob
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: upd, uid: $(jsonpath vcjob/upd '{.metadata.uid}' "$ns")}
EOF
  out=$(kubectl patch command suspend -n "$ns" --type=merge -p '{"action":"RestartJob"}' 2>&1) \
    && fail "command action change accepted"
  expect_match "a command's action cannot be changed" "$out"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# can SA VERB RESOURCE[/SUBRESOURCE][:NAME] [NAMESPACE]: print yes or no. (kubectl would read
# "pods/binding" as the pod named binding, hence --subresource.)
can() {
  local r=$3 name= res sub=
  [[ "$r" != *:* ]] || { name=${r#*:}; r=${r%%:*}; }
  res=${r%%/*}
  [[ "$r" != */* ]] || sub=${r#*/}
  kubectl auth can-i "$2" "$res${name:+/$name}" ${sub:+--subresource="$sub"} \
    --as="system:serviceaccount:kiln-system:$1" ${4:+-n "$4"} 2>/dev/null || true
}

test_rbac_matrix() {
  ensure_installed
  # sa | verb | resource | namespace (- for none) | want
  local rows=(
    "kiln-controller create pods default yes"
    "kiln-controller delete pods default yes"
    "kiln-controller create pods/binding default no"
    "kiln-controller update pods/status default no"
    "kiln-controller watch jobs.batch.volcano.sh - yes"
    "kiln-controller update jobs.batch.volcano.sh/status default yes"
    "kiln-controller update jobs.batch.volcano.sh/finalizers default yes"
    "kiln-controller create jobs.batch.volcano.sh default yes"
    "kiln-controller update jobs.batch.volcano.sh default no"
    "kiln-controller watch cronjobs.batch.volcano.sh - yes"
    "kiln-controller update cronjobs.batch.volcano.sh/status default yes"
    "kiln-controller update cronjobs.batch.volcano.sh default no"
    "kiln-controller create cronjobs.batch.volcano.sh default no"
    "kiln-controller watch jobflows.flow.volcano.sh - yes"
    "kiln-controller update jobflows.flow.volcano.sh/status default yes"
    "kiln-controller update jobtemplates.flow.volcano.sh/status default yes"
    "kiln-controller delete jobtemplates.flow.volcano.sh default no"
    "kiln-controller delete commands.bus.volcano.sh default yes"
    "kiln-controller create commands.bus.volcano.sh default no"
    "kiln-controller get commands.bus.volcano.sh default no"
    "kiln-controller create podgroups.scheduling.volcano.sh default yes"
    "kiln-controller delete podgroups.scheduling.volcano.sh default yes"
    "kiln-controller patch podgroups.scheduling.volcano.sh default yes"
    "kiln-controller update podgroups.scheduling.volcano.sh default no"
    "kiln-controller patch queues.scheduling.volcano.sh/status - yes"
    "kiln-controller update queues.scheduling.volcano.sh/status - no"
    "kiln-controller patch queues.scheduling.volcano.sh - yes"
    "kiln-controller create queues.scheduling.volcano.sh - no"
    "kiln-controller delete queues.scheduling.volcano.sh - no"
    "kiln-controller delete jobs.batch.volcano.sh default yes"
    "kiln-controller patch pods default yes"
    "kiln-controller update pods default no"
    "kiln-controller get pods default no"
    "kiln-controller watch replicasets.apps - yes"
    "kiln-controller watch statefulsets.apps - yes"
    "kiln-controller update statefulsets.apps default no"
    "kiln-controller list daemonsets.apps - no"
    "kiln-controller create persistentvolumeclaims default yes"
    "kiln-controller delete persistentvolumeclaims default no"
    "kiln-controller create services default yes"
    "kiln-controller create configmaps default yes"
    "kiln-controller create secrets default yes"
    "kiln-controller get secrets default yes"
    "kiln-controller delete secrets default yes"
    "kiln-controller list secrets - no"
    "kiln-controller watch secrets default no"
    "kiln-controller update secrets default no"
    "kiln-controller patch secrets default no"
    "kiln-controller patch configmaps default yes"
    "kiln-controller list configmaps - no"
    "kiln-controller watch configmaps kiln-system yes"
    "kiln-controller watch configmaps default no"
    "kiln-controller create hypernodes.topology.volcano.sh - yes"
    "kiln-controller update hypernodes.topology.volcano.sh - no"
    "kiln-controller patch hypernodes.topology.volcano.sh/status - yes"
    "kiln-controller watch nodes - yes"
    "kiln-controller patch nodes - no"
    "kiln-controller patch services default no"
    "kiln-controller list services - no"
    "kiln-controller create networkpolicies.networking.k8s.io default yes"
    "kiln-controller get networkpolicies.networking.k8s.io default yes"
    "kiln-controller list networkpolicies.networking.k8s.io - no"
    "kiln-controller list priorityclasses.scheduling.k8s.io - yes"
    "kiln-controller create events default yes"
    "kiln-controller patch events default yes"
    "kiln-controller update events default no"
    "kiln-controller create events.events.k8s.io default no"
    "kiln-controller update leases.coordination.k8s.io:vc-controller-manager kiln-system yes"
    "kiln-controller get leases.coordination.k8s.io:vc-controller-manager kiln-system yes"
    "kiln-controller update leases.coordination.k8s.io:volcano kiln-system no"
    "kiln-controller list leases.coordination.k8s.io kiln-system no"
    "kiln-controller create leases.coordination.k8s.io kiln-system yes"
    "kiln-controller create leases.coordination.k8s.io default no"
    "kiln-controller list nodes - yes"
    "kiln-controller create clusterroles.rbac.authorization.k8s.io - no"
    "kiln-scheduler create pods/binding default yes"
    "kiln-scheduler create pods default no"
    "kiln-scheduler update pods default no"
    "kiln-scheduler delete pods default yes"
    "kiln-scheduler get pods default no"
    "kiln-scheduler watch pods - yes"
    "kiln-scheduler watch numatopologies.nodeinfo.volcano.sh - yes"
    "kiln-scheduler watch configmaps - yes"
    "kiln-scheduler update configmaps kube-system no"
    "kiln-scheduler create numatopologies.nodeinfo.volcano.sh - no"
    "kiln-scheduler patch pods/status default yes"
    "kiln-scheduler update pods/status default no"
    "kiln-scheduler get secrets default no"
    "kiln-scheduler list secrets - no"
    "kiln-scheduler watch secrets kiln-system no"
    "kiln-scheduler list nodes - yes"
    "kiln-scheduler update nodes - no"
    "kiln-scheduler patch podgroups.scheduling.volcano.sh default yes"
    "kiln-scheduler update podgroups.scheduling.volcano.sh default no"
    "kiln-scheduler create podgroups.scheduling.volcano.sh default no"
    "kiln-scheduler create queues.scheduling.volcano.sh - yes"
    "kiln-scheduler patch queues.scheduling.volcano.sh/status - yes"
    "kiln-scheduler update queues.scheduling.volcano.sh/status - no"
    "kiln-scheduler delete queues.scheduling.volcano.sh - no"
    "kiln-scheduler create jobs.batch.volcano.sh default no"
    "kiln-scheduler list priorityclasses.scheduling.k8s.io - yes"
    "kiln-scheduler list persistentvolumeclaims - yes"
    "kiln-scheduler list services - no"
    "kiln-scheduler list poddisruptionbudgets.policy - yes"
    "kiln-scheduler watch resourcequotas - yes"
    "kiln-scheduler update resourcequotas default no"
    "kiln-scheduler list resourceslices.resource.k8s.io - yes"
    "kiln-scheduler list deviceclasses.resource.k8s.io - yes"
    "kiln-scheduler watch resourceclaims.resource.k8s.io - yes"
    "kiln-scheduler patch resourceclaims.resource.k8s.io/status default yes"
    "kiln-scheduler update resourceclaims.resource.k8s.io/status default no"
    "kiln-scheduler create resourceclaims.resource.k8s.io default no"
    "kiln-scheduler watch hypernodes.topology.volcano.sh - yes"
    "kiln-scheduler create hypernodes.topology.volcano.sh - no"
    "kiln-scheduler watch persistentvolumes - yes"
    "kiln-scheduler patch persistentvolumes - yes"
    "kiln-scheduler patch persistentvolumeclaims default yes"
    "kiln-scheduler update persistentvolumeclaims default no"
    "kiln-scheduler list storageclasses.storage.k8s.io - yes"
    "kiln-scheduler list csistoragecapacities.storage.k8s.io - yes"
    "kiln-scheduler watch csinodes.storage.k8s.io - yes"
    "kiln-scheduler list csidrivers.storage.k8s.io - yes"
    "kiln-scheduler create persistentvolumes - no"
    "kiln-scheduler create events default yes"
    "kiln-scheduler patch events default yes"
    "kiln-scheduler create events.events.k8s.io default no"
    "kiln-scheduler update leases.coordination.k8s.io:volcano kiln-system yes"
    "kiln-scheduler update leases.coordination.k8s.io:vc-controller-manager kiln-system no"
    "kiln-scheduler create leases.coordination.k8s.io kiln-system yes"
    "kiln-scheduler create leases.coordination.k8s.io default no"
    "kiln-scheduler create configmaps kiln-system no"
  )
  local row sa verb res ns want got bad=0
  for row in "${rows[@]}"; do
    read -r sa verb res ns want <<<"$row"
    [ "$ns" != - ] || ns=""
    got=$(can "$sa" "$verb" "$res" "$ns")
    if [ "$got" != "$want" ]; then
      echo "    $sa $verb $res ${ns:+-n $ns}: want $want, got '$got'" >&2
      bad=$((bad + 1))
    fi
  done
  [ "$bad" -eq 0 ] || fail "$bad RBAC rows wrong"
}

test_explain_and_descriptions() {
  ensure_installed
  local out
  out=$(kubectl explain vcjob.spec.tasks.policies 2>&1) || fail "explain: $out"
  expect_match 'KIND: +Job' "$out"
  expect_match 'exitCode' "$out"
  expect_match 'Lifecycle policies of this task' "$out"
  out=$(kubectl explain vcjob.spec.tasks.template.spec.containers.resources 2>&1) || fail "$out"
  expect_match 'requests' "$out"
  out=$(kubectl explain queue.spec.weight 2>&1) || fail "$out"
  expect_match 'defaults to 1' "$out"
  out=$(kubectl explain pg.spec.minMember 2>&1) || fail "$out"
  expect_match 'schedulable together' "$out"
  out=$(kubectl explain command.target 2>&1) || fail "$out"
  expect_match 'acts on' "$out"
  # Every field of every CRD, as served, has a description.
  local crd
  for crd in "${CRDS[@]}"; do
    out=$(kubectl get crd "$crd" -o json | python3 -c '
import json, sys
missing = []
def walk(node, path):
    for name, sub in node.get("properties", {}).items():
        if name != "metadata" and not sub.get("description"):
            missing.append(path + "." + name)
        walk(sub, path + "." + name)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            walk(node[key], path + "[]")
for v in json.load(sys.stdin)["spec"]["versions"]:
    walk(v["schema"]["openAPIV3Schema"], "")
print(" ".join(missing))')
    [ -z "$out" ] || fail "$crd: fields without a description: $out"
  done
}

test_printer_columns_and_short_names() {
  ensure_installed
  local out ns
  out=$(kubectl api-resources --api-group=batch.volcano.sh --no-headers 2>&1)
  expect_match 'vcjob,vj +batch.volcano.sh/v1alpha1 +true +Job' "$out" "Job short names"
  expect_match 'cronvcjob,cronvj +batch.volcano.sh/v1alpha1 +true +CronJob' "$out" "CronJob short names"
  out=$(kubectl api-resources --api-group=flow.volcano.sh --no-headers 2>&1)
  expect_match 'jf +flow.volcano.sh/v1alpha1 +true +JobFlow' "$out" "JobFlow short name"
  expect_match 'jt +flow.volcano.sh/v1alpha1 +true +JobTemplate' "$out" "JobTemplate short name"
  expect_eq "Status Age" "$(jsonpath crd/jobflows.flow.volcano.sh '{.spec.versions[0].additionalPrinterColumns[*].name}')" \
    "JobFlow columns"
  out=$(kubectl api-resources --api-group=scheduling.volcano.sh --no-headers 2>&1)
  expect_match 'pg,podgroup-v1beta1 +scheduling.volcano.sh/v1beta1 +true +PodGroup' "$out"
  expect_match 'q,queue-v1beta1 +scheduling.volcano.sh/v1beta1 +false +Queue' "$out"
  expect_eq "{}" "$(jsonpath crd/jobs.batch.volcano.sh '{.spec.versions[0].subresources.status}')" \
    "Job status subresource"
  expect_eq "{}" "$(jsonpath crd/queues.scheduling.volcano.sh '{.spec.versions[0].subresources.status}')" \
    "Queue status subresource"
  expect_eq "" "$(jsonpath crd/podgroups.scheduling.volcano.sh '{.spec.versions[0].subresources.status}')" \
    "PodGroup has no status subresource (as in Volcano)"
  ns=$(new_namespace columns)
  kubectl create -n "$ns" -f "$MANIFESTS/examples/job-single.yaml" >/dev/null
  out=$(kubectl get vj -n "$ns" 2>&1 | sed -n 1p)
  expect_match '^NAME +STATUS +MINAVAILABLE +RUNNINGS +AGE$' "$out" "vcjob columns"
  out=$(kubectl get vcjob -n "$ns" -o wide 2>&1 | sed -n 1p)
  expect_match 'AGE +QUEUE$' "$out" "vcjob wide columns"
  kubectl create -n "$ns" -f - >/dev/null <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1}
spec: {minMember: 2}
EOF
  out=$(kubectl get pg -n "$ns" -o wide 2>&1)
  expect_match 'NAME +STATUS +MINMEMBER +RUNNINGS +AGE +QUEUE' "$out" "podgroup columns"
  expect_match 'pg1 +2 +.* default' "$out" "podgroup queue default"
  out=$(kubectl get q default 2>&1 | sed -n 1p)
  expect_match '^NAME +PARENT$' "$out" "queue columns"
  kubectl delete ns "$ns" --wait=false >/dev/null
}

# The committed CRDs are what manifests/hack/gen-crds.py makes from this API server's OpenAPI.
test_generated_crds_current() {
  local out
  out=$(python3 "$MANIFESTS/hack/gen-crds.py" --check 2>&1) || fail "$out"
}

e2e_main "$@"
rc=$?
remove_admission_policies
exit $rc
