#!/usr/bin/env bash
# The README's first quick-start command works: ./dev up starts a control plane and both Kiln
# processes, the example job runs to Completed, and ./dev down leaves nothing behind.
source "$(dirname "$0")/lib.sh"
SUITE=quickstart

test_dev_up_runs_the_example_then_down_cleans_up() {
  local d out
  d=$(mktemp -d /tmp/kiln-e2e-quickstart.XXXXXX)
  rmdir "$d"
  out=$(cd "$KILN_ROOT" && KILN_CLUSTER_DIR=$d KILN_NODES=2 ./dev up 2>&1) || {
    (cd "$KILN_ROOT" && KILN_CLUSTER_DIR=$d ./dev down) >/dev/null 2>&1
    fail "./dev up failed: $out"
  }
  expect_match "export KUBECONFIG=$d/kubeconfig" "$out" "./dev up tells how to point kubectl"
  local rc=0
  (
    export KUBECONFIG=$d/kubeconfig
    wait_jsonpath 60 vcjob/hello '{.status.state.phase}' Completed default
    expect_eq 1 "$(jsonpath vcjob/hello '{.status.succeeded}' default)" "succeeded pods"
    for p in kiln-controller kiln-scheduler; do
      kill -0 "$(cat "$d/pids/$p.pid")" || fail "$p is not running"
    done
  ) || rc=$?
  local pids
  pids=$(cat "$d"/pids/*.pid 2>/dev/null)
  (cd "$KILN_ROOT" && KILN_CLUSTER_DIR=$d ./dev down) || fail "./dev down failed"
  [ $rc -eq 0 ] || fail "the example job did not complete"
  [ ! -e "$d" ] || fail "./dev down left $d"
  # A process that got its signal may take a moment to end.
  for p in $pids; do
    wait_for 10 "./dev down to end pid $p" exited "$p"
  done
  true
}

e2e_main "$@"
