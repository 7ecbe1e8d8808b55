#!/usr/bin/env bash
# Soak: gang Jobs are created, run, complete and are deleted in batches at a steady rate through
# both processes (kiln-controller makes and deletes the pods, kiln-scheduler binds them), and
# the resident set size (VmRSS) of each process is sampled after every batch. It reports the
# slope of RSS against pods processed (least squares over the samples after the first third,
# the warm-up) and checks it: on a run of KILN_SOAK_FLAT_PODS (default 2000) pods or more the
# slope of each process must stay under KILN_SOAK_MAX_SLOPE (default 128) KiB per 1000 pods
# (flat: 100,000 pods would add at most ~12 MiB; before the fixes of 2026-12-01 the slopes
# were 290 and 681), each sample then the lowest over 11 s; a shorter run, too noisy, only
# checks a generous bound that a leak proportional to the work would break. The anonymous
# part of the RSS (RssAnon: the heap, without the shared libraries' pages) is reported too.
# At the end both processes are stopped with SIGTERM: built with AddressSanitizer
# (KILN_BUILD=build-asan) LeakSanitizer reports at that exit, and any report fails the test.
#   KILN_SOAK_JOBS (default 20) Jobs of KILN_SOAK_GANG (default 2) pods, KILN_SOAK_BATCH
#   (default 5) Jobs at a time. CI runs the default; a larger run by hand, e.g.
#   KILN_SOAK_JOBS=5000 KILN_SOAK_GANG=5 KILN_SOAK_BATCH=100 tests/e2e/run soak
source "$(dirname "$0")/lib.sh"
SUITE=soak

JOBS=${KILN_SOAK_JOBS:-20}
GANG=${KILN_SOAK_GANG:-2}
BATCH=${KILN_SOAK_BATCH:-5}
FLAT_PODS=${KILN_SOAK_FLAT_PODS:-2000}
CTL_BIN=$KILN_BUILD/controller/kiln-controller
SCH_BIN=$KILN_BUILD/scheduler/kiln-scheduler
D=$KILN_CLUSTER_DIR
mkdir -p "$D/logs" "$D/pids"

proc() { # NAME BIN: a Kiln process on the shared cluster, stopped by tests/e2e/run after us
  local name=$1 bin=$2
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} setsid "$bin" --kubeconfig "$KUBECONFIG" -v=1 \
    --leader-elect-lease-duration=30s --leader-elect-renew-deadline=25s \
    --leader-elect-retry-period=2s >"$D/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name.pid"
  echo "$bin" >"$D/pids/$name.exe"
}

rss_kb() { # NAME: "VmRSS RssAnon" in KiB
  awk '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2} END {print r, a}' \
    "/proc/$(cat "$D/pids/$1.pid")/status" 2>/dev/null
}

# rss_low NAME: on a run long enough for the slope check, the lowest "VmRSS RssAnon" over 11 s:
# the processes give free heap pages back every 10 s (kc_app's malloc_trim), and a sample
# taken just before or after that differs by a few hundred KiB, noise the slope would read.
rss_low() {
  if [ $((JOBS * GANG)) -lt "$FLAT_PODS" ]; then
    rss_kb "$1"
    return
  fi
  local i best="" cur
  for i in $(seq 1 12); do
    cur=$(rss_kb "$1")
    if [ -z "$best" ] || [ "${cur%% *}" -lt "${best%% *}" ]; then best=$cur; fi
    [ "$i" = 12 ] || sleep 1
  done
  echo "$best"
}

batch() { # NS FROM TO
  gang_jobs s "$2" "$3" "$GANG" 1 'grp: soak' | kubectl apply -n "$1" -f - >/dev/null
}

completed() { # NS N
  [ "$(kubectl get vcjob -n "$1" -o 'jsonpath={range .items[*]}{.status.state.phase}{"\n"}{end}' 2>/dev/null |
    grep -c '^Completed$')" -eq "$2" ]
}

gone() { # NS: no Job, PodGroup or pod left
  [ -z "$(kubectl get vcjob,podgroup,pod -n "$1" -o name 2>/dev/null)" ]
}

test_rss_flat_while_jobs_come_and_go() {
  apply_crds || fail "cannot install the CRDs"
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
  kubectl get namespace volcano-system >/dev/null 2>&1 || kubectl create namespace volcano-system >/dev/null
  group_nodes soak 2
  local ns
  ns=$(new_namespace soak)
  proc kiln-soak-controller "$CTL_BIN"
  proc kiln-soak-scheduler "$SCH_BIN"
  local samples=$D/soak-rss.txt from=1 to t0=$SECONDS
  : >"$samples"
  while [ "$from" -le "$JOBS" ]; do
    to=$((from + BATCH - 1))
    [ "$to" -le "$JOBS" ] || to=$JOBS
    batch "$ns" "$from" "$to"
    wait_for 300 "Jobs s$from..s$to Completed" completed "$ns" $((to - from + 1))
    kubectl delete vcjob -n "$ns" --all --wait=false >/dev/null
    wait_for 300 "Jobs s$from..s$to and their pods gone" gone "$ns"
    # pods, controller RSS and anon, scheduler RSS and anon, seconds
    echo "$((to * GANG)) $(rss_low kiln-soak-controller) $(rss_low kiln-soak-scheduler) $((SECONDS - t0))" >>"$samples"
    from=$((to + 1))
  done
  local took=$((SECONDS - t0)) fit
  fit=$(python3 - "$samples" "$((JOBS * GANG))" "$FLAT_PODS" "${KILN_SOAK_MAX_SLOPE:-128}" <<'PY'
import sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 6]
pods, flat_pods, max_slope = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
warm = rows[len(rows) // 3:] if len(rows) >= 3 else rows
def slope(col):  # KiB per 1000 pods, least squares over the samples after the warm-up
    xs = [r[0] for r in warm]; ys = [r[col] for r in warm]
    n = len(xs); mx = sum(xs) / n; my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return 0.0 if sxx == 0 else 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
out = []
for col in (1, 3):  # VmRSS of the controller, of the scheduler; RssAnon follows each
    first, last, s = warm[0][col], rows[-1][col], slope(col)
    if pods >= flat_pods:
        ok = s <= max_slope
    else:  # too short for a slope: the last sample within half the first plus 32 MiB
        ok = last <= first * 1.5 + 32768
    out += [f"{s:.1f}", f"{first / 1024:.1f}", f"{last / 1024:.1f}", f"{slope(col + 1):.1f}",
            "ok" if ok else "grew"]
print(" ".join(out))
PY
)
  local cs cw cl ca cok ss sw sl sa sok
  read -r cs cw cl ca cok ss sw sl sa sok <<<"$fit"
  echo "REPORT soak: $((JOBS * GANG)) pods in $JOBS Jobs created and deleted in ${took}s;" \
    "RSS slope after warm-up: controller $cs KiB per 1000 pods ($cw -> $cl MiB; anon $ca)," \
    "scheduler $ss KiB per 1000 pods ($sw -> $sl MiB; anon $sa)$([ $((JOBS * GANG)) -ge \
      "$FLAT_PODS" ] || echo "; too short for the slope check")"
  [ "$cok" = ok ] || fail "the controller's RSS grew: $cs KiB per 1000 pods, $cw -> $cl MiB"
  [ "$sok" = ok ] || fail "the scheduler's RSS grew: $ss KiB per 1000 pods, $sw -> $sl MiB"
  # A clean exit: LeakSanitizer (an ASan build) reports here.
  local n pid
  for n in kiln-soak-controller kiln-soak-scheduler; do
    pid=$(cat "$D/pids/$n.pid")
    kill -TERM "$pid"
    wait_for 60 "$n exit" bash -c "! kill -0 $pid 2>/dev/null"
    rm -f "$D/pids/$n.pid" "$D/pids/$n.exe"
    if grep -q 'ERROR: \(Leak\|Address\)Sanitizer' "$D/logs/$n.log"; then
      fail "$n: $(grep -A5 'ERROR: .*Sanitizer' "$D/logs/$n.log" | head -8)"
    fi
  done
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l grp=soak --wait=false >/dev/null 2>&1 || true
}

e2e_main "$@"
