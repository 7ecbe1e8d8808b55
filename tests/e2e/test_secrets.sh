#!/usr/bin/env bash
# No secret in the logs: kiln-controller and kiln-scheduler run at -v=10 against the real API
# server with each kind of credential a kubeconfig can give (a bearer token, a client
# certificate and key, an exec credential plugin), do real work (a Job runs end to end), and
# their logs are searched for the actual secret values used.
source "$(dirname "$0")/lib.sh"
SUITE=secrets

CTL_BIN=$KILN_BUILD/controller/kiln-controller
SCH_BIN=$KILN_BUILD/scheduler/kiln-scheduler
WORK=$KILN_CLUSTER_DIR/secrets
PKI=$KILN_CLUSTER_DIR/pki

setup() {
  mkdir -p "$WORK" "$KILN_CLUSTER_DIR/logs" "$KILN_CLUSTER_DIR/pids" || return 1
  kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null || return 1
  kubectl wait --for=condition=Established --timeout=60s crd --all >/dev/null || return 1
  kubectl apply --server-side -f "$KILN_ROOT/manifests/queue-default.yaml" >/dev/null || return 1
  kubectl get namespace volcano-system >/dev/null 2>&1 ||
    kubectl create namespace volcano-system >/dev/null || return 1
  kubectl get namespace kiln-secrets >/dev/null 2>&1 ||
    kubectl create namespace kiln-secrets >/dev/null || return 1
  local sa
  for sa in token exec; do
    kubectl create serviceaccount "kiln-$sa" -n kiln-secrets >/dev/null 2>&1
    kubectl create clusterrolebinding "kiln-secrets-$sa" --clusterrole=cluster-admin \
      --serviceaccount="kiln-secrets:kiln-$sa" >/dev/null 2>&1
  done
  return 0
}

# start NAME BIN KUBECONFIG ARGS...: one Kiln process at -v=10, logging to NAME.log, its
# health server on a port the kernel picks (served_port).
start() {
  local name=$1 bin=$2 kc=$3
  shift 3
  "$bin" --kubeconfig "$kc" -v=10 --leader-elect=false --enable-healthz \
    --healthz-address 127.0.0.1:0 "$@" >"$WORK/$name.log" 2>&1 </dev/null &
  echo $! >"$KILN_CLUSTER_DIR/pids/kiln-$name.pid"
  echo "$bin" >"$KILN_CLUSTER_DIR/pids/kiln-$name.exe"
}

stop() { # NAME
  local f=$KILN_CLUSTER_DIR/pids/kiln-$1.pid pid
  pid=$(cat "$f" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f" "${f%.pid}.exe"
}

ready() { curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1; }

# run_both TAG KUBECONFIG: the controller and the scheduler with this credential carry a
# Job to Running, then stop.
run_both() {
  local tag=$1 kc=$2 job="job-$1"
  start "secrets-ctl-$tag" "$CTL_BIN" "$kc"
  start "secrets-sch-$tag" "$SCH_BIN" "$kc"
  wait_for 60 "controller ready ($tag)" ready "$(served_port "$WORK/secrets-ctl-$tag.log" healthz)"
  wait_for 60 "scheduler ready ($tag)" ready "$(served_port "$WORK/secrets-sch-$tag.log" healthz)"
  kubectl apply -n kiln-secrets -f - >/dev/null <<EOF || fail "cannot submit $job"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $job}
spec:
  schedulerName: volcano
  minAvailable: 2
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox}]
EOF
  wait_jsonpath 90 "vcjob/$job" '{.status.state.phase}' Running kiln-secrets
  stop "secrets-ctl-$tag"
  stop "secrets-sch-$tag"
  kubectl delete vcjob -n kiln-secrets "$job" --wait=false >/dev/null 2>&1 || true
}

# expect_absent WHAT SECRET...: no log of this suite contains any of the strings.
expect_absent() {
  local what=$1 s
  shift
  for s in "$@"; do
    [ ${#s} -ge 16 ] || fail "$what: a secret fragment of ${#s} characters proves nothing"
    if grep -rlF -- "$s" "$WORK"/*.log; then
      fail "$what appears in the log(s) above"
    fi
  done
}

# Lines of base64 at least 32 characters long, and 32-character pieces of one long line.
pieces() {
  local line
  while read -r line; do
    [ ${#line} -ge 32 ] || continue
    local i
    for ((i = 0; i + 32 <= ${#line}; i += 32)); do echo "${line:i:32}"; done
  done
}

test_no_secret_at_v10() {
  # A bearer token of a service account.
  local tok
  tok=$(kubectl create token kiln-token -n kiln-secrets --duration=15m) || fail "no token"
  kubeconfig_with "$WORK/kc-token" "    token: $tok"
  # A client certificate and key made for this test (system:masters), inline.
  openssl req -new -newkey rsa:2048 -nodes -keyout "$WORK/client.key" -out "$WORK/client.csr" \
    -subj "/O=system:masters/CN=kiln-secrets" 2>/dev/null || fail "openssl req"
  openssl x509 -req -in "$WORK/client.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -out "$WORK/client.crt" -days 1 2>/dev/null || fail "openssl x509"
  local keydata
  keydata=$(base64 -w0 <"$WORK/client.key")
  kubeconfig_with "$WORK/kc-cert" "    client-certificate-data: $(base64 -w0 <"$WORK/client.crt")
    client-key-data: $keydata"
  # An exec credential plugin handing out another service account's token.
  local etok
  etok=$(kubectl create token kiln-exec -n kiln-secrets --duration=15m) || fail "no token"
  printf '%s' "$etok" >"$WORK/exec-token"
  cat >"$WORK/plugin" <<'PLUGIN'
#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' \
  "$(cat "$(dirname "$0")/exec-token")"
PLUGIN
  chmod +x "$WORK/plugin"
  kubeconfig_with "$WORK/kc-exec" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin
      interactiveMode: Never"

  run_both token "$WORK/kc-token"
  run_both cert "$WORK/kc-cert"
  run_both exec "$WORK/kc-exec"

  # The logs are the verbose ones and saw the work: otherwise finding nothing proves nothing.
  local f
  for f in "$WORK"/secrets-*.log; do
    [ "$(wc -l <"$f")" -gt 20 ] || fail "$f has too little in it to be a -v=10 log"
  done
  grep -q 'exec: new credential' "$WORK/secrets-ctl-exec.log" ||
    fail "the controller's log does not show the exec plugin's credential being used"

  expect_absent "the bearer token" "$tok" "${tok##*.}"
  expect_absent "the exec credential's token" "$etok" "${etok##*.}"
  local key_lines key_pieces
  mapfile -t key_lines < <(grep -v -- '-----' "$WORK/client.key" | pieces)
  [ ${#key_lines[@]} -gt 10 ] || fail "the key has too few lines to search for"
  expect_absent "the client key" "${key_lines[@]}"
  mapfile -t key_pieces < <(echo "$keydata" | pieces)
  expect_absent "the kubeconfig's client-key-data" "${key_pieces[@]}"
  # The search itself works: the same pieces are found where they are.
  grep -qF -- "${key_pieces[3]}" "$WORK/kc-cert" || fail "the search misses a piece that is there"
  grep -qF -- "${tok##*.}" "$WORK/kc-token" || fail "the search misses the token that is there"
}

setup || {
  echo "FAIL secrets/setup: cannot install the CRDs or the namespace"
  exit 1
}
e2e_main "$@"
rc=$?
kubectl delete namespace kiln-secrets --wait=false >/dev/null 2>&1 || true
kubectl delete clusterrolebinding kiln-secrets-token kiln-secrets-exec >/dev/null 2>&1 || true
rm -rf "$WORK"
exit $rc
