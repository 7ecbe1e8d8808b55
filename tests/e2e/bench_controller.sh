#!/usr/bin/env bash
# Pods created per second by kiln-controller for JOBS Jobs x PODS pods, against the API
# server's own create ceiling measured in the same run (tests/bench/ceiling --mode create,
# same number of pods, full concurrency on one HTTP/2 connection).
#
#   KUBECONFIG=... KILN_BUILD=build-x KILN_CLUSTER_DIR=/tmp/dir tests/e2e/bench_controller.sh [JOBS] [PODS]
#
# The controller runs with client QPS/burst 5000/10000 (Volcano's benchmark setting) and
# --worker-threads $WORKERS (default 3). The PodGroups are moved to Inqueue all at once (no scheduler), so the
# window measured is the controller turning Inqueue PodGroups into pods: from the first
# pod's creationTimestamp to the last one's (1 s resolution). Prints one line per figure.
source "$(dirname "$0")/lib.sh"
JOBS=${1:-100} PODS=${2:-50}
N=$((JOBS * PODS))
CTL_LOG=$KILN_CLUSTER_DIR/logs/kiln-controller-bench.log
CTL_PID=$KILN_CLUSTER_DIR/pids/kiln-controller.pid

kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null
until kubectl wait --for=condition=Established --timeout=5s crd --all >/dev/null 2>&1; do
  sleep 0.5
done
kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null

# 1. The ceiling.
ns=$(new_namespace ceil)
"$KILN_BUILD/tests/bench/ceiling" --kubeconfig "$KUBECONFIG" --namespace "$ns" --count "$N" \
  --mode create >"$KILN_CLUSTER_DIR/ceiling.json"
ceil=$(jq -r '.create.per_s // empty' "$KILN_CLUSTER_DIR/ceiling.json")
echo "ceiling: $(jq -c '.create' "$KILN_CLUSTER_DIR/ceiling.json")"
kubectl delete namespace "$ns" --wait=false >/dev/null

# 2. The controller.
mkdir -p "$KILN_CLUSTER_DIR/logs" "$KILN_CLUSTER_DIR/pids"
"$KILN_BUILD/controller/kiln-controller" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --kube-api-qps=5000 --kube-api-burst=10000 --worker-threads="${WORKERS:-3}" >"$CTL_LOG" 2>&1 </dev/null &
echo $! >"$CTL_PID"
echo "$KILN_BUILD/controller/kiln-controller" >"${CTL_PID%.pid}.exe"
ns=$(new_namespace bench)
for j in $(seq 1 "$JOBS"); do
  cat <<JOB
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: b$j}
spec:
  schedulerName: volcano
  minAvailable: 1
  tasks:
  - name: t
    replicas: $PODS
    template:
      spec:
        containers: [{name: c, image: busybox}]
JOB
done | kubectl apply -n "$ns" -f - >/dev/null
until [ "$(kubectl get podgroups -n "$ns" --no-headers 2>/dev/null | wc -l)" -ge "$JOBS" ]; do
  sleep 0.5
done
start=$(date +%s.%N)
kubectl get podgroups -n "$ns" -o name |
  xargs -P 8 -n 10 kubectl patch -n "$ns" --type=merge -p '{"status":{"phase":"Inqueue"}}' >/dev/null
deadline=$((SECONDS + 900))
while [ "$(kubectl get pods -n "$ns" --no-headers 2>/dev/null | wc -l)" -lt "$N" ]; do
  [ $SECONDS -lt $deadline ] || { echo "timed out"; break; }
  sleep 1
done
end=$(date +%s.%N)
ts=$(kubectl get pods -n "$ns" -o 'jsonpath={range .items[*]}{.metadata.creationTimestamp}{"\n"}{end}' |
  sort | sed -n '1p;$p')
first=$(date -d "$(echo "$ts" | head -1)" +%s) last=$(date -d "$(echo "$ts" | tail -1)" +%s)
made=$(kubectl get pods -n "$ns" --no-headers | wc -l)
win=$((last - first + 1))
echo "controller: $made pods for $JOBS jobs x $PODS in ${win}s (first..last creationTimestamp):" \
  "$(awk -v n="$made" -v w="$win" 'BEGIN{printf "%.1f", n/w}') pods/s;" \
  "Inqueue patch to last pod seen $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')s;" \
  "ceiling ${ceil:-?} creates/s"
kill "$(cat "$CTL_PID")"
