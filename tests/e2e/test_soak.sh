#!/usr/bin/env bash
# Soak: gang Jobs are created, run, complete and are deleted at a steady rate through both
# processes (kiln-controller makes the PodGroups and pods and, ttlSecondsAfterFinished 0,
# deletes each Job once Completed; kiln-scheduler binds the pods; the garbage collector deletes
# a deleted Job's pods), while the resident set size (VmRSS, and its anonymous part RssAnon: the
# heap, without the shared libraries' pages) of each process is sampled every second on the
# side. The work is a pipeline, not a series of stalls: up to KILN_SOAK_INFLIGHT Jobs exist at
# once (one being deleted included: it stays until its pods are gone, so the pods are bounded
# too); every poll is one kubectl that counts them, and one kubectl create adds KILN_SOAK_BATCH
# Jobs while there is room.
#
# It reports the slope of RSS against pods processed (Jobs gone x gang), least squares over the
# lowest sample of each 11 s (the processes give free heap pages back every 10 s, kc_app's
# malloc_trim, and a sample just before or after that differs by a few hundred KiB) after the
# first third of the pods (the warm-up). On a run of KILN_SOAK_FLAT_PODS (default 2000) pods or
# more the slope of each process must stay under KILN_SOAK_MAX_SLOPE (default 128) KiB per 1000
# pods (flat: 100,000 pods would add at most ~12 MiB; before the fixes of 2026-12-01 the slopes
# were 290 and 681), and the RSS with nothing in flight (the lowest over 11 s once every object
# is gone) is measured at the end of the warm-up and at the end, and reported; a shorter run,
# too noisy, only checks a generous bound that a leak proportional to the work would break.
# At the end both processes are stopped with SIGTERM: built with AddressSanitizer
# (KILN_BUILD=build-asan) LeakSanitizer reports at that exit, and any report fails the test.
#   KILN_SOAK_JOBS (default 20) Jobs of KILN_SOAK_GANG (default 2) pods, created KILN_SOAK_BATCH
#   (default 5) at a time, at most KILN_SOAK_INFLIGHT (default 2 x batch) at once; with
#   KILN_SOAK_MAX_SECONDS no Job is created after that many seconds (the figures are then those
#   of the Jobs created, the warm-up a third of those). CI runs the default; by hand, e.g.
#   KILN_SOAK_JOBS=5000 KILN_SOAK_GANG=20 KILN_SOAK_BATCH=20 KILN_SOAK_INFLIGHT=80 \
#     KILN_SOAK_MAX_SECONDS=2400 tests/e2e/run soak
source "$(dirname "$0")/lib.sh"
SUITE=soak

JOBS=${KILN_SOAK_JOBS:-20}
GANG=${KILN_SOAK_GANG:-2}
BATCH=${KILN_SOAK_BATCH:-5}
INFLIGHT=${KILN_SOAK_INFLIGHT:-$((2 * BATCH))}
FLAT_PODS=${KILN_SOAK_FLAT_PODS:-2000}
MAX_SECONDS=${KILN_SOAK_MAX_SECONDS:-0}
PODS=$((JOBS * GANG))
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

# rss PID: sets R and A to the process' VmRSS and RssAnon in KiB (no fork: it runs every second).
rss() {
  local k v
  R=0 A=0
  while read -r k v _; do
    case $k in VmRSS:) R=$v ;; RssAnon:) A=$v ;; esac
  done <"/proc/$1/status" 2>/dev/null
}

# sampler CTL_PID SCH_PID OUT STOP TEST_PID: every second "time ctl_rss ctl_anon sch_rss sch_anon"
# to OUT until the file STOP exists or the test's shell is gone (a failed test).
sampler() {
  local R A line
  while [ ! -e "$4" ] && kill -0 "$5" 2>/dev/null; do
    line=$EPOCHREALTIME
    rss "$1"
    line+=" $R $A"
    rss "$2"
    echo "$line $R $A" >>"$3"
    sleep 1
  done
}

# jobs_yaml FROM TO: the YAML of Jobs s<FROM>..s<TO>, each one task of GANG pods that all must
# run (minAvailable GANG), run by kwok for 1 s on the soak nodes, and deleted by the
# controller's gc-controller as soon as it is Completed (ttlSecondsAfterFinished 0, foreground
# propagation: the garbage collector deletes its pods and PodGroup first). Built without a
# fork per Job.
jobs_yaml() {
  local i
  for ((i = $1; i <= $2; i++)); do
    printf '%s\n' "---" "apiVersion: batch.volcano.sh/v1alpha1" "kind: Job" \
      "metadata: {name: s$i}" "spec:" "  schedulerName: volcano" "  minAvailable: $GANG" \
      "  ttlSecondsAfterFinished: 0" "  tasks:" "  - name: w" "    replicas: $GANG" "    template:" "      metadata:" \
      "        annotations: {kwok.kiln.dev/run-for: 1s}" "      spec:" \
      "        restartPolicy: Never" "        nodeSelector: {grp: soak}" \
      "        containers: [{name: main, image: busybox}]"
  done
}

gone() { # NS: no Job, PodGroup or pod left
  [ -z "$(kubectl get vcjob,podgroup,pod -n "$1" -o name 2>/dev/null)" ]
}

# settle NS PROGRESS DONE [NEXT_PHASE]: wait until nothing is left in NS, then 11 s marked
# "settle" in PROGRESS (the sampler's lowest sample of those is the RSS with nothing in flight).
settle() {
  wait_for 600 "every soak object gone" gone "$1"
  echo "$EPOCHREALTIME $3 settle" >>"$2"
  sleep 11
  echo "$EPOCHREALTIME $3 ${4:-run}" >>"$2"
}

# pump NS PROGRESS UNTIL: run the pipeline until Jobs s1..s<UNTIL> are created and gone (the
# global NEXT, the next Job to create, carries across calls). Each poll is one kubectl listing
# the Jobs left (a deleted one stays until the garbage collector has deleted its pods, so that
# count bounds the pods too), and one kubectl create a batch while there is room.
pump() {
  local ns=$1 prog=$2 until=$3 left done last=-1 stall=$SECONDS to
  while :; do
    left=$(kubectl get vcjob -n "$ns" -o name | wc -l) || fail "cannot list the soak Jobs"
    done=$((NEXT - 1 - left))
    if [ "$done" != "$last" ]; then
      echo "$EPOCHREALTIME $((done * GANG)) run" >>"$prog"
      last=$done stall=$SECONDS
    fi
    [ "$done" -lt "$until" ] || return 0
    if [ "$MAX_SECONDS" -gt 0 ] && [ $((SECONDS - T0)) -ge "$MAX_SECONDS" ] && [ "$NEXT" -le "$until" ]; then
      until=$((NEXT - 1)) # out of time: finish what is in flight
      continue
    fi
    [ $((SECONDS - stall)) -lt 300 ] ||
      fail "no Job gone in 300 s: $(kubectl get vcjob -n "$ns" --no-headers 2>&1 | head -5)"
    if [ "$NEXT" -le "$until" ] && [ $((left + BATCH)) -le "$INFLIGHT" ]; then
      to=$((NEXT + BATCH - 1))
      [ "$to" -le "$until" ] || to=$until
      jobs_yaml "$NEXT" "$to" | kubectl create -n "$ns" -f - >/dev/null ||
        fail "cannot create Jobs s$NEXT..s$to"
      NEXT=$((to + 1))
      continue
    fi
    sleep 0.5
  done
}

test_rss_flat_while_jobs_come_and_go() {
  apply_crds || fail "cannot install the CRDs"
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null
  kubectl get namespace volcano-system >/dev/null 2>&1 || kubectl create namespace volcano-system >/dev/null
  group_nodes soak 2 --pods $((2 * INFLIGHT * GANG + 110))
  local ns
  ns=$(new_namespace soak)
  # The leases a suite before this one left (a stopped process does not give its lease back):
  # waiting out their 30 s would only delay the start.
  kubectl delete lease -n volcano-system vc-controller-manager volcano --ignore-not-found >/dev/null
  proc kiln-soak-controller "$CTL_BIN"
  proc kiln-soak-scheduler "$SCH_BIN"
  local samples=$D/soak-rss.txt prog=$D/soak-progress.txt stop=$D/soak-stop t0=$SECONDS long=0
  T0=$SECONDS
  [ "$PODS" -lt "$FLAT_PODS" ] || long=1
  : >"$samples"
  echo "$EPOCHREALTIME 0 run" >"$prog"
  rm -f "$stop"
  sampler "$(cat "$D/pids/kiln-soak-controller.pid")" "$(cat "$D/pids/kiln-soak-scheduler.pid")" \
    "$samples" "$stop" "$BASHPID" &
  local spid=$! warm=$((JOBS / 3))
  NEXT=1
  if [ "$long" = 1 ]; then
    pump "$ns" "$prog" "$warm"
    settle "$ns" "$prog" $((warm * GANG))
  fi
  pump "$ns" "$prog" "$JOBS"
  if [ "$NEXT" -le "$JOBS" ]; then # cut by KILN_SOAK_MAX_SECONDS
    echo "REPORT soak: cut after ${MAX_SECONDS}s at $((NEXT - 1)) of $JOBS Jobs"
    JOBS=$((NEXT - 1)) PODS=$(((NEXT - 1) * GANG))
  fi
  echo "$EPOCHREALTIME $PODS drain" >>"$prog"
  wait_for 600 "every soak object gone" gone "$ns"
  local took=$((SECONDS - t0))
  [ "$long" = 0 ] || settle "$ns" "$prog" "$PODS" end
  touch "$stop"
  wait "$spid"
  local fit
  fit=$(python3 "$E2E_DIR/soak_fit.py" "$samples" "$prog" "$PODS" "$FLAT_PODS" \
    "${KILN_SOAK_MAX_SLOPE:-128}") || fail "cannot fit the samples"
  local cs cw cl ca cok ss sw sl sa sok cset sset
  read -r cs cw cl ca cok ss sw sl sa sok cset sset <<<"$fit"
  echo "REPORT soak: $PODS pods in $JOBS Jobs created and deleted in ${took}s" \
    "($(python3 -c "print(f'{$PODS / max($took, 1):.1f}')") pods/s)"
  if [ "$long" = 1 ]; then
    echo "REPORT soak: RSS slope after warm-up: controller $cs KiB per 1000 pods" \
      "($cw -> $cl MiB; anon $ca), scheduler $ss KiB per 1000 pods ($sw -> $sl MiB; anon $sa);" \
      "with nothing in flight, after warm-up -> at the end: controller ${cset//,/ -> } MiB," \
      "scheduler ${sset//,/ -> } MiB"
  else
    echo "REPORT soak: RSS controller $cw -> $cl MiB, scheduler $sw -> $sl MiB (too short for" \
      "the slope check)"
  fi
  # A clean exit: LeakSanitizer (an ASan build) reports here; read before the slope's verdict,
  # so that a run gives both.
  local n pid san=""
  for n in kiln-soak-controller kiln-soak-scheduler; do
    pid=$(cat "$D/pids/$n.pid")
    kill -TERM "$pid"
    wait_for 60 "$n exit" bash -c "! kill -0 $pid 2>/dev/null"
    rm -f "$D/pids/$n.pid" "$D/pids/$n.exe"
    if grep -q 'ERROR: \(Leak\|Address\)Sanitizer' "$D/logs/$n.log"; then
      san+="$n: $(grep -A5 'ERROR: .*Sanitizer' "$D/logs/$n.log" | head -8) "
    fi
  done
  [ -z "$san" ] || fail "$san"
  if grep -q __asan_init "$CTL_BIN"; then
    # Under ASan the RSS holds the allocator's quarantine of freed blocks (up to 256 MiB),
    # which fills over the run: LeakSanitizer is the check there, not the slope.
    echo "REPORT soak: AddressSanitizer build: LeakSanitizer reported nothing at exit;" \
      "the slope is not checked (the quarantine of freed blocks fills)"
  else
    [ "$cok" = ok ] || fail "the controller's RSS grew: $cs KiB per 1000 pods, $cw -> $cl MiB"
    [ "$sok" = ok ] || fail "the scheduler's RSS grew: $ss KiB per 1000 pods, $sw -> $sl MiB"
  fi
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l grp=soak --wait=false >/dev/null 2>&1 || true
}

e2e_main "$@"
