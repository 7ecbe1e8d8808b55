#!/usr/bin/env bash
# The control plane is real: etcd, kube-apiserver, kube-controller-manager, kwok and kubectl
# each do their part, and a pod goes from bound to Running to Succeeded or Failed as its
# annotations say.
source "$(dirname "$0")/lib.sh"
SUITE=cluster

PKI=$KILN_CLUSTER_DIR/pki
SERVER=$(cat "$KILN_CLUSTER_DIR/server")

bindpod() { # ns pod node
  "$KILN_BUILD/tests/e2e/bindpod" --server "$SERVER" --cacert "$PKI/ca.crt" \
    --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"
}

# pod_yaml NAME [ANNOTATIONS]: a pod no scheduler will pick up (the test binds it).
pod_yaml() {
  cat <<POD
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {${2:-}}
spec:
  schedulerName: e2e-none
  containers:
  - {name: main, image: busybox}
POD
}

test_components_are_real() {
  local v
  v=$(kubectl version -o json | jq -r .serverVersion.gitVersion)
  expect_match '^v1\.3[4-6]\.' "$v" "kube-apiserver version"
  v=$(kubectl version --client -o json | jq -r .clientVersion.gitVersion)
  expect_match '^v1\.3[4-6]\.' "$v" "kubectl version"
  kubectl get --raw /readyz?verbose | grep -q '\[+\]etcd ok' || fail "apiserver does not report etcd ok"
  "$KILN_BIN/etcd" --version | grep -q '^etcd Version: 3\.[56]\.' || fail "etcd is not 3.5/3.6"
  "$KILN_BIN/kwok" --version | grep -q 'v0\.7\.' || fail "kwok is not 0.7.x"
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
  node=$(kubectl get nodes -l type=kwok -o jsonpath='{.items[0].metadata.name}')
  [ -n "$node" ] || fail "no kwok node"
  pod_yaml ok '"kwok.kiln.dev/run-for": "2s"' | kubectl apply -n "$ns" -f - >/dev/null
  expect_eq Pending "$(jsonpath pod/ok '{.status.phase}' "$ns")" "phase before binding"
  bindpod "$ns" ok "$node" | grep -q 'over HTTP/2' || fail "binding did not go over HTTP/2"
  expect_eq "$node" "$(jsonpath pod/ok '{.spec.nodeName}' "$ns")" "nodeName after binding"
  wait_for 30 "pod Running" test "$(jsonpath pod/ok '{.status.phase}' "$ns")" = Running
  [ -n "$(jsonpath pod/ok '{.status.podIP}' "$ns")" ] || fail "a Running pod has no podIP"
  wait_for 30 "pod Succeeded" test "$(jsonpath pod/ok '{.status.phase}' "$ns")" = Succeeded
  expect_eq 0 "$(jsonpath pod/ok '{.status.containerStatuses[0].state.terminated.exitCode}' "$ns")" \
    "exit code"
}

test_pod_fails_with_annotated_exit_code() {
  local ns node
  ns=$(new_namespace pod)
  node=$(kubectl get nodes -l type=kwok -o jsonpath='{.items[0].metadata.name}')
  pod_yaml bad '"kwok.kiln.dev/run-for": "1s", "kwok.kiln.dev/exit-code": "3"' \
    | kubectl apply -n "$ns" -f - >/dev/null
  bindpod "$ns" bad "$node" >/dev/null
  wait_for 30 "pod Failed" test "$(jsonpath pod/bad '{.status.phase}' "$ns")" = Failed
  expect_eq 3 "$(jsonpath pod/bad '{.status.containerStatuses[0].state.terminated.exitCode}' "$ns")" \
    "exit code"
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
  node=$(kubectl get nodes -l type=kwok -o jsonpath='{.items[0].metadata.name}')
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
  wait_for 30 "bound pod Running" test "$(jsonpath pod/bound '{.status.phase}' "$ns")" = Running
  kubectl delete configmap owner -n "$ns" --wait=false >/dev/null
  wait_for 60 "dependents collected" test -z "$(kubectl get pods -n "$ns" -o name)"
}

test_namespace_deletion_finishes() {
  local ns
  ns=$(new_namespace del)
  kubectl create configmap x -n "$ns" >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
  wait_for 60 "namespace gone" bash -c "! kubectl get namespace $ns"
}

test_fake_node_with_extended_resources() {
  "$KILN_ROOT/tests/cluster/nodes" --dir "$KILN_CLUSTER_DIR" --count 1 --prefix e2e-gpu- \
    --gpu 4 --extended example.com/fpga=2 --label zone=z1 --taint gpu=true:NoSchedule 2>/dev/null
  expect_eq 4 "$(jsonpath node/e2e-gpu-0 '{.status.allocatable.nvidia\.com/gpu}')" "gpu allocatable"
  expect_eq 2 "$(jsonpath node/e2e-gpu-0 '{.status.allocatable.example\.com/fpga}')" "fpga"
  expect_eq z1 "$(jsonpath node/e2e-gpu-0 '{.metadata.labels.zone}')" "label"
  expect_eq gpu=true:NoSchedule \
    "$(jsonpath node/e2e-gpu-0 '{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}')" \
    "taint"
  expect_eq True "$(jsonpath node/e2e-gpu-0 '{.status.conditions[?(@.type=="Ready")].status}')" "Ready"
}

e2e_main "$@"
