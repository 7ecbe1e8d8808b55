#!/usr/bin/env bash
# Issue #31's placement plugins on the real control plane, kiln-scheduler started per test
# with the plugin in its configuration:
#  - nodegroup: two queues bound (spec.affinity) to two node groups (volcano.sh/nodegroup-name)
#    never cross, and the overflow of one waits rather than use the other's nodes;
#  - task-topology: a ps/worker Job with volcano.sh/task-topology-affinity "ps,worker" lands
#    on one node though nodeorder's leastrequested would spread it;
#  - extender: a small HTTP extender (python http.server, below) vetoes one node in its
#    predicate verb, and the pods avoid it;
#  - numa-aware: with Numatopology objects for three kwok nodes, Guaranteed single-numa-node
#    pods land only on the node where one NUMA node holds their CPUs, and one that fits no
#    NUMA node waits with Volcano's reasons;
#  - usage: a fake Prometheus (python http.server) reports one node over the cpu threshold,
#    and no pod goes there;
#  - resourcequota: a second gang over the namespace's ResourceQuota waits Pending with
#    Volcano's event; resource-strategy-fit: cpu MostAllocated packs pods on the fuller node;
#  - deviceshare vGPU on MIG: with Volcano's volcano-vgpu-device-config geometries, pods take
#    MIG instances of a GPU registered in mode "mig".
# Each test makes its own kwok nodes (labelled grp=<test>, tainted kiln-p31=<test>, which
# only its pods tolerate), so other suites are not disturbed.
# shellcheck shell=bash
SUITE=plugins31
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCHED=$KILN_BUILD/scheduler/kiln-scheduler
CTRL=$KILN_BUILD/controller/kiln-controller
D=$KILN_CLUSTER_DIR
LOG=$D/logs/kiln-scheduler-plugins31.log
mkdir -p "$D/logs" "$D/pids"

nodes() { # GRP COUNT ARGS...
  local grp=$1 count=$2
  shift 2
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count "$count" --prefix "$grp-" \
    --label "grp=$grp" --taint "kiln-p31=$grp:NoSchedule" "$@" >/dev/null \
    || fail "cannot create nodes $grp-*"
  # No node lifecycle controller runs to lift the API server's not-ready taint (group_nodes).
  kubectl taint nodes -l "grp=$grp" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

conf() { # FILE EXTRA-PLUGINS (YAML lines of the second tier)
  cat > "$1" <<EOF
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
$2
EOF
}

start_scheduler() { # CONF
  "$SCHED" --kubeconfig "$KUBECONFIG" --scheduler-conf "$1" --v=3 --leader-elect=false \
    >>"$LOG" 2>&1 &
  echo $! > "$D/pids/kiln-scheduler-plugins31.pid"
  echo "$SCHED" > "$D/pids/kiln-scheduler-plugins31.exe"
}

stop_scheduler() {
  [ -f "$D/pids/kiln-scheduler-plugins31.pid" ] || return 0
  kill "$(cat "$D/pids/kiln-scheduler-plugins31.pid")" 2>/dev/null || true
  rm -f "$D/pids/kiln-scheduler-plugins31.pid" "$D/pids/kiln-scheduler-plugins31.exe"
}

# bound NS: "pod node" per pod that has a node, sorted.
bound() {
  kubectl get pods -n "$1" -o json | jq -r '.items[] | select(.spec.nodeName != null) |
    "\(.metadata.name) \(.spec.nodeName)"' | sort
}

wait_bound() { # SECS NS COUNT
  local deadline=$((SECONDS + $1))
  until [ "$(bound "$2" | wc -l)" -ge "$3" ]; do
    [ $SECONDS -lt $deadline ] || fail "want $3 pods bound in $2, got: $(bound "$2" | tr '\n' ';')"
    sleep 0.3
  done
}

pods() { # NS PREFIX QUEUE COUNT CPU GRP: COUNT one-pod gangs PREFIX-i in QUEUE on GRP's nodes
  local i sel=""         # (GRP none: no node selector)
  [ "$6" = none ] || sel="nodeSelector: {grp: $6}"
  for ((i = 0; i < $4; i++)); do
    cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2-$i}
spec: {minMember: 1, queue: $3}
---
apiVersion: v1
kind: Pod
metadata: {name: $2-$i, annotations: {scheduling.k8s.io/group-name: $2-$i}}
spec:
  schedulerName: volcano
  $sel
  tolerations: [{key: kiln-p31, value: $6, effect: NoSchedule}]
  containers: [{name: c, image: fake, resources: {requests: {cpu: "$5"}, limits: {cpu: "$5"}}}]
EOF
  done | kubectl apply -n "$1" -f - >/dev/null || fail "cannot create pods $2-*"
}

kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh crd/jobs.batch.volcano.sh >/dev/null 2>&1

# Two tenants, each queue bound to its own node group; tenant a asks for more than its group
# holds: its overflow waits, and neither tenant's pods are ever on the other's nodes.
test_nodegroup_queues_never_cross() {
  local ns c=$D/p31-nodegroup.conf
  ns=$(new_namespace p31)
  nodes p31ga 2 --cpu 4 --memory 16Gi --label volcano.sh/nodegroup-name=p31-a
  nodes p31gb 2 --cpu 4 --memory 16Gi --label volcano.sh/nodegroup-name=p31-b
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create the queues"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: p31-qa}
spec:
  weight: 1
  affinity: {nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [p31-a]}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: p31-qb}
spec:
  weight: 1
  affinity: {nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [p31-b]}}
EOF
  # Both groups' nodes tolerated by every pod: only the plugin keeps them apart.
  kubectl taint nodes -l 'grp in (p31ga,p31gb)' kiln-p31- >/dev/null
  conf "$c" "  - name: nodegroup"
  pods "$ns" a p31-qa 10 1 none
  pods "$ns" b p31-qb 6 1 none
  start_scheduler "$c"
  wait_bound 90 "$ns" 14
  local pod node group
  while read -r pod node; do
    group=$(kubectl get node "$node" -o jsonpath='{.metadata.labels.volcano\.sh/nodegroup-name}')
    case $pod in
      a-*) expect_eq p31-a "$group" "group of $pod's node $node" ;;
      b-*) expect_eq p31-b "$group" "group of $pod's node $node" ;;
    esac
  done < <(bound "$ns")
  # a's 10 one-cpu pods on 8 cpu of group a: 8 run, 2 wait, though group b has 2 cpu free.
  expect_eq 8 "$(bound "$ns" | grep -c '^a-')" "tenant a's bound pods"
  expect_eq 6 "$(bound "$ns" | grep -c '^b-')" "tenant b's bound pods"
  stop_scheduler
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete queue p31-qa p31-qb --wait=false >/dev/null 2>&1 || true
}

# A ps/worker Job with "ps,worker" task-topology affinity: one node holds all three pods,
# where leastrequested alone spreads them over the three empty nodes.
test_task_topology_one_node() {
  local ns c=$D/p31-tt.conf
  ns=$(new_namespace p31)
  nodes p31tt 3 --cpu 8 --memory 32Gi
  conf "$c" "  - name: nodeorder
  - name: task-topology
    arguments:
      task-topology.weight: 10"
  start_scheduler "$c"
  "$CTRL" --kubeconfig "$KUBECONFIG" --leader-elect=false >>"$D/logs/kiln-controller-p31.log" 2>&1 &
  echo $! > "$D/pids/kiln-controller-p31.pid"
  echo "$CTRL" > "$D/pids/kiln-controller-p31.exe"
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the Job"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf
  annotations: {volcano.sh/task-topology-affinity: "ps,worker"}
spec:
  schedulerName: volcano
  minAvailable: 3
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        nodeSelector: {grp: p31tt}
        tolerations: [{key: kiln-p31, value: p31tt, effect: NoSchedule}]
        containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}, limits: {cpu: "1"}}}]
  - name: worker
    replicas: 2
    template:
      spec:
        nodeSelector: {grp: p31tt}
        tolerations: [{key: kiln-p31, value: p31tt, effect: NoSchedule}]
        containers: [{name: c, image: fake, resources: {requests: {cpu: "1"}, limits: {cpu: "1"}}}]
EOF
  wait_bound 90 "$ns" 3
  local nodes_used
  nodes_used=$(bound "$ns" | awk '{print $2}' | sort -u | wc -l)
  expect_eq 1 "$nodes_used" "nodes the ps/worker Job uses ($(bound "$ns" | tr '\n' ';'))"
  kill "$(cat "$D/pids/kiln-controller-p31.pid")" 2>/dev/null || true
  rm -f "$D/pids/kiln-controller-p31.pid" "$D/pids/kiln-controller-p31.exe"
  stop_scheduler
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# The extender: a Python HTTP server answering Volcano's predicate verb, refusing one node.
test_extender_veto() {
  local ns c=$D/p31-ext.conf srv=$D/p31-extender.py port_file=$D/p31-extender.port
  ns=$(new_namespace p31)
  nodes p31ext 2 --cpu 8 --memory 32Gi
  cat > "$srv" <<'EOF'
import http.server, json, sys
VETO, PORT_FILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        out = {}
        if self.path.endswith("/predicate"):
            node = req.get("node", {}).get("Name", "")
            with open(LOG, "a") as f:
                f.write("%s %s\n" % (req.get("task", {}).get("Name", ""), node))
            if node == VETO:
                out = {"errorMessage": "node %s vetoed by the test extender" % node}
        body = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(PORT_FILE, "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
EOF
  rm -f "$port_file" "$D/p31-extender.log"
  python3 "$srv" p31ext-0 "$port_file" "$D/p31-extender.log" &
  echo $! > "$D/pids/p31-extender.pid"
  echo python3 > "$D/pids/p31-extender.exe"
  wait_for 20 "the extender's port" test -s "$port_file"
  # binpack prefers the fuller node: p31ext-0 holds a pod already, so without the veto the
  # gangs would go there.
  conf "$c" "  - name: binpack
  - name: extender
    arguments:
      extender.urlPrefix: http://127.0.0.1:$(cat "$port_file")
      extender.httpTimeout: 2s
      extender.predicateVerb: predicate"
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the resident pod"
apiVersion: v1
kind: Pod
metadata: {name: resident}
spec:
  nodeName: p31ext-0
  tolerations: [{key: kiln-p31, value: p31ext, effect: NoSchedule}]
  containers: [{name: c, image: fake, resources: {requests: {cpu: "2"}}}]
EOF
  pods "$ns" e default 4 1 p31ext
  start_scheduler "$c"
  wait_bound 90 "$ns" 5
  local pod node
  while read -r pod node; do
    [ "$pod" = resident ] && continue
    expect_eq p31ext-1 "$node" "node of $pod"
  done < <(bound "$ns")
  grep -q ' p31ext-0$' "$D/p31-extender.log" || fail "the extender was never asked about p31ext-0"
  stop_scheduler
  kill "$(cat "$D/pids/p31-extender.pid")" 2>/dev/null || true
  rm -f "$D/pids/p31-extender.pid" "$D/pids/p31-extender.exe"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# numatopo NODE TM-POLICY CPU-ALLOCATABLE: 2 NUMA nodes of 4 CPUs (one socket each).
numatopo() {
  local c detail=""
  for c in 0 1 2 3 4 5 6 7; do
    detail+="\"$c\": {numa: $((c / 4)), socket: $((c / 4)), core: $c}, "
  done
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create the Numatopology of $1"
apiVersion: nodeinfo.volcano.sh/v1alpha1
kind: Numatopology
metadata: {name: $1}
spec:
  policies: {CPUManagerPolicy: static, TopologyManagerPolicy: $2}
  numares: {cpu: {allocatable: "$3", capacity: 8}}
  cpuDetail: {${detail%, }}
EOF
}

numa_pod() { # NAME CPU
  cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $1}
spec: {minMember: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {scheduling.k8s.io/group-name: $1, volcano.sh/numa-topology-policy: single-numa-node}
spec:
  schedulerName: volcano
  nodeSelector: {grp: p31numa}
  tolerations: [{key: kiln-p31, value: p31numa, effect: NoSchedule}]
  containers:
  - name: c
    image: fake
    resources:
      requests: {cpu: "$2", memory: 1Gi}
      limits: {cpu: "$2", memory: 1Gi}
EOF
}

# Three nodes with room for the pods: -0's NUMA nodes have 3 free CPUs each, -1's all 4, -2
# publishes no Numatopology. 4-CPU single-numa-node pods go to -1 only; a 5-CPU one fits no
# NUMA node and stays Pending with the plugin's reasons.
test_numaaware_single_numa_node() {
  local ns c=$D/p31-numa.conf
  ns=$(new_namespace p31)
  nodes p31numa 3 --cpu 16 --memory 64Gi
  numatopo p31numa-0 single-numa-node 0-2,4-6
  numatopo p31numa-1 single-numa-node 0-7
  conf "$c" "  - name: numa-aware
    arguments:
      weight: 1"
  { numa_pod n0 4; numa_pod n1 4; numa_pod big 5; } | kubectl apply -n "$ns" -f - >/dev/null \
    || fail "cannot create the pods"
  start_scheduler "$c"
  wait_bound 90 "$ns" 2
  local pod node msg
  while read -r pod node; do
    expect_eq p31numa-1 "$node" "node of $pod"
  done < <(bound "$ns")
  wait_for 30 "big's reason" sh -c "kubectl get podgroup -n $ns big -o json | grep -q \
    'plugin numa-aware predicates failed for task big container c on node p31numa-1'"
  msg=$(kubectl get podgroup -n "$ns" big -o jsonpath='{.status.conditions[*].message}')
  expect_match 'numa info is empty' "$msg" "big's reason for the node without a Numatopology"
  expect_eq "" "$(kubectl get pod -n "$ns" big -o jsonpath='{.spec.nodeName}')" "big stays Pending"
  stop_scheduler
  kubectl delete numatopologies p31numa-0 p31numa-1 --wait=false >/dev/null 2>&1
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# The usage plugin: a fake Prometheus (python http.server) answers Volcano's two queries per
# node, p31use-0 at 95% cpu and p31use-1 at 10%: with the 80% threshold no pod goes to -0,
# though binpack would put them all there (it holds a pod already).
test_usage_threshold() {
  local ns c=$D/p31-usage.conf srv=$D/p31-prom.py port_file=$D/p31-prom.port
  ns=$(new_namespace p31)
  nodes p31use 2 --cpu 8 --memory 32Gi
  cat > "$srv" <<'EOF'
import http.server, json, re, sys, time, urllib.parse
PORT_FILE, LOG = sys.argv[1], sys.argv[2]
LOAD = {"p31use-0": 95.0, "p31use-1": 10.0}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
        q = form.get("query", [""])[0]
        node = (re.search(r'instance="([^"]+)"', q) or [None, ""])[1]
        with open(LOG, "a") as f:
            f.write("%s %s\n" % (self.path, node))
        result = []
        if self.path == "/api/v1/query" and node in LOAD:
            result = [{"metric": {"instance": node}, "value": [time.time(), str(LOAD[node])]}]
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(PORT_FILE, "w") as f:
    f.write(str(s.server_address[1]))
s.serve_forever()
EOF
  rm -f "$port_file" "$D/p31-prom.log"
  python3 "$srv" "$port_file" "$D/p31-prom.log" &
  echo $! > "$D/pids/p31-prom.pid"
  echo python3 > "$D/pids/p31-prom.exe"
  wait_for 20 "the fake Prometheus' port" test -s "$port_file"
  conf "$c" "  - name: binpack
  - name: usage
    arguments:
      thresholds:
        cpu: 80
        mem: 80"
  cat >> "$c" <<EOF
metrics:
  type: prometheus
  address: http://127.0.0.1:$(cat "$port_file")
  interval: 1s
EOF
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the resident pod"
apiVersion: v1
kind: Pod
metadata: {name: resident}
spec:
  nodeName: p31use-0
  tolerations: [{key: kiln-p31, value: p31use, effect: NoSchedule}]
  containers: [{name: c, image: fake, resources: {requests: {cpu: "2"}}}]
EOF
  start_scheduler "$c"
  # Both nodes asked about twice (cpu, memory): the next session has the figures.
  wait_for 30 "the scheduler's queries" sh -c "[ \$(grep -c ' p31use-0$' $D/p31-prom.log) -ge 2 ] &&
    [ \$(grep -c ' p31use-1$' $D/p31-prom.log) -ge 2 ]"
  sleep 1
  pods "$ns" u default 3 1 p31use
  wait_bound 90 "$ns" 4
  local pod node
  while read -r pod node; do
    [ "$pod" = resident ] && continue
    expect_eq p31use-1 "$node" "node of $pod"
  done < <(bound "$ns")
  expect_match 'query' "$(head -1 "$D/p31-prom.log")" "the queries go to /api/v1/query"
  stop_scheduler
  kill "$(cat "$D/pids/p31-prom.pid")" 2>/dev/null || true
  rm -f "$D/pids/p31-prom.pid" "$D/pids/p31-prom.exe"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# resourcequota: the namespace's quota (requests.cpu 3) takes one 2-cpu gang; the second waits
# Pending with Volcano's event instead of having its pods refused.
test_resourcequota_pending() {
  local ns c=$D/p31-rq.conf i
  ns=$(new_namespace p31)
  nodes p31rq 1 --cpu 8 --memory 32Gi
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the quota"
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec: {hard: {requests.cpu: "3", limits.cpu: "3"}}
EOF
  # No kube-controller-manager runs here to write the quota's status: written as it would.
  kubectl patch resourcequota -n "$ns" q --subresource=status --type=merge -p \
    '{"status":{"hard":{"requests.cpu":"3","limits.cpu":"3"},"used":{"requests.cpu":"0","limits.cpu":"0"}}}' \
    >/dev/null || fail "cannot write the quota's status"
  conf "$c" "  - name: resourcequota"
  for i in 0 1; do
    cat <<EOF
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: rq-$i}
spec:
  minMember: 1
  minResources: {cpu: "2", requests.cpu: "2", limits.cpu: "2", pods: "1"}
EOF
  done | kubectl apply -n "$ns" -f - >/dev/null || fail "cannot create the PodGroups"
  start_scheduler "$c"
  wait_for 60 "one PodGroup Inqueue" sh -c \
    "kubectl get podgroup -n $ns -o jsonpath='{.items[*].status.phase}' | grep -q Inqueue"
  wait_for 60 "the quota event" sh -c "kubectl get events -n $ns -o json |
    grep -q 'resource quota insufficient'"
  local phases
  phases=$(kubectl get podgroup -n "$ns" -o jsonpath='{.items[*].status.phase}' | tr ' ' '\n' | sort | tr '\n' ' ')
  expect_eq "Inqueue Pending " "$phases" "one gang let in, the other waits for the quota"
  stop_scheduler
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# resource-strategy-fit: cpu MostAllocated puts the pods on the node that already holds one
# (LeastAllocated, its default, would spread them to the empty one).
test_rsf_most_allocated() {
  local ns c=$D/p31-rsf.conf
  ns=$(new_namespace p31)
  nodes p31rsf 2 --cpu 8 --memory 32Gi
  conf "$c" "  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 10
      resources:
        cpu:
          type: MostAllocated
          weight: 1"
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || fail "cannot create the resident pod"
apiVersion: v1
kind: Pod
metadata: {name: resident}
spec:
  nodeName: p31rsf-1
  tolerations: [{key: kiln-p31, value: p31rsf, effect: NoSchedule}]
  containers: [{name: c, image: fake, resources: {requests: {cpu: "2"}}}]
EOF
  pods "$ns" r default 3 1 p31rsf
  start_scheduler "$c"
  wait_bound 90 "$ns" 4
  local pod node
  while read -r pod node; do
    expect_eq p31rsf-1 "$node" "node of $pod"
  done < <(bound "$ns")
  stop_scheduler
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# deviceshare vGPU on MIG: Volcano's volcano-vgpu-device-config ConfigMap (kube-system) with
# the A100 40GB geometries, a node whose GPU the device plugin registers in mode "mig". Two
# pods of 8000 MiB (volcano.sh/vgpu-mode: mig) take group2's 2g.10gb instances 0 and 1 with
# the assignment annotations Volcano writes; a third of 12000 MiB, which the GPU's memory
# still holds but no instance of the group in use does, waits with Volcano's reason.
mig_pods() { # NS NAME MEM [GRP]: a one-pod PodGroup NAME, its pod asking for one vGPU of MEM MiB
  local grp=${4:-p31mig}
  cat <<EOF | kubectl apply -n "$1" -f - >/dev/null || fail "cannot create $2"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: $2}
spec: {minMember: 1, queue: default}
---
apiVersion: v1
kind: Pod
metadata:
  name: $2
  annotations: {scheduling.k8s.io/group-name: $2, volcano.sh/vgpu-mode: mig}
spec:
  schedulerName: volcano
  nodeSelector: {grp: $grp}
  tolerations: [{key: kiln-p31, value: $grp, effect: NoSchedule}]
  containers:
  - name: c
    image: fake
    resources: {limits: {volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "$3"}}
EOF
}

# mig_node GRP: node GRP-0 with one A100 40GB the vGPU device plugin registers in mode "mig"
# (GPU-GRP-a, 10 splits), its handshake fresh.
mig_node() {
  local now
  nodes "$1" 1 --cpu 8 --memory 32Gi --extended volcano.sh/vgpu-number=10 \
    --extended volcano.sh/vgpu-memory=40960
  now=$(date -u '+%Y.%m.%d %H:%M:%S')
  kubectl annotate node "$1-0" --overwrite >/dev/null \
    "volcano.sh/node-vgpu-register=GPU-$1-a,10,40960,NVIDIA-A100-PCIE-40GB,true,mig:" \
    "volcano.sh/node-vgpu-handshake=Reported_$now" || fail "cannot annotate $1-0"
}

mig_config() { # [NAME NAMESPACE]: the ConfigMap (default: Volcano's name, in kube-system)
  kubectl apply -f - >/dev/null <<EOF || fail "cannot create the device configuration"
apiVersion: v1
kind: ConfigMap
metadata: {name: ${1:-volcano-vgpu-device-config}, namespace: ${2:-kube-system}}
data:
  device-config.yaml: |
    nvidia:
      resourceCountName: volcano.sh/vgpu-number
      resourceMemoryName: volcano.sh/vgpu-memory
      knownMigGeometries:
      - models: [ "A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB" ]
        allowedGeometries:
          - group: group1
            geometries:
            - {name: 1g.5gb, memory: 5120, count: 7}
          - group: group2
            geometries:
            - {name: 2g.10gb, memory: 10240, count: 3}
            - {name: 1g.5gb, memory: 5120, count: 1}
EOF
}

test_vgpu_mig_instance() {
  local ns c=$D/p31-mig.conf p ids=""
  ns=$(new_namespace p31)
  mig_node p31mig
  mig_config
  conf "$c" "  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true"
  start_scheduler "$c"
  mig_pods "$ns" a 8000
  wait_bound 60 "$ns" 1
  mig_pods "$ns" b 8000
  wait_bound 60 "$ns" 2
  for p in a b; do
    ids+="$(kubectl get pod -n "$ns" "$p" -o json | jq -r '.metadata.annotations |
      [.["volcano.sh/vgpu-ids-new"], .["volcano.sh/devices-to-allocate"],
       .["volcano.sh/vgpu-node"], .["volcano.sh/bind-phase"]] | join(" ")');"
  done
  local want="GPU-p31mig-a[group2-0],NVIDIA,8000,0: GPU-p31mig-a[group2-0],NVIDIA,8000,0: p31mig-0"
  want+=" allocating;GPU-p31mig-a[group2-1],NVIDIA,8000,0: GPU-p31mig-a[group2-1],NVIDIA,8000,0:"
  want+=" p31mig-0 allocating;"
  expect_eq "$want" "$ids" "the MIG instances assigned"
  mig_pods "$ns" c 12000
  wait_for 60 "Volcano's device reason for c" sh -c "kubectl get podgroup -n $ns c \
    -o jsonpath='{.status.conditions[*].message}' | grep -q 'hami-vgpuDeviceSharing error'"
  expect_eq "" "$(kubectl get pod -n "$ns" c -o jsonpath='{.spec.nodeName}')" "c's node"
  stop_scheduler
  kubectl delete configmap -n kube-system volcano-vgpu-device-config --wait=false >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# The ConfigMap named by deviceshare.KnownGeometriesCMName / KnownGeometriesCMNamespace (as
# HAMi's and Ascend's guides configure it) is the one read: its geometries give the pod a
# MIG instance; without them the GPU would be shared as hami-core, with no instance.
test_vgpu_mig_from_the_named_configmap() {
  local ns c=$D/p31-mig-named.conf ids
  ns=$(new_namespace p31)
  mig_node p31migb
  mig_config p31-device-config kube-public
  conf "$c" "  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.KnownGeometriesCMName: p31-device-config
      deviceshare.KnownGeometriesCMNamespace: kube-public"
  start_scheduler "$c"
  mig_pods "$ns" a 8000 p31migb
  wait_bound 60 "$ns" 1
  ids=$(kubectl get pod -n "$ns" a -o jsonpath='{.metadata.annotations.volcano\.sh/vgpu-ids-new}')
  expect_eq "GPU-p31migb-a[group2-0],NVIDIA,8000,0:" "$ids" "the MIG instance assigned"
  ! grep -q 'KnownGeometriesCM.*not read' "$LOG" || fail "the arguments were called not read"
  stop_scheduler
  kubectl delete configmap -n kube-public p31-device-config --wait=false >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
rc=$?
for p in kiln-scheduler-plugins31 kiln-controller-p31 p31-extender p31-prom; do
  if [ -f "$D/pids/$p.pid" ]; then
    kill "$(cat "$D/pids/$p.pid")" 2>/dev/null
    rm -f "$D/pids/$p.pid" "$D/pids/$p.exe"
  fi
done
kubectl delete queue p31-qa p31-qb --wait=false >/dev/null 2>&1
kubectl delete numatopologies p31numa-0 p31numa-1 --wait=false >/dev/null 2>&1
kubectl delete configmap -n kube-system volcano-vgpu-device-config --wait=false >/dev/null 2>&1
kubectl delete configmap -n kube-public p31-device-config --wait=false >/dev/null 2>&1
kubectl delete nodes -l 'grp in (p31ga,p31gb,p31tt,p31ext,p31numa,p31use,p31rq,p31rsf,p31mig,p31migb)' --wait=false >/dev/null 2>&1
if [ -n "${KILN_E2E_LOGS:-}" ]; then
  mkdir -p "$KILN_E2E_LOGS" && cp "$LOG" "$KILN_E2E_LOGS"/ 2>/dev/null
fi
exit $rc
