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
  expect_match 'kiln e2e \(c\) +- +not run' "$(cat "$out/table.txt")" "placeholder row"
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
  # A job's latency (first pod seen to last bound) is at least each of its pods' latencies.
  expect_eq true "$(jq '.jobs.latency.max >= .pod_latency.max' "$ready.json")" "job >= pod"
  rm -f "$ready" "$ready.json" "$ready.err"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
