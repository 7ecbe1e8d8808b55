#!/usr/bin/env bash
# tests/cluster/up and down on their own: several clusters at once, and each way `up` can
# fail names the cause and the log, and leaves nothing running.
source "$(dirname "$0")/lib.sh"
SUITE=cluster-up
UP=$KILN_ROOT/tests/cluster/up
DOWN=$KILN_ROOT/tests/cluster/down

# running_in DIR: pids of processes whose command line mentions DIR.
running_in() {
  pgrep -f -- "$1" || true
}

test_second_cluster_runs_beside_the_first() {
  local d out
  d=$(mktemp -d /tmp/kiln-e2e-second.XXXXXX)
  out=$("$UP" --dir "$d" --nodes 1 --audit 2>/dev/null) || fail "a second cluster did not start"
  expect_eq "export KUBECONFIG=$d/kubeconfig" "$out" "up's stdout"
  local other
  other=$(KUBECONFIG=$d/kubeconfig kubectl get nodes --no-headers | wc -l)
  expect_eq 1 "$other" "nodes in the second cluster"
  [ "$(kubectl config view -o jsonpath='{.clusters[0].cluster.server}')" != \
    "$(KUBECONFIG=$d/kubeconfig kubectl config view -o jsonpath='{.clusters[0].cluster.server}')" ] \
    || fail "both clusters have the same API server address"
  # --audit writes the API server's audit log: the node creation is in it.
  KUBECONFIG=$d/kubeconfig kubectl get nodes >/dev/null
  wait_for 10 "audit log" grep -q '"verb":"create".*"resource":"nodes"' "$d/logs/audit.log"
  # The in-flight limits are raised as peer benchmarks do.
  tr '\0' '\n' <"/proc/$(cat "$d/pids/kube-apiserver.pid")/cmdline" | grep -qx -- '--max-requests-inflight=20000' \
    || fail "in-flight limit not raised"
  out=$("$UP" --dir "$d" --nodes 1 2>&1) && fail "up over a running cluster succeeded"
  expect_match 'already running' "$out" "second up in the same dir"
  "$DOWN" --dir "$d"
  [ ! -e "$d" ] || fail "down left $d behind"
  [ -z "$(running_in "$d")" ] || fail "down left processes: $(running_in "$d")"
}

test_port_in_use_is_named() {
  local d port out holder
  d=$(mktemp -d /tmp/kiln-e2e-port.XXXXXX)
  # Something else holds the port we ask the API server to use.
  python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(1); print(s.getsockname()[1], flush=True); time.sleep(120)' \
    >"$d.port" &
  holder=$!
  wait_for 10 "port holder" test -s "$d.port"
  port=$(cat "$d.port")
  out=$("$UP" --dir "$d" --nodes 1 --apiserver-port "$port" 2>&1) && {
    kill $holder; "$DOWN" --dir "$d"; fail "up succeeded on a port in use"; }
  kill $holder 2>/dev/null
  rm -f "$d.port"
  expect_match "port already in use" "$out" "error"
  expect_match "$d/logs/kube-apiserver.log" "$out" "log named"
  [ -z "$(running_in "$d")" ] || fail "a failed up left processes: $(running_in "$d")"
  rm -rf "$d"
}

test_failed_build_is_named() {
  local d c out
  d=$(mktemp -d /tmp/kiln-e2e-build.XXXXXX)
  c=$(mktemp -d /tmp/kiln-e2e-cache.XXXXXX)
  # An empty cache and no module proxy: the build cannot fetch anything.
  out=$(KILN_CACHE=$c GOPROXY=off GOFLAGS=-mod=mod "$UP" --dir "$d" --nodes 1 2>&1) \
    && fail "up succeeded without binaries"
  expect_match "build failed; read $c/build.log" "$out" "error"
  [ -s "$c/build.log" ] || fail "the build log is empty"
  [ -z "$(running_in "$d")" ] || fail "a failed up left processes"
  rm -rf "$d" "$c"
}

test_bad_arguments_are_refused() {
  local out
  out=$("$UP" --nodes many 2>&1) && fail "--nodes many accepted"
  expect_match "wants a number" "$out" "--nodes error"
  out=$("$UP" --frobnicate 2>&1) && fail "unknown flag accepted"
  expect_match "unknown argument: --frobnicate" "$out" "unknown flag error"
  out=$("$KILN_ROOT/tests/cluster/nodes" --dir "$KILN_CLUSTER_DIR" --taint gpu=true:Sometimes 2>&1) \
    && fail "a bad taint effect was accepted"
  expect_match "taint effect must be" "$out" "taint error"
}

e2e_main "$@"
