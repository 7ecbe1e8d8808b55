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
  # The env of manifests/controller.yaml: KUBE_POD_NAMESPACE is the pod's namespace.
  KUBE_POD_NAMESPACE=kiln-system \
    setsid "$KILN_BUILD/$p/kiln-$p" --kubeconfig="$D/kiln-$p.sa.kubeconfig" "${args[@]}" \
    >"$D/logs/kiln-$p.log" 2>&1 </dev/null &
  echo $! >"$D/pids/kiln-$p.pid"
  echo "$KILN_BUILD/$p/kiln-$p" >"$D/pids/kiln-$p.exe"
}

sa_running() { # PROCESS: the process start_as_sa started is still running
  [ -f "$D/pids/kiln-$1.pid" ] && kill -0 "$(cat "$D/pids/kiln-$1.pid")" 2>/dev/null &&
    [ "$(cat "$D/pids/kiln-$1.exe" 2>/dev/null)" = "$KILN_BUILD/$1/kiln-$1" ] &&
    [ -f "$D/kiln-$1.sa.kubeconfig" ]
}

# installed: the manifests applied, both processes running under their ServiceAccounts with
# their Deployments' arguments, and nodes of this suite's own (earlier suites may have left
# the shared nodes full of pods). Each test calls it, so the tests run in any order.
installed() {
  if ! sa_running controller || ! sa_running scheduler; then
    install_manifests
    kubectl get cm kiln-scheduler-configmap -n kiln-system \
      -o jsonpath='{.data.volcano-scheduler\.conf}' >"$D/install-scheduler.conf"
    [ -s "$D/install-scheduler.conf" ] || fail "empty scheduler configuration"
    cp "$D/install-scheduler.conf" "$D/install-scheduler.conf.orig"
    sa_running controller || start_as_sa controller
    sa_running scheduler || start_as_sa scheduler
  fi
  # Leader election is on, as in the Deployments: each takes its Lease in kiln-system.
  wait_for 40 "controller lease" kubectl get lease -n kiln-system vc-controller-manager
  wait_for 40 "scheduler lease" kubectl get lease -n kiln-system volcano
  kubectl get node install-0 >/dev/null 2>&1 ||
    "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 2 --prefix install- >/dev/null 2>&1 ||
    fail "cannot add nodes"
}

test_example_jobs_complete_under_least_privilege() {
  installed
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
  # The events follow the binds (the recorder sends them after each bind answers).
  wait_for 30 "the Scheduled events" bash -c \
    "kubectl get events -n $ns --field-selector reason=Scheduled -o name | grep -q ."
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

# Every grant of the two ServiceAccounts is used by one of these, so that the audit log can
# prove each is needed (finally_rbac_least_privilege): the svc, ssh and env plugins' objects
# and a generated PVC, a Command, a CronJob with a history limit, a JobFlow from a JobTemplate,
# a Job that cannot fit (the scheduler's pod condition and PodGroup status), and a new queue.
test_every_grant_is_used_under_least_privilege() {
  installed
  local ns
  ns=$(new_namespace rbac)
  static_pv "$ns" 1Gi
  kubectl create -n "$ns" -f - >/dev/null <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: plugins}
spec:
  minAvailable: 2
  plugins: {svc: [], ssh: [], env: []}
  volumes:
  - mountPath: /scratch
    volumeClaim: {storageClassName: $ns, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  tasks:
  - name: node
    replicas: 2
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "2s"}}
      spec:
        restartPolicy: Never
        containers: [{name: node, image: busybox}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: abort-me}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "600s"}}
      spec:
        restartPolicy: Never
        containers: [{name: t, image: busybox}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: too-big}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: t, image: busybox, resources: {requests: {cpu: "40"}}}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "@every 3s"
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 1
  jobTemplate:
    spec:
      tasks:
      - name: t
        replicas: 1
        template:
          metadata: {annotations: {kwok.kiln.dev/run-for: "1s"}}
          spec:
            restartPolicy: Never
            containers: [{name: t, image: busybox}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: step}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "1s"}}
      spec:
        restartPolicy: Never
        containers: [{name: t, image: busybox}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: flow}
spec:
  jobRetainPolicy: delete
  flows:
  - name: step
YAML
  kubectl create -f - >/dev/null <<'YAML'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: rbac-install}
spec: {weight: 1}
YAML
  trap 'kubectl get vcjob,pg,pods,cronjob,jobflow -n '"$ns"' >&2; tail -n 20 "$D/logs/kiln-controller.log" "$D/logs/kiln-scheduler.log" >&2' EXIT
  wait_for 60 "the ssh plugin's Secret" kubectl get secret -n "$ns" plugins-ssh
  wait_for 60 "the svc plugin's Service" kubectl get service -n "$ns" plugins
  wait_jsonpath 90 vcjob/plugins '{.status.state.phase}' Completed "$ns"
  # A finished Job's plugins delete what they made (Volcano's OnJobDelete).
  wait_for 60 "the ssh Secret deleted" bash -c "! kubectl get secret -n $ns plugins-ssh >/dev/null 2>&1"
  wait_jsonpath 60 vcjob/abort-me '{.status.state.phase}' Running "$ns"
  local uid
  uid=$(jsonpath vcjob/abort-me '{.metadata.uid}' "$ns")
  kubectl create -n "$ns" -f - >/dev/null <<YAML
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: abort-it}
action: AbortJob
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: abort-me, uid: "$uid"}
YAML
  wait_jsonpath 60 vcjob/abort-me '{.status.state.phase}' Aborted "$ns"
  wait_for 60 "the Command consumed" bash -c "! kubectl get command -n $ns abort-it >/dev/null 2>&1"
  wait_for 60 "the unschedulable pod's condition" bash -c \
    "kubectl get pod -n $ns too-big-t-0 -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -q Unschedulable"
  wait_jsonpath 90 jobflow/flow '{.status.state.phase}' Succeed "$ns"
  # Runs of the CronJob, and the history limit deletes the first once a later one completed.
  local first
  wait_for 60 "the CronJob's first Job" bash -c "kubectl get vcjob -n $ns -o name | grep -q tick-"
  first=$(kubectl get vcjob -n "$ns" -o name | grep tick- | sort | head -1)
  wait_for 90 "$first deleted by the history limit" bash -c "! kubectl get -n $ns $first >/dev/null 2>&1"
  kubectl delete cronjob.batch.volcano.sh -n "$ns" tick >/dev/null
  wait_jsonpath 60 queue/rbac-install '{.status.state}' Open
  kubectl delete queue rbac-install --wait=false >/dev/null
  objects_in_the_way "$ns"
  scale_a_running_job "$ns"
  preempt_a_low_job "$ns"
  trap - EXIT
}

# objects_in_the_way NS: a Secret, Service, ConfigMap and NetworkPolicy planted under the names
# the ssh and svc plugins use are read (metadata only), never used: the Job gets a Warning.
objects_in_the_way() {
  kubectl create secret generic blocked-ssh -n "$1" --from-literal=id_rsa=planted >/dev/null
  kubectl create configmap blocked-svc -n "$1" --from-literal=hosts=planted >/dev/null
  kubectl create service clusterip blocked -n "$1" --clusterip=None >/dev/null
  kubectl create -n "$1" -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: blocked}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: blocked}
spec:
  plugins: {svc: [], ssh: []}
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: t, image: busybox}]
YAML
  wait_for 60 "the ObjectInTheWay event" bash -c \
    "kubectl get events -n $1 --field-selector reason=ObjectInTheWay,involvedObject.name=blocked --no-headers | grep -q ."
  [ -z "$(kubectl get pods -n "$1" -o name | grep '/blocked-')" ] || fail "a pod of the blocked Job was created"
  expect_eq planted "$(kubectl get secret -n "$1" blocked-ssh -o jsonpath='{.data.id_rsa}' | base64 -d)" "the planted Secret"
  kubectl delete vcjob -n "$1" blocked >/dev/null
}

# scale_a_running_job NS: more replicas of a running task change the PodGroup's minTaskMember,
# which the controller patches.
scale_a_running_job() {
  kubectl create -n "$1" -f - >/dev/null <<'YAML'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: scale-me}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "600s"}}
      spec:
        restartPolicy: Never
        containers: [{name: t, image: busybox}]
YAML
  wait_jsonpath 60 vcjob/scale-me '{.status.state.phase}' Running "$1"
  kubectl patch vcjob -n "$1" scale-me --type=json \
    -p '[{"op":"replace","path":"/spec/tasks/0/replicas","value":2},{"op":"add","path":"/spec/tasks/0/minAvailable","value":2}]' >/dev/null
  local pg
  pg=$(kubectl get pg -n "$1" -o name | grep '/scale-me-')
  wait_jsonpath 60 "$pg" '{.spec.minTaskMember.t}' 2 "$1"
  kubectl delete vcjob -n "$1" scale-me >/dev/null
}

# preempt_a_low_job NS: with preempt in the configuration (reloaded from the file, as the
# ConfigMap's mount would be), two high-priority Jobs in turn each evict a pod of a low one on
# a full node; the low PodGroup's second Evict event repeats the first, so its count goes up.
preempt_a_low_job() {
  local lines conf=$D/install-scheduler.conf
  kubectl apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-install-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: kiln-install-high}
value: 1000
YAML
  "$KILN_ROOT/tests/cluster/nodes" --dir "$D" --count 1 --prefix rbacp- --cpu 3 \
    --label grp=rbacp --taint kiln-rbacp=x:NoSchedule >/dev/null || fail "cannot add the node"
  kubectl taint nodes -l grp=rbacp node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  lines=$(log_lines "$D/logs/kiln-scheduler.log")
  sed 's/^actions: .*/actions: "enqueue, allocate, preempt, backfill"/' "$conf.orig" >"$conf.new"
  mv "$conf.new" "$conf"
  wait_for 30 "the configuration with preempt" bash -c \
    "tail -n +$((lines + 1)) '$D/logs/kiln-scheduler.log' | grep -q 'loaded scheduler configuration'"
  local p name
  for p in low:3 high-a:1 high-b:1; do
    name=${p%:*}
    kubectl create -n "$1" -f - >/dev/null <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $name}
spec:
  minAvailable: 1
  priorityClassName: kiln-install-${name%-*}
  tasks:
  - name: t
    replicas: ${p#*:}
    minAvailable: 1
    template:
      metadata: {annotations: {kwok.kiln.dev/run-for: "600s"}}
      spec:
        restartPolicy: Never
        priorityClassName: kiln-install-${name%-*}
        nodeSelector: {grp: rbacp}
        tolerations: [{key: kiln-rbacp, value: x, effect: NoSchedule}]
        containers: [{name: t, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
    if [ "$name" = low ]; then
      wait_jsonpath 60 vcjob/low '{.status.running}' 3 "$1"
    else
      wait_jsonpath 90 "vcjob/$name" '{.status.state.phase}' Running "$1"
    fi
  done
  wait_for 60 "the low PodGroup's Evict event counted twice" bash -c \
    "kubectl get events -n $1 --field-selector reason=Evict,involvedObject.kind=PodGroup -o jsonpath='{.items[*].count}' | tr ' ' '\n' | awk '\$1 >= 2 {f = 1} END {exit !f}'"
  cp "$conf.orig" "$conf.new" && mv "$conf.new" "$conf"
  kubectl delete vcjob -n "$1" low high-a high-b >/dev/null
}

# Issue 28: Volcano's own Deployment arguments, copied from its chart, start both processes,
# with a scheduler configuration that names plugins Kiln does not have. The arguments are
# those of volcano-sh/volcano's installer/helm/chart/volcano/templates/scheduler.yaml at
# commit 0069b395d2a5 rendered with the chart's values.yaml, plus every optional value the
# template can add (pprof, plugins dir, feature gates with namespace_queue_enable, ignored
# provisioners, sharding mode); the controller's are its chart's (logtostderr, healthz,
# metrics, leader election off, qps/burst, worker threads, the sharding ConfigMap, -v=4,
# 2>&1). Then come the rest of Volcano's flags that issue 28 lists, and last the changes this
# machine needs (kubeconfig, the config file's path, loopback ports): with pflag, the last
# value of a flag wins, so the copied arguments stay as they are.
VOLCANO_SCHEDULER_ARGS=(
  --logtostderr
  --scheduler-conf=/volcano.scheduler/volcano-scheduler.conf
  --enable-healthz=true
  --enable-metrics=true
  --enable-pprof=true
  --leader-elect=false
  --kube-api-qps=2000
  --kube-api-burst=2000
  --schedule-period=1s
  --node-worker-threads=20
  --percentage-nodes-to-find=0
  --plugins-dir=/custom-plugins
  --feature-gates=NamespaceQueue=true
  --ignored-provisioners=rancher.io/local-path,hostpath.csi.k8s.io
  --scheduler-sharding-mode=none
  -v=3
  '2>&1'
)
VOLCANO_SCHEDULER_MORE=(
  --scheduler-sharding-name=volcano --gate-removal-worker-num=5 --resource-sync-timeout=60s
  --disable-default-scheduler-config --log-flush-frequency=5s --stderrthreshold=INFO
  --node-selector=kiln.test/unused:x --ca-cert-file=/nonexistent/ca.crt
  --tls-cert-file=/nonexistent/tls.crt --tls-private-key-file=/nonexistent/tls.key
  --job-updater-worker-num=4 --task-updater-worker-num=4 --log_file_max_size=1800
  --alsologtostderr --add_dir_header=false --log_backtrace_at=scheduler.go:1
)
VOLCANO_CONTROLLER_ARGS=(
  --logtostderr
  --enable-healthz=true
  --enable-metrics=true
  --leader-elect=false
  --kube-api-qps=50
  --kube-api-burst=100
  --worker-threads=3
  --worker-threads-for-gc=5
  --worker-threads-for-podgroup=5
  --sharding-configmap=volcano-sharding-configmap
  --sharding-configmap-namespace=volcano-system
  -v=4
  '2>&1'
)
VOLCANO_CONTROLLER_MORE=(
  --feature-gates=NamespaceQueue=true,VolcanoJobSupport=true --ca-cert-file=/nonexistent/ca.crt
  --tls-cert-file=/nonexistent/tls.crt --tls-private-key-file=/nonexistent/tls.key
  --log-flush-frequency=5s --stderrthreshold=2 --scheduler-configs=volcano:volcano:0.0:0.6:false:2:100
  --shard-sync-period=60s --enable-node-event-trigger=true --controllers='*'
)

# stop_started NAME: stop the process this suite started as kiln-NAME (pid files in $D/pids).
stop_started() {
  local f=$D/pids/kiln-$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "kiln-"; then
    kill -TERM "$pid" 2>/dev/null
    wait_for 30 "kiln-$1 stopped" exited "$pid"
  fi
  rm -f "$f" "$D/pids/kiln-$1.exe"
}

# start_volcano_args PROCESS ARGS...: kiln-PROCESS as kiln-vchart-PROCESS, logging to its own file.
start_volcano_args() {
  local p=$1
  shift
  setsid "$KILN_BUILD/$p/kiln-$p" "$@" >"$D/logs/kiln-vchart-$p.log" 2>&1 </dev/null &
  echo $! >"$D/pids/kiln-vchart-$p.pid"
  echo "$KILN_BUILD/$p/kiln-$p" >"$D/pids/kiln-vchart-$p.exe"
}

test_volcano_chart_args_verbatim() {
  installed
  # Volcano's chart configuration, with deviceshare (GPU sharing on, as the chart has it), a
  # plugin Kiln does not have (with arguments),
  # an argument Kiln's predicates does not read and binpack's own arguments.
  cat >"$D/vchart-scheduler.conf" <<'CONF'
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
      deviceshare.SchedulePolicy: binpack
  - name: predicates
    arguments:
      predicate.GPUSharingEnable: true
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 2
  - name: network-topology-aware
    arguments:
      weight: 10
  - name: tdm
    arguments:
      tdm.evict-period: 1m
CONF
  # The suite's own processes step aside (installed() starts them again for the next test).
  stop_started scheduler
  stop_started controller
  local slog=$D/logs/kiln-vchart-scheduler.log clog=$D/logs/kiln-vchart-controller.log
  local here=(--kubeconfig="$KUBECONFIG" --healthz-address=127.0.0.1:0
              --listen-address=127.0.0.1:0)
  # --node-selector: every node carries type=kwok (the second entry selects none). That
  # it leaves the other nodes out is test_sch_cache's test_node_selector: one selected node
  # here would be weighed by the overcommit plugin against all that earlier tests admitted.
  start_volcano_args scheduler "${VOLCANO_SCHEDULER_ARGS[@]}" "${VOLCANO_SCHEDULER_MORE[@]}" \
    --node-selector=type:kwok \
    "${here[@]}" --scheduler-conf="$D/vchart-scheduler.conf" --cache-dump-dir="$D"
  start_volcano_args controller "${VOLCANO_CONTROLLER_ARGS[@]}" "${VOLCANO_CONTROLLER_MORE[@]}" \
    "${here[@]}"
  local sport cport
  sport=$(served_port "$slog" metrics)
  cport=$(served_port "$clog" metrics)
  wait_for 60 "kiln-scheduler ready" curl -sf "http://127.0.0.1:$sport/readyz"
  wait_for 60 "kiln-controller ready" curl -sf "http://127.0.0.1:$cport/readyz"
  # The configuration applies without the unknown plugin: 10 plugins in 2 tiers.
  expect_match 'loaded scheduler configuration .*vchart-scheduler.conf: actions "enqueue, allocate, backfill", 2 tiers, 11 plugins \(not implemented, skipped: tdm\)' \
    "$(cat "$slog")" "the configuration in force"
  # A Job runs to the end under these processes.
  local ns
  ns=$(new_namespace vchart)
  kubectl create -n "$ns" -f "$M/examples/job-single.yaml" >/dev/null
  local deadline=$((SECONDS + 90))
  until [ "$(jsonpath vcjob/hello '{.status.state.phase}' "$ns")" = Completed ]; do
    if [ $SECONDS -ge $deadline ]; then
      fail "the example Job did not complete under Volcano's arguments (selector type:kwok):
$(kubectl get vcjob,pg,pods -n "$ns" -o wide 2>&1)
$(kubectl get pg -n "$ns" -o jsonpath='{range .items[*]}{.status}{"\n"}{end}' 2>&1)
$(kubectl get nodes 2>&1)
$(grep -v '^I1' "$slog" | tail -n 25)
$(tail -n 12 "$slog" "$clog")"
    fi
    sleep 1
  done
  # Each unknown plugin and ignored argument is logged once, not once per session.
  wait_sessions 3 "$sport"
  local name n
  for name in '"tdm" is not implemented by kiln-scheduler' \
      'plugin predicates: argument "predicate.GPUSharingEnable" is not read'; do
    n=$(grep -cF "$name" "$slog")
    expect_eq 1 "$n" "log lines with: $name"
  done
  ! grep -q 'argument "binpack\.' "$slog" || fail "binpack's own arguments reported as unknown"
  # The flags without effect are named once at startup; "2>&1" is passed over.
  for name in feature-gates ignored-provisioners scheduler-sharding-mode \
      resource-sync-timeout ca-cert-file log-flush-frequency stderrthreshold; do
    expect_eq 1 "$(grep -c "flag --$name is accepted for compatibility with Volcano and has no effect" "$slog")" \
      "scheduler: --$name logged once"
  done
  for name in feature-gates sharding-configmap sharding-configmap-namespace scheduler-configs \
      tls-cert-file; do
    expect_eq 1 "$(grep -c "flag --$name is accepted for compatibility with Volcano and has no effect" "$clog")" \
      "controller: --$name logged once"
  done
  expect_match 'ignoring the argument "2>&1"' "$(cat "$slog")" "scheduler: 2>&1"
  expect_match 'ignoring the argument "2>&1"' "$(cat "$clog")" "controller: 2>&1"
  ! grep -q -- '--disable-default-scheduler-config is accepted' "$slog" ||
    fail "--disable-default-scheduler-config is implemented, not inert"
  stop_started vchart-scheduler
  stop_started vchart-controller
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

# --disable-default-scheduler-config as in Volcano: with a file that does not load, the
# process exits instead of scheduling with the default configuration.
test_disable_default_scheduler_config() {
  installed
  printf 'actions: "enqueue, allocate"\ntiers: [\n' >"$D/vchart-bad.conf"
  local out rc=0
  out=$(timeout 30 "$KILN_BUILD/scheduler/kiln-scheduler" --kubeconfig="$KUBECONFIG" \
    --leader-elect=false --scheduler-name=vchart-none --healthz-address=127.0.0.1:0 \
    --scheduler-conf="$D/vchart-bad.conf" --disable-default-scheduler-config 2>&1) || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit status $rc: $(tail -3 <<<"$out")"
  expect_match 'Invalid scheduler configuration and default configuration fallback is disabled' \
    "$out" "the reason"
  rc=0
  out=$(timeout 30 "$KILN_BUILD/scheduler/kiln-scheduler" --kubeconfig="$KUBECONFIG" \
    --leader-elect=false --scheduler-name=vchart-none --disable-default-scheduler-config 2>&1) ||
    rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit status $rc without --scheduler-conf"
  expect_match 'No --scheduler-conf path provided and default configuration fallback is disabled' \
    "$out" "the reason without a file"
}

# The hyperNode-controller under its ServiceAccount: Volcano's discovery configuration in
# kiln-system turns the install nodes' labels into HyperNodes (create, then status.nodeCount),
# and a relabel updates one and deletes the other.
test_hypernode_discovery_under_least_privilege() {
  installed
  kubectl label node install-0 install.example.com/leaf=a --overwrite >/dev/null || fail "label"
  kubectl label node install-1 install.example.com/leaf=b --overwrite >/dev/null || fail "label"
  kubectl apply -f - >/dev/null <<'CM' || fail "cannot apply the discovery configuration"
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-controller-configmap, namespace: kiln-system}
data:
  volcano-controller.conf: |
    networkTopologyDiscovery:
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            install:
              - nodeLabel: install.example.com/leaf
              - nodeLabel: kubernetes.io/hostname
CM
  local sel=volcano.sh/network-topology-source=label
  wait_for 60 "two HyperNodes of one node each" bash -c \
    "[ \"\$(kubectl get hn -l $sel -o jsonpath='{.items[*].status.nodeCount}')\" = '1 1' ]"
  kubectl label node install-1 install.example.com/leaf=a --overwrite >/dev/null || fail "relabel"
  wait_for 60 "one HyperNode of two nodes" bash -c \
    "[ \"\$(kubectl get hn -l $sel -o jsonpath='{.items[*].status.nodeCount}')\" = 2 ]"
  kubectl delete cm -n kiln-system volcano-controller-configmap >/dev/null
  kubectl label node install-0 install-1 install.example.com/leaf- >/dev/null
  kubectl delete hn -l "$sel" >/dev/null
}

# From the API server's audit log: no request of either ServiceAccount was refused, and every
# rule they are granted was used (tests/e2e/rbac_audit.py says which were not).
finally_rbac_least_privilege() {
  local log=$KILN_CLUSTER_DIR/logs/audit.log out
  [ -s "$log" ] || fail "no audit log at $log (tests/e2e/run starts the API server with --audit-users)"
  out=$(python3 "$E2E_DIR/rbac_audit.py" "$log" "$M/rbac-controller.yaml" "$M/rbac-scheduler.yaml") ||
    fail "$(echo "$out" | grep -E '^(FAIL|rbac:)')"
  echo "$out" | grep -v '^REPORT '
  echo "$out" | grep '^REPORT '
}

e2e_main "$@"
