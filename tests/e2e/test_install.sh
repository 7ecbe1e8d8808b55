#!/usr/bin/env bash
# The install as an operator does it: the manifests applied, both processes run under their
# own ServiceAccounts (tokens from the TokenRequest API, so the least-privilege RBAC is what
# they get) with their Deployments' arguments, and Volcano example Jobs run to Completed.
# Only the addresses and the config path are changed: these processes run on this machine,
# not in pods.
source "$(dirname "$0")/lib.sh"
SUITE=install
D=$KILN_CLUSTER_DIR
M=$KILN_ROOT/manifests

install_manifests() {
  kubectl apply --server-side --force-conflicts -f "$M/crd/" >/dev/null
  # Right after the apply a CRD may have no conditions at all, which kubectl wait refuses.
  wait_for 60 "CRDs established" kubectl wait --for=condition=Established crd --all --timeout=5s
  for f in namespace rbac-controller rbac-scheduler scheduler-configmap queue-default; do
    kubectl apply --server-side --force-conflicts -f "$M/$f.yaml" >/dev/null
  done
}

# sa_kubeconfig SA FILE: a kubeconfig that authenticates as kiln-system/SA.
sa_kubeconfig() {
  local token server
  token=$(kubectl create token "$1" -n kiln-system --duration=2h) || fail "no token for $1"
  server=$(kubectl config view -o jsonpath='{.clusters[0].cluster.server}')
  cat >"$2" <<KC
apiVersion: v1
kind: Config
clusters:
- name: kiln
  cluster: {server: "$server", certificate-authority: "$D/pki/ca.crt"}
users:
- name: $1
  user: {token: "$token"}
contexts:
- name: kiln
  context: {cluster: kiln, user: $1}
current-context: kiln
KC
  chmod 600 "$2"
}

# deployment_args NAME: the container args of manifests/NAME.yaml, one per line, with the
# listen addresses on loopback ports the kernel picks (one server: the same address) and the config file where this test keeps it.
deployment_args() {
  kubectl create --dry-run=client -f "$M/$1.yaml" -o json 2>/dev/null \
    | jq -r 'select(.kind=="Deployment") | .spec.template.spec.containers[0].args[]' \
    | sed -e "s|^--healthz-address=.*|--healthz-address=127.0.0.1:0|" \
          -e "s|^--listen-address=.*|--listen-address=127.0.0.1:0|" \
          -e "s|^--scheduler-conf=.*|--scheduler-conf=$D/install-scheduler.conf|" \
          -e "s|^--cache-dump-dir=.*|--cache-dump-dir=$D|"
}

start_as_sa() { # PROCESS
  local p=$1 args=()
  sa_kubeconfig "kiln-$p" "$D/kiln-$p.sa.kubeconfig"
  mapfile -t args < <(deployment_args "$p")
  [ ${#args[@]} -gt 3 ] || fail "no arguments read from manifests/$p.yaml"
  setsid "$KILN_BUILD/$p/kiln-$p" --kubeconfig="$D/kiln-$p.sa.kubeconfig" "${args[@]}" \
    >"$D/logs/kiln-$p.log" 2>&1 </dev/null &
  echo $! >"$D/pids/kiln-$p.pid"
  echo "$KILN_BUILD/$p/kiln-$p" >"$D/pids/kiln-$p.exe"
}

test_example_jobs_complete_under_least_privilege() {
  install_manifests
  kubectl get cm kiln-scheduler-configmap -n kiln-system \
    -o jsonpath='{.data.volcano-scheduler\.conf}' >"$D/install-scheduler.conf"
  [ -s "$D/install-scheduler.conf" ] || fail "empty scheduler configuration"
  start_as_sa controller
  start_as_sa scheduler
  # Leader election is on, as in the Deployments: each takes its Lease in kiln-system.
  wait_for 40 "controller lease" kubectl get lease -n kiln-system vc-controller-manager
  wait_for 40 "scheduler lease" kubectl get lease -n kiln-system volcano

  # Nodes of its own: earlier suites may have left the shared nodes full of pods.
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 2 --prefix install- >/dev/null 2>&1 \
    || fail "cannot add nodes"
  local ns
  ns=$(new_namespace install)
  kubectl create -n "$ns" -f "$M/examples/job-single.yaml" >/dev/null
  # A gang of three that each run 2 s.
  kubectl create -n "$ns" -f - >/dev/null <<'JOB'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: gang}
spec:
  minAvailable: 3
  tasks:
  - name: worker
    replicas: 3
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "2s"}}
      spec:
        restartPolicy: Never
        containers: [{name: w, image: busybox, resources: {requests: {cpu: 500m}}}]
JOB
  if ! (wait_jsonpath 90 vcjob/gang '{.status.state.phase}' Completed "$ns" &&
        wait_jsonpath 30 vcjob/hello '{.status.state.phase}' Completed "$ns"); then
    # Say why, for the one reading the CI log.
    kubectl get vcjob,pg,pods -n "$ns" -o wide >&2 || true
    kubectl get pg -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name}: {.status}{"\n"}{end}' >&2 || true
    kubectl get queues -o wide >&2 || true
    kubectl get events -n "$ns" --sort-by=.lastTimestamp 2>/dev/null | tail -15 >&2 || true
    tail -n 25 "$D/logs/kiln-scheduler.log" "$D/logs/kiln-controller.log" >&2 || true
    fail "the example jobs did not complete"
  fi
  expect_eq 3 "$(jsonpath vcjob/gang '{.status.succeeded}' "$ns")" "gang pods succeeded"
  # Every pod was bound by kiln-scheduler (the Scheduled event names it).
  local src
  src=$(kubectl get events -n "$ns" --field-selector reason=Scheduled \
    -o jsonpath='{range .items[*]}{.source.component}{.reportingComponent}{"\n"}{end}' | sort -u)
  expect_match 'volcano' "$src" "Scheduled events' source"
  # The other controllers under the same grants: the queue controller applies state, the
  # podgroup controller groups and annotates a bare pod, the gc controller deletes a Job.
  wait_jsonpath 60 queue/default '{.status.state}' Open
  kubectl create -n "$ns" -f - >/dev/null <<'POD'
apiVersion: v1
kind: Pod
metadata: {name: bare}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
POD
  local pg
  pg=podgroup-$(jsonpath pod/bare '{.metadata.uid}' "$ns")
  wait_jsonpath 60 pod/bare '{.metadata.annotations.scheduling\.k8s\.io/group-name}' "$pg" "$ns"
  wait_for 60 "the bare pod bound" bash -c "[ -n \"\$(kubectl get pod -n $ns bare -o jsonpath='{.spec.nodeName}')\" ]"
  kubectl create -n "$ns" -f - >/dev/null <<'JOB'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: brief}
spec:
  ttlSecondsAfterFinished: 0
  tasks:
  - name: t
    replicas: 1
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "1s"}}
      spec:
        restartPolicy: Never
        containers: [{name: t, image: busybox}]
JOB
  wait_for 90 "the finished Job deleted by its TTL" bash -c "! kubectl get vcjob -n $ns brief >/dev/null 2>&1"
  # No call was refused by RBAC. An event for a pod of an earlier suite's namespace that is
  # still being deleted is refused as Forbidden too ("unable to create new content in
  # namespace ... because it is being terminated"): that is the namespace lifecycle, not RBAC.
  local denied
  denied=$(grep -i -E 'forbidden|cannot (create|get|list|watch|update|patch|delete)' \
    "$D/logs/kiln-controller.log" "$D/logs/kiln-scheduler.log" |
    grep -v 'because it is being terminated' || true)
  [ -z "$denied" ] || fail "RBAC refused calls: $(echo "$denied" | head -5)"
}

e2e_main "$@"
