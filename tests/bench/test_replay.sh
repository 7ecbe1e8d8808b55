#!/usr/bin/env bash
# kiln-replay on snapshots written by `sessions --write-snapshot` (the dump's format):
#   1. two nodes of 4 cpu, two gangs of 6 pods of 1 cpu: the first gang is bound (3 pods per
#      node), the second cannot fit and each of its pods says why (the default configuration:
#      the queue's share; a configuration without proportion: the cluster full, and the pod
#      that found no node the nodes' cpu); placements
#      carry the node-order score that chose them;
#   2. decisions pinned: the replay of four generated snapshots (300 nodes gangs of 1 with
#      fragmentation, 500 nodes gangs of 10, each plain and with --shapes) prints exactly
#      what the scheduler core printed before the scoring caches were added (sha256 of the
#      output without the header, timing and scores), but for the phase of a PodGroup whose
#      pods the session binds: Inqueue since issue 35 (Volcano counts a pod once it is
#      bound), Running before; the binds and every other line are as they were.
# Usage: test_replay.sh SESSIONS KILN-REPLAY
set -euo pipefail
SESSIONS=$1 REPLAY=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
passed=0

"$SESSIONS" --write-snapshot "$T/small.pb" --nodes 2 --node-cpu 4000 --pending 12 --gang 6 \
  --pod-cpu 1000 2>/dev/null
"$REPLAY" "$T/small.pb" >"$T/out"
[ "$(grep -c '^bind bench/job-000000-' "$T/out")" = 6 ] || fail "gang 0 not bound: $(cat "$T/out")"
[ "$(grep -c '^bind .* -> node-00000 ' "$T/out")" = 3 ] || fail "not 3 pods on node-00000"
[ "$(grep -c '^bind .* -> node-00001 ' "$T/out")" = 3 ] || fail "not 3 pods on node-00001"
# Two feasible nodes each time: every placement was scored, and the emptier node scored higher
# for the first pod than for the third (least requested falls as the node fills).
[ "$(grep -c '^bind .* score [0-9]*$' "$T/out")" = 6 ] || fail "scores missing: $(cat "$T/out")"
s1=$(sed -n 's/^bind bench\/job-000000-0 -> .* score \([0-9]*\)$/\1/p' "$T/out")
s3=$(sed -n 's/^bind bench\/job-000000-2 -> .* score \([0-9]*\)$/\1/p' "$T/out")
[ "$s1" -gt "$s3" ] || fail "scores: first $s1, third $s3"
! grep -q '^bind bench/job-000001-' "$T/out" || fail "gang 1 partly bound"
[ "$(grep -c '^unschedulable bench/job-000001-.*: 6/6 tasks in gang unschedulable: queue default resource quota insufficient: pod requests 1 cpu; the queue.s deserved share is 8 cpu, 8 cpu allocated$' "$T/out")" = 6 ] ||
  fail "gang 1 reasons: $(cat "$T/out")"
grep -q '^podgroup bench/job-000001: Inqueue Unschedulable NotEnoughResources: ' "$T/out" ||
  fail "gang 1 condition: $(grep podgroup "$T/out")"
grep -q '^summary: 6 binds, 0 evicts, 6 unschedulable' "$T/out" || fail "summary"
passed=$((passed + 1))

cat >"$T/conf.yaml" <<'YAML'
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: nodeorder
YAML
"$REPLAY" --scheduler-conf "$T/conf.yaml" "$T/small.pb" >"$T/out2"
[ "$(grep -c '^bind ' "$T/out2")" = 6 ] || fail "conf: binds: $(cat "$T/out2")"
# The pod that found no node says so per node; the gang says which limit holds it.
[ "$(grep -c '^unschedulable bench/job-000001-.*0/2 nodes are available: 2 Insufficient cpu' "$T/out2")" = 1 ] ||
  fail "conf: reasons: $(cat "$T/out2")"
[ "$(grep -c '^unschedulable bench/job-000001-.*: 6/6 tasks in gang unschedulable: cluster full: pod requests 1 cpu; the largest free block is 0 cpu (node node-0000[01]) after 2 pod(s) of the gang were placed$' "$T/out2")" = 5 ] ||
  fail "conf: gang reason: $(cat "$T/out2")"
passed=$((passed + 1))

"$REPLAY" --scheduler-conf "$T/missing.yaml" "$T/small.pb" >/dev/null 2>&1 &&
  fail "a missing configuration file is not an error"
passed=$((passed + 1))

# Preemption (the benchmark's --preempt rows, tiny): four 2-cpu nodes full of low-priority
# 1-cpu pods, two high-priority gangs of two: each of the four preemptors evicts one victim
# and is nominated to its node; the replay prints both, with the reason.
"$SESSIONS" --preempt --nodes 4 --node-cpu 2000 --running 8 --running-cpu 1000 --pending 4 \
  --gang 2 --pod-cpu 1000 >"$T/preempt.json"
[ "$(jq '.nominations == 4 and .evictions == 4 and .placements == 0' "$T/preempt.json")" = true ] ||
  fail "sessions --preempt: $(cat "$T/preempt.json")"
"$SESSIONS" --preempt --write-snapshot "$T/preempt.pb" --nodes 4 --node-cpu 2000 --running 8 \
  --running-cpu 1000 --pending 4 --gang 2 --pod-cpu 1000 2>/dev/null
cat >"$T/preempt.yaml" <<'YAML'
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: nodeorder
YAML
"$REPLAY" --scheduler-conf "$T/preempt.yaml" "$T/preempt.pb" >"$T/out3"
[ "$(grep -c '^evict bench/run-[0-9]*-[0-9]*: preempt$' "$T/out3")" = 4 ] ||
  fail "preempt: evictions: $(cat "$T/out3")"
[ "$(grep -c '^nominate bench/job-00000[01]-[01] -> node-0000[0-3]$' "$T/out3")" = 4 ] ||
  fail "preempt: nominations: $(cat "$T/out3")"
grep -q '^summary: 0 binds, 4 evicts' "$T/out3" || fail "preempt: summary"
passed=$((passed + 1))

pinned() { # nodes running pending gang expected-sha256 [generator flags]
  "$SESSIONS" --write-snapshot "$T/cmp.pb" --nodes "$1" --running "$2" --pending "$3" \
    --gang "$4" --node-cpu 8000 --pod-cpu 700 "${@:6}" 2>/dev/null
  local got
  got=$("$REPLAY" "$T/cmp.pb" | grep -v '^summary\|^snapshot' | sed 's/ score [0-9.-]*$//' |
    sha256sum | cut -d' ' -f1)
  [ "$got" = "$5" ] || fail "decisions changed on $1 nodes, gangs of $4: $got"
  passed=$((passed + 1))
}
pinned 300 1001 3500 1 6c9f140c422a456b80699a0630f638b877b31e162f5619ef7973e937ae4bb533
pinned 500 2500 4000 10 337e0be366ff101f473dd3303870c835369b791584c070b24df15af682204a8a
# Labels, taints, selectors, affinity and tolerations varying per gang (the per-shape caches
# of predicates and nodeorder), with gangs that fit nowhere for affinity and taint reasons.
pinned 500 1001 4000 10 591491a7fbdffcb2df34ae7a2d873be4d16c636b4ae97a53663acc4129174196 --shapes
pinned 300 999 3000 1 0299d50c66851eb557916cc30d151ed76ed185715021994c4424ff8c74d9a0b7 --shapes
echo "replay: $passed passed, 0 failed"
