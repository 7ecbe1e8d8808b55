#!/usr/bin/env bash
# The control plane is real: etcd, kube-apiserver, kube-controller-manager, kwok and kubectl
# each do their part, and a pod goes from bound to Running to Succeeded or Failed as its
# annotations or its containers' commands say.
source "$(dirname "$0")/lib.sh"
SUITE=cluster

PKI=$KILN_CLUSTER_DIR/pki
SERVER=$(cat "$KILN_CLUSTER_DIR/server")

bindpod() { # ns pod node
  "$KILN_BUILD/tests/e2e/bindpod" --server "$SERVER" --cacert "$PKI/ca.crt" \
    --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"
}

# pod_yaml NAME [ANNOTATIONS] [COMMAND] [RESTART_POLICY]: a pod no scheduler will pick up (the
# test binds it); COMMAND is its container's command as a YAML flow list.
pod_yaml() {
  cat <<POD
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {${2:-}}
spec:
  schedulerName: e2e-none
  restartPolicy: ${4:-Always}
  containers:
  - {name: main, image: busybox${3:+, command: $3}}
POD
}

test_components_are_real() {
  local v
  v=$(kubectl version -o json | jq -r .serverVersion.gitVersion)
  expect_match '^v1\.3[4-6]\.' "$v" "kube-apiserver version"
  v=$(kubectl version --client -o json | jq -r .clientVersion.gitVersion)
  expect_match '^v1\.3[4-6]\.' "$v" "kubectl version"
  expect_match '\[\+\]etcd ok' "$(kubectl get --raw '/readyz?verbose')" "apiserver readyz"
  expect_match '^etcd Version: 3\.[56]\.' "$("$KILN_BIN/etcd" --version | sed -n 1p)" "etcd version"
  expect_match 'v0\.7\.' "$("$KILN_BIN/kwok" --version)" "kwok version"
  # etcd answers on the client port the API server uses.
  local etcd_url
  etcd_url=$(tr '\0' '\n' <"/proc/$(cat "$KILN_CLUSTER_DIR/pids/kube-apiserver.pid")/cmdline" \
    | sed -n 's/^--etcd-servers=//p')
  expect_match '"etcdserver":"3\.[56]\.' "$(curl -fsS "$etcd_url/version")" "etcd /version"
  for p in etcd kube-apiserver kube-controller-manager kwok; do
    kill -0 "$(cat "$KILN_CLUSTER_DIR/pids/$p.pid")" || fail "$p is not running"
  done
}

test_crd_is_served() {
  kubectl apply -f - >/dev/null <<'CRD'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.e2e.kiln.dev}
spec:
  group: e2e.kiln.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wdg]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1, default: 3}
            x-kubernetes-validations:
            - rule: "self.size <= 10"
              message: "size must be at most 10"
CRD
  kubectl wait --for=condition=Established crd/widgets.e2e.kiln.dev --timeout=30s >/dev/null
  local ns
  ns=$(new_namespace crd)
  wait_for 20 "widgets to be served" kubectl get widgets -n "$ns"
  printf 'apiVersion: e2e.kiln.dev/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {}\n' \
    | kubectl apply -n "$ns" -f - >/dev/null
  expect_eq 3 "$(kubectl get wdg w1 -n "$ns" -o jsonpath='{.spec.size}')" "defaulted size"
  local out
  out=$(printf 'apiVersion: e2e.kiln.dev/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {size: 11}\n' \
    | kubectl apply -n "$ns" -f - 2>&1) && fail "an invalid widget was accepted"
  expect_match 'size must be at most 10' "$out" "CEL rejection"
}

test_pod_bound_runs_then_succeeds() {
  local ns node
  ns=$(new_namespace pod)
  node=kwok-node-0  # tests/e2e/run starts the cluster with kwok-node-0..2
  pod_yaml ok '"kwok.kiln.dev/run-for": "2s"' | kubectl apply -n "$ns" -f - >/dev/null
  expect_eq Pending "$(jsonpath pod/ok '{.status.phase}' "$ns")" "phase before binding"
  bindpod "$ns" ok "$node" | grep -q 'over HTTP/2' || fail "binding did not go over HTTP/2"
  expect_eq "$node" "$(jsonpath pod/ok '{.spec.nodeName}' "$ns")" "nodeName after binding"
  wait_jsonpath 30 pod/ok '{.status.phase}' Running "$ns"
  [ -n "$(jsonpath pod/ok '{.status.podIP}' "$ns")" ] || fail "a Running pod has no podIP"
  local t0=$SECONDS
  wait_jsonpath 30 pod/ok '{.status.phase}' Succeeded "$ns"
  # It ran for about the 2 s its annotation asked for.
  [ $((SECONDS - t0)) -le 10 ] || fail "the pod ran for $((SECONDS - t0))s, not about 2s"
  expect_eq 0 "$(jsonpath pod/ok '{.status.containerStatuses[0].state.terminated.exitCode}' "$ns")" \
    "exit code"
}

test_pod_fails_with_annotated_exit_code() {
  local ns node
  ns=$(new_namespace pod)
  node=kwok-node-0
  pod_yaml bad '"kwok.kiln.dev/run-for": "1s", "kwok.kiln.dev/exit-code": "3"' \
    | kubectl apply -n "$ns" -f - >/dev/null
  bindpod "$ns" bad "$node" >/dev/null
  wait_jsonpath 30 pod/bad '{.status.phase}' Failed "$ns"
  expect_eq 3 "$(jsonpath pod/bad '{.status.containerStatuses[0].state.terminated.exitCode}' "$ns")" \
    "exit code"
}

# terminated STATE_FIELD POD NS: a field of the pod's first container's terminated state.
terminated() {
  jsonpath "pod/$2" "{.status.containerStatuses[0].state.terminated.$1}" "$3"
}

# Without annotations, a pod ends as its containers' commands would on a node
# (tests/cluster/kwok-stages.yaml, kiln-pod-command).
test_pod_follows_its_command() {
  local ns node=kwok-node-1 p
  ns=$(new_namespace cmd)
  {
    # On a node the kubelet restarts this one's container (restartPolicy Always): it never ends.
    pod_yaml again '' '[sh, -c, "exit 3"]'
    echo ---; pod_yaml three '' '[sh, -c, "exit 3"]' Never
    echo ---; pod_yaml nap '' '[sleep, "2"]' Never
    echo ---; pod_yaml ok '' '[/bin/true]' Never
    echo ---; pod_yaml bad '' '["false"]' Never
  } | kubectl apply -n "$ns" -f - >/dev/null
  for p in again three nap ok bad; do bindpod "$ns" "$p" "$node" >/dev/null; done
  wait_jsonpath 30 pod/three '{.status.phase}' Failed "$ns"
  expect_eq "3 Error" "$(terminated exitCode three "$ns") $(terminated reason three "$ns")" \
    "sh -c 'exit 3'"
  [ "$(jsonpath pod/nap '{.status.phase}' "$ns")" != Succeeded ] \
    || fail "sleep 2 was over as soon as exit 3, bound just before it"
  wait_jsonpath 30 pod/ok '{.status.phase}' Succeeded "$ns"
  expect_eq "0 Completed" "$(terminated exitCode ok "$ns") $(terminated reason ok "$ns")" true
  wait_jsonpath 30 pod/bad '{.status.phase}' Failed "$ns"
  expect_eq 1 "$(terminated exitCode bad "$ns")" false
  wait_jsonpath 30 pod/nap '{.status.phase}' Succeeded "$ns"
  expect_eq 0 "$(terminated exitCode nap "$ns")" "sleep 2"
  # The container ran 2 s: its start (when kwok made it Running) and finish, to the second
  # the API keeps, are at least 2 s apart, and not much more.
  local ran started finished
  started=$(date -d "$(terminated startedAt nap "$ns")" +%s)
  finished=$(date -d "$(terminated finishedAt nap "$ns")" +%s)
  ran=$((finished - started))
  [ "$ran" -ge 2 ] && [ "$ran" -le 10 ] || fail "sleep 2 ran for ${ran}s"
  # `again` was bound first and exits at once on a node; it is still Running here.
  expect_eq Running "$(jsonpath pod/again '{.status.phase}' "$ns")" "restartPolicy Always"
}

test_binding_an_unknown_pod_fails() {
  local ns out
  ns=$(new_namespace pod)
  out=$(bindpod "$ns" ghost kwok-node-0 2>&1) && fail "binding a missing pod succeeded"
  expect_match 'HTTP 404' "$out" "binding answer"
}

test_garbage_collector_removes_dependents() {
  local ns node uid
  ns=$(new_namespace gc)
  node=kwok-node-0
  kubectl create configmap owner -n "$ns" >/dev/null
  uid=$(jsonpath configmap/owner '{.metadata.uid}' "$ns")
  for p in bound unbound; do
    kubectl apply -n "$ns" -f - >/dev/null <<POD
apiVersion: v1
kind: Pod
metadata:
  name: $p
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$uid"}]
spec:
  schedulerName: e2e-none
  containers: [{name: main, image: busybox}]
POD
  done
  bindpod "$ns" bound "$node" >/dev/null
  wait_jsonpath 30 pod/bound '{.status.phase}' Running "$ns"
  kubectl delete configmap owner -n "$ns" --wait=false >/dev/null
  wait_for 60 "dependents collected" no_pods_in "$ns"
}

test_namespace_deletion_finishes() {
  local ns
  ns=$(new_namespace del)
  kubectl create configmap x -n "$ns" >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
  wait_for 60 "namespace gone" bash -c "! kubectl get namespace $ns"
}

test_fake_node_with_extended_resources() {
  local prefix n
  prefix=e2e-gpu-$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')-
  n=${prefix}0
  "$KILN_ROOT/tests/cluster/nodes" --dir "$KILN_CLUSTER_DIR" --count 1 --prefix "$prefix" \
    --gpu 4 --extended example.com/fpga=2 --label zone=z1 --taint gpu=true:NoSchedule
  expect_eq 4 "$(jsonpath "node/$n" '{.status.allocatable.nvidia\.com/gpu}')" "gpu allocatable"
  expect_eq 2 "$(jsonpath "node/$n" '{.status.allocatable.example\.com/fpga}')" "fpga"
  expect_eq z1 "$(jsonpath "node/$n" '{.metadata.labels.zone}')" "label"
  expect_eq gpu=true:NoSchedule \
    "$(jsonpath "node/$n" '{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}')" \
    "taint"
  expect_eq True "$(jsonpath "node/$n" '{.status.conditions[?(@.type=="Ready")].status}')" "Ready"
  kubectl delete node "$n" >/dev/null
}

no_pods_in() {
  [ -z "$(kubectl get pods -n "$1" -o name)" ]
}

e2e_main "$@"
