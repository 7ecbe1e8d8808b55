#!/usr/bin/env bash
# The benchmark harness keeps working: tests/bench/run --size tiny on its own cluster completes
# and every pod is bound; the ceiling and bindwatch tools count jobs on the suite's cluster.
# Times are never asserted (the machine is shared); only counts are.
source "$(dirname "$0")/lib.sh"
SUITE=bench

CEILING="$KILN_BUILD/tests/bench/ceiling"
WATCH="$KILN_BUILD/tests/bench/bindwatch"

test_tiny_run_binds_every_pod() {
  local out
  out=$(mktemp -d /tmp/kiln-bench-e2e.XXXXXX)
  # Its own cluster directory: the run starts and stops a cluster of 20 kwok nodes.
  "$KILN_ROOT/tests/bench/run" --size tiny --build "$KILN_BUILD" --out "$out" \
    --cluster-dir "$out/cluster" >"$out/table.txt" 2>"$out/run.err" ||
    fail "bench/run failed: $(tail -3 "$out/run.err")"
  local j=$out/bench.json
  expect_eq 200 "$(jq '.ceiling.create.pods' "$j")" "ceiling pods created"
  expect_eq 200 "$(jq '.ceiling.bind.pods' "$j")" "ceiling pods bound"
  expect_eq 0 "$(jq '.ceiling.create.errors + .ceiling.bind.errors' "$j")" "ceiling errors"
  expect_eq 200 "$(jq '.ceiling.watched.bound' "$j")" "ceiling binds seen by bindwatch"
  expect_eq 100 "$(jq '.peer.bound' "$j")" "pods kube-scheduler bound"
  expect_eq true "$(jq '.peer.complete and .ceiling.watched.complete' "$j")" "complete"
  # Every figure the table needs is there (a number, not null), and per-pod requests were read.
  expect_eq true "$(jq '[.ceiling.Lc, .ceiling.L, .peer.makespan_per_s,
    .peer.processes["kube-scheduler"].peak_rss_kb, .ceiling.processes["kube-apiserver"].cpu_seconds]
    | all(type == "number" and . > 0)' "$j")" "figures present"
  expect_eq 1 "$(jq '.ceiling.requests["POST pods/binding"].per_pod' "$j")" "binds per pod"
  # Kiln end to end (kiln-controller + kiln-scheduler): every Job's pods bound, per scenario.
  local sc jobs want
  for sc in "a 1 100" "b 10 100" "c 100 100"; do
    read -r sc jobs want <<<"$sc"
    expect_eq "$want" "$(jq --arg s "$sc" '.kiln_e2e[] | select(.scenario == $s) | .bound' "$j")" \
      "kiln e2e ($sc) pods bound"
    expect_eq "$jobs" "$(jq --arg s "$sc" '.kiln_e2e[] | select(.scenario == $s) | .jobs_created' "$j")" \
      "kiln e2e ($sc) Jobs created"
    expect_eq "$jobs" "$(jq --arg s "$sc" '.kiln_e2e[] | select(.scenario == $s) | .jobs_bound' "$j")" \
      "kiln e2e ($sc) Jobs with every pod bound"
    expect_eq true "$(jq --arg s "$sc" '.kiln_e2e[] | select(.scenario == $s) | .complete' "$j")" \
      "kiln e2e ($sc) complete"
  done
  expect_eq true "$(jq '[.kiln_e2e[] | .processes["kiln-scheduler"].peak_rss_kb,
    .processes["kiln-controller"].peak_rss_kb] | all(type == "number" and . > 0)' "$j")" \
    "kiln figures present"
  expect_match 'kiln e2e \(c\) 100x1 +100 ' "$(cat "$out/table.txt")" "kiln (c) row"
  # The Kubernetes peer (k): batch/v1 Jobs of (b)'s and (c)'s counts through the Job controller
  # and kube-scheduler, every pod bound, and the Kiln / Kubernetes headline for both sizes.
  for sc in "kb 10 100" "kc 100 100"; do
    read -r sc jobs want <<<"$sc"
    expect_eq "$want $jobs $jobs true" "$(jq -r --arg s "$sc" '.kube_e2e[] | select(.scenario == $s) |
      "\(.bound) \(.jobs_created) \(.jobs_bound) \(.complete)"' "$j")" "kubernetes e2e ($sc) bound, Jobs"
  done
  expect_eq 1 "$(jq '.kube_e2e[] | select(.scenario == "kb") | .requests["POST pods"].total / 100' "$j")" \
    "the Job controller created one pod per pod"
  expect_eq true "$(jq '[.kube_e2e[] | .controller.cpu_seconds, .scheduler.cpu_seconds,
    .processes["kube-apiserver"].cpu_seconds] | all(type == "number" and . > 0)' "$j")" \
    "kubernetes figures present"
  expect_eq "b/kb c/kc" "$(jq -r '[.kiln_over_kubernetes[] | "\(.kiln)/\(.kubernetes)"] | join(" ")' "$j")" \
    "Kiln / Kubernetes pairs"
  expect_eq true "$(jq '[.kiln_over_kubernetes[] | .apiserver_ms_per_job.ratio, .requests_per_pod.ratio,
    .cpu_ms_per_pod.ratio] | all(type == "number" and . > 0)' "$j")" "Kiln / Kubernetes ratios"
  expect_match 'Kiln / Kubernetes, 100 Jobs x 1 \(c / kc\): API server CPU ms per Job ' \
    "$(cat "$out/table.txt")" "the headline"
  expect_match 'kubernetes e2e \(kc\) 100x1 +100 ' "$(cat "$out/table.txt")" "kubernetes (kc) row"
  # The in-process session with 50 queues in a hierarchy (capacity, enableHierarchy) placed all.
  expect_eq 10000 "$(jq '.sessions[] | select(.queues == 50) | .placements' "$j")" \
    "placements with 50 queues in a hierarchy"
  expect_match '1000 +10000 +10 +0 +50 +flat +0 +0 +10000 ' "$(cat "$out/table.txt")" "the 50-queue row"
  # The row with claims (DRA: a ResourceClaim of one device per pod, 16 devices a node) placed all.
  expect_eq 10000 "$(jq '.sessions[] | select(.claims == 16 and .volumes == 0) | .placements' "$j")" \
    "placements with a device claim per pod"
  expect_match '1000 +10000 +10 +0 +1 +flat +16 +0 +10000 ' "$(cat "$out/table.txt")" "the claims row"
  # The row with volumes too (each pod an unbound WaitForFirstConsumer claim, 20 local
  # PersistentVolumes a node) placed all.
  expect_eq 10000 "$(jq '.sessions[] | select(.volumes == 20) | .placements' "$j")" \
    "placements with a device claim and a volume claim per pod"
  expect_match '1000 +10000 +10 +0 +1 +flat +16 +20 +10000 ' "$(cat "$out/table.txt")" "the volumes row"
  # The vGPU row (deviceshare VGPUEnable, 8 vGPUs a node) placed every pod, and its table.
  expect_eq "8 1000" "$(jq -r '.[] | "\(.vgpu) \(.placements)"' "$out/vgpu.json")" \
    "vGPU row: vGPUs per node and pods placed"
  expect_match '100 +1000 +8 +1000 ' "$(cat "$out/table.txt")" "the vGPU row"
  # The loop-stall rows: the shell in process with sessions on a worker and on the loop, each
  # having applied sessions and measured the loop (figures, not verdicts).
  expect_eq "false true" "$(jq -r '[.[] | .session_on_loop | tostring] | join(" ")' \
    "$out/loopstall.json")" "loop-stall rows, worker then loop"
  expect_eq true "$(jq 'all(.[]; .sessions > 0 and .longest_busy_cpu_ms > 0)' \
    "$out/loopstall.json")" "loop-stall sessions ran and the loop was measured"
  [ ! -e "$out/cluster" ] || fail "the bench left its cluster directory behind"
  rm -rf "$out"
}

test_bindwatch_counts_jobs() {
  local ns out
  ns=$(new_namespace bench)
  local ready
  ready=$(mktemp -u /tmp/kiln-bench-ready.XXXXXX)
  "$WATCH" --namespace "$ns" --count 10 --label-selector kiln.bench/run=jobs \
    --job-label kiln.bench/job --ready-file "$ready" --timeout 60 >"$ready.json" 2>"$ready.err" &
  local pid=$!
  wait_for 30 "bindwatch's watch" test -f "$ready"
  # Two jobs of five pods, each created and bound by the ceiling tool.
  for job in j1 j2; do
    "$CEILING" --namespace "$ns" --run jobs --prefix "$job-" --label "kiln.bench/job=$job" \
      --count 5 >/dev/null || fail "ceiling failed for $job"
  done
  wait "$pid" || fail "bindwatch failed: $(cat "$ready.err")"
  expect_eq 10 "$(jq '.bound' "$ready.json")" "pods bound"
  expect_eq 2 "$(jq '.jobs.complete' "$ready.json")" "jobs complete"
  expect_eq 2 "$(jq '.jobs.latency.n' "$ready.json")" "job latencies"
  # Per job, for clocks that start outside bindwatch (bench/run's Job creation stamps).
  expect_eq "5 5" "$(jq -r '[.jobs.by_job[].bound] | map(tostring) | join(" ")' "$ready.json")" \
    "pods bound per job"
  expect_eq true "$(jq '.t0_unix > 1e9 and ([.jobs.by_job[] | .last_bound_s >= .first_seen_s]
    | all) and .last_seen_s >= .first_seen_s' "$ready.json")" "wall-clock anchor and job times"
  # A job's latency (first pod seen to last bound) is at least each of its pods' latencies.
  expect_eq true "$(jq '.jobs.latency.max >= .pod_latency.max' "$ready.json")" "job >= pod"
  rm -f "$ready" "$ready.json" "$ready.err"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
