#!/usr/bin/env bash
# Informers, events and leader election (common/kc_informer, kc_events, kc_leader) against
# the real control plane: the store equals kubectl after creates, updates and deletes; an API
# server restart, and a gap ended by an etcd compaction that forces 410, lose no event and
# invent none; repeated events are one Event with a count; a killed leader is replaced
# within 20 s; a frozen leader writes nothing once it wakes up after losing the lease.
source "$(dirname "$0")/lib.sh"
SUITE=informer

CHECK="$KILN_BUILD/tests/e2e/informer_check"

# kubectl's view of the namespace's configmaps: "name rv v" sorted (v "-" when absent).
kubectl_state() {
  kubectl get configmaps -n "$1" -o json |
    jq -r '.items[] | "\(.metadata.name) \(.metadata.resourceVersion) \(.data.v // "-")"' | sort
}

# The informer's store as it dumped it, sorted.
store_state() {
  sort "$1" 2>/dev/null
}

# replay LOG: the state the handler calls describe ("name rv" sorted). Fails on an event
# that does not fit what came before: an ADD of a known name, or an UPDATE or DELETE of an
# unknown one or with a stale old resourceVersion (a phantom or a missed event).
replay() {
  awk '
    $1 == "ADD"    { if ($2 in s) { print "ADD of known " $2 > "/dev/stderr"; bad = 1 } s[$2] = $3 }
    $1 == "UPDATE" { if (!($2 in s) || s[$2] != $3) { print "UPDATE of " $2 " from " $3 " but have " s[$2] > "/dev/stderr"; bad = 1 } s[$2] = $4 }
    $1 == "DELETE" { if (!($2 in s)) { print "DELETE of unknown " $2 > "/dev/stderr"; bad = 1 } delete s[$2] }
    END { for (k in s) print k, s[k]; exit bad }' "$1" | sort
}

# states_match NS DIR: store and replayed handler log both equal kubectl.
states_match() {
  local want
  want=$(kubectl_state "$1") || return 1
  [ "$want" = "$(store_state "$2/state")" ] || return 1
  [ "$(echo "$want" | awk '{print $1, $2}')" = "$(replay "$2/log")" ] || return 1
}

show_diff() {
  echo "kubectl vs store:" >&2
  diff <(kubectl_state "$1") <(store_state "$2/state") >&2 || true
  echo "kubectl vs replayed handler log:" >&2
  diff <(kubectl_state "$1" | awk '{print $1, $2}') <(replay "$2/log") >&2 || true
  cat "$2/stats" >&2 || true
}

wait_match() {
  local ns=$1 dir=$2 secs=$3 deadline=$((SECONDS + $3))
  until states_match "$ns" "$dir" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      show_diff "$ns" "$dir"
      fail "store did not converge to kubectl within ${secs}s"
    fi
    sleep 0.3
  done
}

# make_configmaps NS PREFIX FROM TO: creates PREFIX-FROM..PREFIX-TO with data.v=1 in one call.
make_configmaps() {
  local i
  {
    echo '{"apiVersion":"v1","kind":"List","items":['
    for i in $(seq "$3" "$4"); do
      [ "$i" = "$3" ] || echo ','
      echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$2-$i\"},\"data\":{\"v\":\"1\"}}"
    done
    echo ']}'
  } | kubectl create -n "$1" -f - >/dev/null
}

start_informer() { # NS DIR
  : >"$2/log"
  # In protobuf, as kiln-scheduler watches pods and nodes (the JSON path is every other
  # informer's, in every other suite).
  "$CHECK" --protobuf --namespace "$1" --state "$2/state" --log "$2/log" --stats "$2/stats" informer \
    2>"$2/stderr" &
  echo $! >"$2/pid"
  wait_for 30 "informer sync" grep -q SYNCED "$2/log"
}

stop_informer() { # DIR
  local pid
  pid=$(cat "$1/pid" 2>/dev/null) || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

apiserver_arg() { # NAME: the value of --NAME= on the running kube-apiserver's command line
  tr '\0' '\n' <"/proc/$(cat "$KILN_CLUSTER_DIR/pids/kube-apiserver.pid")/cmdline" |
    sed -n "s/^--$1=//p" | head -1
}

# Restarts kube-apiserver with the command line it runs with, as tests/cluster/up started it.
restart_apiserver() {
  local pidf="$KILN_CLUSTER_DIR/pids/kube-apiserver.pid" pid cmd=()
  pid=$(cat "$pidf")
  mapfile -d '' cmd <"/proc/$pid/cmdline"
  # TERM, then KILL: a graceful stop waits for open watches to drain, and a crash is the
  # harsher case for the clients anyway.
  kill "$pid"
  local i
  for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "kube-apiserver $pid did not stop"
  setsid "${cmd[@]}" >>"$KILN_CLUSTER_DIR/logs/kube-apiserver.log" 2>&1 </dev/null &
  echo $! >"$pidf"
  wait_for 60 "kube-apiserver ready after restart" kubectl get --raw /readyz
}

# Compacts etcd at its current revision through the v3 HTTP gateway: every older
# resourceVersion is gone.
compact_etcd() {
  local url rev
  url=$(apiserver_arg etcd-servers | cut -d, -f1)
  [ -n "$url" ] || fail "no --etcd-servers on the apiserver"
  rev=$(curl -fsS -X POST "$url/v3/kv/range" -d '{"key":"AA=="}' | jq -r .header.revision)
  [ -n "$rev" ] && [ "$rev" != null ] || fail "no etcd revision from $url"
  curl -fsS -X POST "$url/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" \
    >/dev/null || fail "compaction at $rev failed"
  echo "$rev"
}

stat_of() { # DIR KEY
  tr ' ' '\n' <"$1/stats" | sed -n "s/^$2=//p"
}

test_store_equals_kubectl_after_creates_updates_deletes() {
  local ns dir
  ns=$(new_namespace inf)
  dir=$(mktemp -d)
  trap "stop_informer '$dir'" EXIT
  make_configmaps "$ns" pre 1 120 # three pages of 50
  start_informer "$ns" "$dir"
  wait_match "$ns" "$dir" 20
  expect_eq 1 "$(stat_of "$dir" lists)" "lists"
  [ "$(stat_of "$dir" protobuf_replies)" -ge 3 ] || fail "not in protobuf: $(cat "$dir/stats")"
  # Creates, updates and deletes while watching.
  # One kubectl per kind of change (each object still gets its own request and event).
  make_configmaps "$ns" live 1 10
  kubectl patch configmap $(seq -f 'pre-%g' 1 15) -n "$ns" --type merge -p '{"data":{"v":"u"}}' >/dev/null
  kubectl delete configmap $(seq -f 'pre-%g' 100 120) -n "$ns" --wait=false >/dev/null
  kubectl patch configmap live-3 -n "$ns" --type merge -p '{"data":{"v":"x"}}' >/dev/null
  kubectl delete configmap live-4 -n "$ns" --wait=false >/dev/null
  wait_match "$ns" "$dir" 20
  expect_eq 21 "$(grep -c '^DELETE pre-' "$dir/log")" "deletes seen"
  expect_eq 16 "$(grep -c '^UPDATE ' "$dir/log")" "updates seen"
  expect_eq 0 "$(stat_of "$dir" relists)" "relists"
  stop_informer "$dir"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_survives_apiserver_restart_and_410_after_compaction() {
  local ns dir i pid rev t0
  ns=$(new_namespace inf)
  dir=$(mktemp -d)
  trap "stop_informer '$dir'" EXIT
  make_configmaps "$ns" cm 1 40
  start_informer "$ns" "$dir"
  wait_match "$ns" "$dir" 20
  # 1. A plain restart: the watch resumes, later changes arrive.
  restart_apiserver
  make_configmaps "$ns" after 1 3
  kubectl patch configmap cm-1 -n "$ns" --type merge -p '{"data":{"v":"r1"}}' >/dev/null
  kubectl delete configmap cm-2 -n "$ns" --wait=false >/dev/null
  wait_match "$ns" "$dir" 60
  # 2. A gap: the informer is frozen, the API server restarted (so nothing of what follows
  # can sit in the frozen process' socket, and the new watch cache begins after its last
  # resourceVersion), objects change, and etcd is compacted: resuming gets 410.
  local gone0
  gone0=$(stat_of "$dir" gone)
  pid=$(cat "$dir/pid")
  kill -STOP "$pid"
  restart_apiserver
  make_configmaps "$ns" gap 1 5
  kubectl patch configmap cm-3 cm-4 cm-5 cm-6 cm-7 -n "$ns" --type merge -p '{"data":{"v":"g"}}' >/dev/null
  kubectl delete configmap cm-8 cm-9 cm-10 cm-11 cm-12 after-1 -n "$ns" --wait=false >/dev/null
  rev=$(compact_etcd)
  t0=$SECONDS
  kill -CONT "$pid"
  wait_match "$ns" "$dir" 90
  echo "converged $((SECONDS - t0))s after the gap (compacted at $rev): $(cat "$dir/stats")"
  [ "$(stat_of "$dir" gone)" -gt "$gone0" ] || fail "no 410 was seen: $(cat "$dir/stats")"
  [ "$(stat_of "$dir" relists)" -ge 1 ] || fail "no relist: $(cat "$dir/stats")"
  # Exactly what was missed, nothing more: the gap's deletes as deletes, and no event at
  # all for objects that did not change.
  for i in 8 9 10 11 12; do
    expect_eq 1 "$(grep -c "^DELETE cm-$i " "$dir/log")" "DELETE cm-$i"
  done
  expect_eq 1 "$(grep -c '^DELETE after-1 ' "$dir/log")" "DELETE after-1"
  for i in 13 20 40; do
    expect_eq 1 "$(grep -c " cm-$i " "$dir/log")" "events for untouched cm-$i"
  done
  # And it keeps watching afterwards.
  make_configmaps "$ns" late 1 2
  wait_match "$ns" "$dir" 30
  stop_informer "$dir"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_repeated_events_are_aggregated() {
  local ns out
  ns=$(new_namespace inf)
  kubectl create configmap target -n "$ns" >/dev/null
  out=$("$CHECK" --namespace "$ns" --name target \
    --uid "$(jsonpath configmap/target '{.metadata.uid}' "$ns")" events 2>&1) || fail "$out"
  expect_match 'recorded=57 spam_dropped=15 .*failed=0' "$out"
  local ev
  ev=$(kubectl get events -n "$ns" -o json)
  # 5 identical: one Event, count 5.
  expect_eq "1 5" "$(jq -r '[.items[] | select(.reason == "Repeated")] | "\(length) \(.[0].count)"' <<<"$ev")" "Repeated"
  # 12 similar: 9 single Events and one combined with count 3.
  expect_eq 10 "$(jq '[.items[] | select(.reason == "Similar")] | length' <<<"$ev")" "Similar events"
  expect_eq "3 (combined from similar events): similar thing number 11" \
    "$(jq -r '.items[] | select(.reason == "Similar" and (.message | startswith("(combined"))) | "\(.count) \(.message)"' <<<"$ev")" \
    "combined event"
  # 40 of spam: one Event, counted up to the 25 the filter let through.
  expect_eq "1 25" "$(jq -r '[.items[] | select(.reason == "Spammy")] | "\(length) \(.[0].count)"' <<<"$ev")" "Spammy"
  expect_eq "ConfigMap target informer-check Warning" \
    "$(jq -r '.items[] | select(.reason == "Repeated") | "\(.involvedObject.kind) \(.involvedObject.name) \(.source.component) \(.type)"' <<<"$ev")"
  # kubectl describe shows one line with the count.
  expect_match 'Repeated +.*x5 over|Repeated +[0-9]+s \(x5 over' "$(kubectl describe configmap target -n "$ns")" "describe"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_deleted_event_is_created_again_with_its_count() {
  local ns out
  ns=$(new_namespace inf)
  kubectl create configmap target -n "$ns" >/dev/null
  out=$("$CHECK" --namespace "$ns" --name target events-recreate 2>&1) || fail "$out"
  expect_match 'deleted 1 events' "$out"
  expect_match 'recorded=2 spam_dropped=0 created=2 patched=0 failed=0' "$out"
  expect_eq "1 2 once more" "$(kubectl get events -n "$ns" -o json |
    jq -r '[.items[] | select(.reason == "Again")] | "\(length) \(.[0].count) \(.[0].message)"')" "Again"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_killed_leader_is_replaced_within_20s() {
  local ns d pa pb leader_pid other_out t0 took
  ns=$(new_namespace inf)
  d=$(mktemp -d)
  kubectl create configmap work -n "$ns" >/dev/null
  "$CHECK" --namespace "$ns" --name work --identity a --release leader >"$d/a" 2>&1 &
  pa=$!
  "$CHECK" --namespace "$ns" --name work --identity b --release leader >"$d/b" 2>&1 &
  pb=$!
  trap "kill -9 $pa $pb 2>/dev/null || true" EXIT
  wait_for 20 "a leader" grep -qh '^LEADING' "$d/a" "$d/b"
  local who loser
  who=$(cat "$d/a" "$d/b" | sed -n 's/^LEADING //p' | head -1)
  if [ "$who" = a ]; then loser=$d/b; else loser=$d/a; fi
  # The other replica has tried the lease since and found it held: it cannot lead now.
  wait_for 20 "the other replica seeing the leader" grep -q "^HOLDER $who\$" "$loser"
  expect_eq 1 "$(cat "$d/a" "$d/b" | grep -c '^LEADING')" "leaders"
  expect_eq "$who" "$(jsonpath lease/work '{.spec.holderIdentity}' "$ns")" "lease holder"
  wait_jsonpath 10 configmap/work '{.data.writer}' "$who" "$ns"
  if [ "$who" = a ]; then leader_pid=$pa other_out=$d/b; else leader_pid=$pb other_out=$d/a; fi
  local transitions0
  transitions0=$(jsonpath lease/work '{.spec.leaseTransitions}' "$ns")
  kill -9 "$leader_pid"
  t0=$(date +%s.%N)
  wait_for 25 "the other replica leading" grep -q '^LEADING' "$other_out"
  took=$(echo "$(date +%s.%N) - $t0" | bc)
  echo "takeover after ${took}s"
  [ "$(echo "$took < 20" | bc)" = 1 ] || fail "takeover took ${took}s"
  local next
  next=$(sed -n 's/^LEADING //p' "$other_out")
  expect_eq "$next" "$(jsonpath lease/work '{.spec.holderIdentity}' "$ns")" "new holder"
  expect_eq $((${transitions0:-0} + 1)) "$(jsonpath lease/work '{.spec.leaseTransitions}' "$ns")" "transitions"
  wait_jsonpath 10 configmap/work '{.data.writer}' "$next" "$ns"
  # A clean shutdown with --release gives the lease up at once.
  if [ "$next" = a ]; then kill -TERM "$pa"; else kill -TERM "$pb"; fi
  wait_jsonpath 5 lease/work '{.spec.holderIdentity}' "" "$ns"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_frozen_leader_writes_nothing_after_takeover() {
  local ns d pa pb frozen other_out frozen_out n_before
  ns=$(new_namespace inf)
  d=$(mktemp -d)
  kubectl create configmap work -n "$ns" >/dev/null
  "$CHECK" --namespace "$ns" --name work --identity a leader >"$d/a" 2>&1 &
  pa=$!
  "$CHECK" --namespace "$ns" --name work --identity b leader >"$d/b" 2>&1 &
  pb=$!
  trap "kill -9 $pa $pb 2>/dev/null || true" EXIT
  wait_for 20 "a leader" grep -qh '^LEADING' "$d/a" "$d/b"
  if grep -q '^LEADING' "$d/a"; then
    frozen=$pa frozen_out=$d/a other_out=$d/b
  else
    frozen=$pb frozen_out=$d/b other_out=$d/a
  fi
  wait_for 5 "the leader writing" grep -q '^WROTE' "$frozen_out"
  # Freeze the leader (a stalled process or a lost network): it cannot renew.
  kill -STOP "$frozen"
  wait_for 10 "the leader stopped" proc_is "$frozen" T
  n_before=$(grep -c '^WROTE' "$frozen_out")
  wait_for 25 "the other replica leading" grep -q '^LEADING' "$other_out"
  local next
  next=$(sed -n 's/^LEADING //p' "$other_out")
  wait_jsonpath 10 configmap/work '{.data.writer}' "$next" "$ns"
  # It wakes up long after its renew deadline: the fence is shut before any timer runs.
  kill -CONT "$frozen"
  wait_for 10 "the old leader stopping" grep -q '^STOPPED .* fence=-' "$frozen_out"
  # Its last chance to write is gone once the process has exited (leadership lost ends it).
  wait_for 10 "the old leader exiting" exited "$frozen"
  expect_eq "$n_before" "$(grep -c '^WROTE' "$frozen_out")" "writes sent by the old leader after it woke"
  expect_eq "$next" "$(jsonpath configmap/work '{.data.writer}' "$ns")" "writer"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
