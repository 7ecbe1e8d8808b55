#!/usr/bin/env bash
# The Kubernetes client (common/kc_config, kc_http, kc_api) against the real API server:
# writes of every kind, Status errors with the server's message, conflicts retried, many
# calls on one HTTP/2 connection, the QPS limiter, inline TLS data, and a rotated token.
source "$(dirname "$0")/lib.sh"
SUITE=client

CHECK="$KILN_BUILD/tests/e2e/client_check"

# kubeconfig_with FILE USER_YAML: a kubeconfig for the same server and CA with another user.
kubeconfig_with() {
  local server ca
  server=$(kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
  if [ -z "$ca" ]; then
    ca=$(base64 -w0 < "$(kubectl config view --raw --minify \
      -o 'jsonpath={.clusters[0].cluster.certificate-authority}')")
  fi
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
current-context: t
clusters:
- name: c
  cluster:
    server: $server
    certificate-authority-data: $ca
contexts:
- name: t
  context: {cluster: c, user: u}
users:
- name: u
  user:
$2
EOF
}

test_crud_patch_apply_delete() {
  local ns out
  ns=$(new_namespace client)
  out=$("$CHECK" --namespace "$ns" crud 2>&1) || fail "$out"
  # What the program left behind, seen through kubectl.
  expect_eq client-check "$(jsonpath configmap/kept '{.data.from}' "$ns")" "kept configmap"
  # The deleted one is gone for kubectl too.
  kubectl get configmap crud -n "$ns" >/dev/null 2>&1 && fail "crud still exists"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_notfound_maps_to_enotfound_with_server_message() {
  local ns out
  ns=$(new_namespace client)
  out=$("$CHECK" --namespace "$ns" notfound 2>&1) || fail "$out"
  expect_match '^KC_ENOTFOUND: configmaps "does-not-exist" not found' "$out" "first line"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_conflicts_are_retried() {
  local ns out
  ns=$(new_namespace client)
  out=$("$CHECK" --namespace "$ns" --count 5 conflict 2>&1) || fail "$out"
  expect_match 'conflicts retried' "$out"
  # Five increments, each exactly once, whatever the interleaving was.
  local n
  n=$(jsonpath configmap/counter '{.data.n}' "$ns")
  [ $((n % 5)) -eq 0 ] && [ "$n" -ge 5 ] || fail "counter is $n, want a multiple of 5"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_many_calls_share_one_http2_connection() {
  local ns out
  ns=$(new_namespace client)
  out=$("$CHECK" --namespace "$ns" --count 300 multiplex 2>&1) || fail "$out"
  expect_match 'requests=301 http2=301 connections=1 ' "$out"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_watch_streams_and_cancels_on_shared_connection() {
  local ns out
  ns=$(new_namespace client)
  out=$("$CHECK" --namespace "$ns" watch 2>&1) || fail "$out"
  expect_match 'connections=1$' "$(echo "$out" | head -1)"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_qps_limiter_holds_the_rate() {
  local ns out t0 t1
  ns=$(new_namespace client)
  t0=$(date +%s%N)
  out=$("$CHECK" --namespace "$ns" --count 200 --kube-api-qps 50 --kube-api-burst 10 qps 2>&1) \
    || fail "$out"
  t1=$(date +%s%N)
  # 200 calls, 10 from the burst, the other 190 at 50/s: at least 3.8 s.
  local ms=$(((t1 - t0) / 1000000))
  [ "$ms" -ge 3600 ] || fail "200 calls at qps=50 burst=10 took ${ms}ms"
  [ "$ms" -le 8000 ] || fail "200 calls at qps=50 burst=10 took ${ms}ms, far too slow"
  echo "    $out (wall ${ms}ms)"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_inline_client_certificate_data() {
  local dir out
  dir=$(mktemp -d)
  local crt key
  crt=$(kubectl config view --raw --minify -o 'jsonpath={.users[0].user.client-certificate}')
  key=$(kubectl config view --raw --minify -o 'jsonpath={.users[0].user.client-key}')
  [ -n "$crt" ] || fail "the cluster kubeconfig has no client certificate file"
  kubeconfig_with "$dir/kc" "    client-certificate-data: $(base64 -w0 < "$crt")
    client-key-data: $(base64 -w0 < "$key")"
  out=$("$CHECK" --kubeconfig "$dir/kc" --namespace default notfound 2>&1) || fail "$out"
  # A CA that did not sign the server's certificate is refused, never skipped.
  sed -i "s|certificate-authority-data: .*|certificate-authority-data: $(base64 -w0 < "$crt")|" \
    "$dir/kc"
  out=$("$CHECK" --kubeconfig "$dir/kc" --namespace default notfound 2>&1) && fail "untrusted CA accepted"
  expect_match 'KC_ETLS' "$out" "error with an untrusted CA"
  rm -rf "$dir"
}

test_rotated_token_file_is_picked_up() {
  local ns dir token out pid
  ns=$(new_namespace client)
  kubectl create serviceaccount rotator -n "$ns" >/dev/null
  token=$(kubectl create token rotator -n "$ns" --duration=10m)
  dir=$(mktemp -d)
  echo "not-a-valid-token" > "$dir/token"
  kubeconfig_with "$dir/kc" "    tokenFile: $dir/token"
  "$CHECK" --kubeconfig "$dir/kc" --namespace "$ns" --timeout 30 --v 10 token \
    >"$dir/out" 2>&1 &
  pid=$!
  sleep 2
  echo "$token" > "$dir/token.new" && mv "$dir/token.new" "$dir/token"
  wait "$pid" || fail "$(cat "$dir/out")"
  out=$(cat "$dir/out")
  # Authenticated as the service account, which may not read configmaps: 403, not 401.
  expect_match 'after [1-9][0-9]* unauthorized: KC_EFORBIDDEN: .*system:serviceaccount:'"$ns"':rotator' \
    "$out" "outcome"
  # Secrets never reach the log, even at -v=10.
  if grep -qF "$token" "$dir/out" || grep -qF "not-a-valid-token" "$dir/out"; then
    fail "a token appeared in the output"
  fi
  rm -rf "$dir"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

e2e_main "$@"
