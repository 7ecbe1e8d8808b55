#!/usr/bin/env bash
# The Grafana dashboard (manifests/dashboards/kiln.json) queries only metrics the running
# processes export: kiln-scheduler and kiln-controller run here with their metrics servers,
# jobs that complete, fail and cannot be placed give every labelled family a series, and
# every metric name in every panel's query must then appear in one of the two /metrics pages.
# The Prometheus scrape configuration must name the metrics Services and ports of manifests/.
# shellcheck shell=bash
SUITE=dashboards
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

D=$KILN_CLUSTER_DIR
DASH=$KILN_ROOT/manifests/dashboards/kiln.json
SCRAPE=$KILN_ROOT/manifests/dashboards/prometheus-scrape.yaml
mkdir -p "$D/logs" "$D/pids"

# start NAME BINARY: health and metrics servers each on a port the kernel picks (":00" is port
# 0 too, but another address, so each gets its own server); served_port reads them back.
start() {
  "$2" --kubeconfig "$KUBECONFIG" --leader-elect=false --enable-healthz \
    --healthz-address 127.0.0.1:0 --enable-metrics --listen-address 127.0.0.1:00 \
    >"$D/logs/$1.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$1.pid"
  echo "$2" >"$D/pids/$1.exe" # tests/cluster/down checks it before a kill
}

# The metric names a PromQL expression reads (functions, keywords, label names and matchers
# left out), one per line.
dashboard_metrics() {
  python3 - "$DASH" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
words = {"sum", "rate", "irate", "increase", "histogram_quantile", "topk", "max", "min", "avg",
         "count", "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
         "unless", "offset", "bool"}
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
exprs += [v["query"]["query"] for v in d["templating"]["list"] if isinstance(v.get("query"), dict)]
names = set()
for e in exprs:
    e = re.sub(r'\{[^}]*\}', '', e)                      # label matchers
    e = re.sub(r'\[[^\]]*\]', '', e)                     # range selectors
    e = re.sub(r'\b(by|without)\s*\([^)]*\)', '', e)     # grouping labels
    e = re.sub(r'label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),[^)]*\)', r'\1', e)
    for tok in re.findall(r'[a-zA-Z_:][a-zA-Z0-9_:]*', e):
        if tok not in words:
            names.add(tok)
for n in sorted(names):
    print(n)
EOF
}

# exported NAME PAGE: NAME is a family on the page, or a histogram's _bucket/_sum/_count series.
exported() {
  local n=$1 page=$2 base=${1%_bucket}
  base=${base%_sum}
  base=${base%_count}
  grep -q "^$n[{ ]" <<<"$page" && return 0
  [ "$base" != "$n" ] && grep -qx "# TYPE $base histogram" <<<"$page"
}

job() { # NAME ANNOTATIONS NODE_SELECTOR
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations: {$2}
      spec:
        restartPolicy: Never
        nodeSelector: {$3}
        containers:
        - {name: c, image: busybox, resources: {requests: {cpu: 100m}}}
EOF
}

test_every_panel_metric_is_exported() {
  local ns names page missing=() n
  names=$(dashboard_metrics)
  [ "$(wc -l <<<"$names")" -ge 20 ] || fail "the dashboard reads only $(wc -l <<<"$names") metrics: $names"
  ns=$(new_namespace dash)
  job ok '"kwok.kiln.dev/run-for": "1s"' '' | kubectl apply -n "$ns" -f - >/dev/null
  job bad '"kwok.kiln.dev/run-for": "1s", "kwok.kiln.dev/exit-code": "3"' '' |
    kubectl apply -n "$ns" -f - >/dev/null
  # Admitted (enqueue looks at quantities only), then no node matches: unschedulable tasks.
  job nowhere '' 'dashboards.kiln.dev/none: "x"' | kubectl apply -n "$ns" -f - >/dev/null
  local deadline=$((SECONDS + 120))
  while :; do
    page=$(curl -fsS "http://127.0.0.1:$SCH_METRICS/metrics"; curl -fsS "http://127.0.0.1:$CTL_METRICS/metrics")
    missing=()
    for n in $names; do exported "$n" "$page" || missing+=("$n"); done
    [ ${#missing[@]} -eq 0 ] && break
    [ $SECONDS -lt $deadline ] || fail "panels query metrics nobody exports: ${missing[*]}"
    sleep 1
  done
  echo "    $(wc -l <<<"$names") metrics, all exported" >&2
}

# Every metric of Volcano's scheduler and controller-manager metrics packages that Volcano
# exports once jobs have run, failed and stayed unschedulable in its default configuration
# (drf and proportion, enqueue/allocate/backfill) and JobFlows have succeeded and failed.
# Left out, as empty on Volcano in this scenario too: the *_scalar_resources series (no GPU
# here), queue_capacity_* and queue_real_capacity_* (no capability, no capacity plugin),
# eviction_transactions_total (nothing evicted); and never filled in Volcano's release:
# e2e_job_scheduling_start_time, namespace_share, namespace_weight, namespace_weighted_share
# (drf's namespace order is gone) and goroutines. The unit tests check those are registered.
SCHEDULER_METRICS="volcano_e2e_scheduling_latency_milliseconds
volcano_open_session_duration_milliseconds volcano_e2e_job_scheduling_latency_milliseconds
volcano_e2e_job_scheduling_duration volcano_e2e_job_scheduling_last_time
volcano_plugin_scheduling_latency_milliseconds volcano_action_scheduling_latency_milliseconds
volcano_task_scheduling_latency_milliseconds volcano_scheduling_stage_duration_milliseconds
volcano_schedule_attempts_total volcano_pod_preemption_victims volcano_total_preemption_attempts
volcano_pod_reclaim_victims volcano_total_reclaim_attempts volcano_unschedule_task_count
volcano_unschedule_job_count volcano_job_share volcano_job_retry_counts
volcano_queue_allocated_milli_cpu volcano_queue_allocated_memory_bytes
volcano_queue_request_milli_cpu volcano_queue_request_memory_bytes
volcano_queue_deserved_milli_cpu volcano_queue_deserved_memory_bytes
volcano_queue_inqueue_milli_cpu volcano_queue_inqueue_memory_bytes volcano_queue_share
volcano_queue_weight volcano_queue_overused"
CONTROLLER_METRICS="volcano_controller_job_to_pod_creation_latency_milliseconds
volcano_controller_job_e2e_creation_duration_milliseconds volcano_queue_pod_group_inqueue_count
volcano_queue_pod_group_pending_count volcano_queue_pod_group_running_count
volcano_queue_pod_group_unknown_count volcano_queue_pod_group_completed_count
volcano_job_completed_phase_count volcano_job_failed_phase_count
volcano_jobflow_succeed_phase_count volcano_jobflow_failed_phase_count"

flow_template() { # NAME NODE_SELECTOR: a JobTemplate and a JobFlow of it alone
  cat <<EOF
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: $1}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations: {kwok.kiln.dev/run-for: "1s"}
      spec:
        restartPolicy: Never
        nodeSelector: {$2}
        containers:
        - {name: c, image: busybox, resources: {requests: {cpu: 100m}}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: $1}
spec:
  jobRetainPolicy: retain
  flows:
  - name: $1
EOF
}

# missing_from PAGE NAMES...: the families PAGE does not export (no "# TYPE NAME" line: a
# labelled family is on the page only once it has a series), space-separated.
missing_from() {
  local page=$1 n out=()
  shift
  for n in "$@"; do grep -q "^# TYPE $n " <<<"$page" || out+=("$n"); done
  echo "${out[*]}"
}

test_every_volcano_metric_is_exported() {
  local ns uid sch ctl miss_s miss_c
  ns=$(new_namespace vmetrics)
  job ok '"kwok.kiln.dev/run-for": "1s"' '' | kubectl apply -n "$ns" -f - >/dev/null
  job bad '"kwok.kiln.dev/run-for": "1s", "kwok.kiln.dev/exit-code": "3"' '' |
    kubectl apply -n "$ns" -f - >/dev/null
  job nowhere '' 'dashboards.kiln.dev/none: "x"' | kubectl apply -n "$ns" -f - >/dev/null
  # One flow succeeds; the other's Job can go nowhere and is terminated while the flow is
  # Pending, which Volcano's pending state counts as a failed flow.
  flow_template flowok '' | kubectl apply -n "$ns" -f - >/dev/null
  flow_template flowstuck 'dashboards.kiln.dev/none: "x"' | kubectl apply -n "$ns" -f - >/dev/null
  wait_for 60 "the stuck flow's Job" kubectl get vcjob -n "$ns" flowstuck-flowstuck
  uid=$(jsonpath vcjob/flowstuck-flowstuck '{.metadata.uid}' "$ns")
  kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: stop-stuck}
action: TerminateJob
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: flowstuck-flowstuck, uid: "$uid"}
EOF
  wait_jsonpath 90 jf/flowok '{.status.state.phase}' Succeed "$ns"
  wait_jsonpath 90 jf/flowstuck '{.status.state.phase}' Failed "$ns"
  local deadline=$((SECONDS + 120))
  while :; do
    sch=$(curl -fsS "http://127.0.0.1:$SCH_METRICS/metrics")
    ctl=$(curl -fsS "http://127.0.0.1:$CTL_METRICS/metrics")
    # shellcheck disable=SC2086
    miss_s=$(missing_from "$sch" $SCHEDULER_METRICS)
    # shellcheck disable=SC2086
    miss_c=$(missing_from "$ctl" $CONTROLLER_METRICS)
    [ -z "$miss_s$miss_c" ] && break
    [ $SECONDS -lt $deadline ] ||
      fail "not exported: scheduler: ${miss_s:-none}; controller: ${miss_c:-none}"
    sleep 1
  done
  # The values say what happened: each flow counted once in its namespace, the job that goes
  # nowhere retried, the default queue's weight 1, drf's open timed.
  expect_match "volcano_jobflow_succeed_phase_count\{jobflow_namespace=\"$ns\"\} 1" "$ctl" \
    "succeeded flows"
  expect_match "volcano_jobflow_failed_phase_count\{jobflow_namespace=\"$ns\"\} 1" "$ctl" \
    "failed flows"
  # (A scheduler job is a PodGroup: Volcano's job_id is the PodGroup's name, <job>-<uid>.)
  expect_match 'volcano_job_retry_counts\{job_id="nowhere-[^"]*"\} [1-9]' "$sch" "retries"
  expect_match 'volcano_unschedule_task_count\{job_id="nowhere-[^"]*"\} 1' "$sch" "missing tasks"
  expect_match 'volcano_queue_weight\{queue_name="default"\} 1' "$sch" "queue weight"
  expect_match 'volcano_plugin_scheduling_latency_milliseconds_count\{(plugin="drf",OnSession="OnSessionOpen"|OnSession="OnSessionOpen",plugin="drf")\} [1-9]' \
    "$sch" "plugin latency"
  echo "    $(wc -w <<<"$SCHEDULER_METRICS $CONTROLLER_METRICS") Volcano metrics, all exported" >&2
}

test_a_metric_nobody_exports_is_caught() {
  # The check above must be able to fail: a name no process has is reported.
  local page
  page=$(curl -fsS "http://127.0.0.1:$SCH_METRICS/metrics")
  ! exported volcano_no_such_metric_total "$page" || fail "an unknown metric passed"
  exported volcano_e2e_scheduling_latency_milliseconds_bucket "$page" || fail "a histogram bucket failed"
}

test_scrape_config_names_the_metrics_services() {
  python3 - "$SCRAPE" "$KILN_ROOT/manifests" <<'EOF' || fail "scrape configuration and manifests disagree"
import re, sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
for proc, port in (("scheduler", 8080), ("controller", 8081)):
    j = jobs["kiln-" + proc]
    keep = [r for r in j["relabel_configs"] if r.get("action") == "keep"][0]
    svc, pname = keep["regex"].split(";")
    docs = [d for d in yaml.safe_load_all(open(f"{sys.argv[2]}/{proc}.yaml")) if d]
    s = [d for d in docs if d["kind"] == "Service"][0]
    assert s["metadata"]["name"] == svc, (svc, s["metadata"]["name"])
    assert s["metadata"]["namespace"] in j["kubernetes_sd_configs"][0]["namespaces"]["names"]
    ports = {p["name"]: p["port"] for p in s["spec"]["ports"]}
    assert ports.get(pname) == port, (pname, ports)
    assert s["metadata"]["annotations"]["prometheus.io/port"] == str(port)
print("ok")
EOF
}

# ---- setup ----
kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh \
  crd/queues.scheduling.volcano.sh crd/jobs.batch.volcano.sh >/dev/null 2>&1
kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
kubectl create namespace volcano-system >/dev/null 2>&1 || true
start kiln-controller "$KILN_BUILD/controller/kiln-controller"
start kiln-scheduler "$KILN_BUILD/scheduler/kiln-scheduler"
CTL_HEALTH=$(served_port "$D/logs/kiln-controller.log" healthz)
CTL_METRICS=$(served_port "$D/logs/kiln-controller.log" metrics)
SCH_HEALTH=$(served_port "$D/logs/kiln-scheduler.log" healthz)
SCH_METRICS=$(served_port "$D/logs/kiln-scheduler.log" metrics)
for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$CTL_HEALTH/readyz" >/dev/null 2>&1 &&
    curl -fsS "http://127.0.0.1:$SCH_HEALTH/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
e2e_main "$@"
