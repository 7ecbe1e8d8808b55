#!/usr/bin/env bash
# vcctl job whatif --snapshot on a snapshot written by `sessions --write-snapshot` (the dump's
# format), as the README's 5,000-node figure is taken, at a small size: four nodes of 4 cpu
# with two running pods of 1 cpu each (8 cpu free).
#   1. a gang of four 1-cpu pods: predicted admitted and placed, each pod on a node, no node
#      over its free cpu, no victims; the text form says the same;
#   2. a gang of two 3-cpu pods: admitted, not placed (no node has 3 cpu free), with the gang's
#      why-pending line and each node's reason;
#   3. a gang of five 2-cpu pods (10 cpu): not admitted, with the queue's message;
#   4. a file that is not a snapshot is an error.
# Usage: test_whatif_snapshot.sh SESSIONS VCCTL
set -euo pipefail
SESSIONS=$1 VCCTL=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
passed=0

"$SESSIONS" --write-snapshot "$T/small.pb" --nodes 4 --node-cpu 4000 --running 8 \
  --running-cpu 1000 --pending 0 --gang 2 2>/dev/null
gang() { # NAME REPLICAS CPU
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: bench}
spec:
  schedulerName: volcano
  minAvailable: $2
  tasks:
  - name: w
    replicas: $2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "$3"}}}]
YAML
}

gang fits 4 1 >"$T/fits.yaml"
"$VCCTL" job whatif -f "$T/fits.yaml" --snapshot "$T/small.pb" -o json >"$T/fits.json"
[ "$(jq '.admitted and .placed and (.victims | length) == 0' "$T/fits.json")" = true ] ||
  fail "fits: $(cat "$T/fits.json")"
[ "$(jq '.cluster.nodes == 4 and .cluster.pods == 8' "$T/fits.json")" = true ] ||
  fail "fits: the cluster as read: $(jq -c .cluster "$T/fits.json")"
[ "$(jq '[.tasks[] | select(.node != null and .action == "allocate")] | length' "$T/fits.json")" = 4 ] ||
  fail "fits: tasks: $(jq -c .tasks "$T/fits.json")"
[ "$(jq '[.tasks | group_by(.node)[] | length] | max' "$T/fits.json")" -le 2 ] ||
  fail "fits: a node over its 2 free cpu: $(jq -c .tasks "$T/fits.json")"
"$VCCTL" job whatif -f "$T/fits.yaml" --snapshot "$T/small.pb" >"$T/fits.txt"
grep -q '^Placed:       yes$' "$T/fits.txt" || fail "fits: text: $(cat "$T/fits.txt")"
grep -q "^Job Source:   the Job as written; the cluster from $T/small.pb$" "$T/fits.txt" ||
  fail "fits: source: $(cat "$T/fits.txt")"
passed=$((passed + 1))

# Admitted (6 cpu of the queue's 8 left) but no node has 3 cpu free.
gang wide 2 3 >"$T/wide.yaml"
"$VCCTL" job whatif -f "$T/wide.yaml" --snapshot "$T/small.pb" -o json >"$T/wide.json"
[ "$(jq '.admitted and (.placed or .placedAfterEviction | not)' "$T/wide.json")" = true ] ||
  fail "wide: $(cat "$T/wide.json")"
jq -r .whyPending "$T/wide.json" | grep -q '^2/2 tasks in gang unschedulable' ||
  fail "wide: why pending: $(jq -r .whyPending "$T/wide.json")"
[ "$(jq '[.nodeReasons[] | select(.reason == "Insufficient cpu")] | length' "$T/wide.json")" = 4 ] ||
  fail "wide: node reasons: $(jq -c .nodeReasons "$T/wide.json")"
passed=$((passed + 1))

# More than the queue has left: not admitted, with the queue's message.
gang big 5 2 >"$T/big.yaml"
"$VCCTL" job whatif -f "$T/big.yaml" --snapshot "$T/small.pb" -o json >"$T/big.json"
[ "$(jq '.admitted or .placed or .placedAfterEviction' "$T/big.json")" = false ] ||
  fail "big: $(cat "$T/big.json")"
jq -r .whyPending "$T/big.json" | grep -q 'queue default resource quota insufficient' ||
  fail "big: why pending: $(jq -r .whyPending "$T/big.json")"
passed=$((passed + 1))

echo "not a snapshot" >"$T/bad.pb"
if "$VCCTL" job whatif -f "$T/fits.yaml" --snapshot "$T/bad.pb" >"$T/bad.out" 2>&1; then
  fail "a file that is not a snapshot is not an error"
fi
grep -q 'is not a snapshot' "$T/bad.out" || fail "bad: $(cat "$T/bad.out")"
passed=$((passed + 1))
echo "whatif-snapshot: $passed passed, 0 failed"
