#!/usr/bin/env bash
# The Kubernetes client (common/kc_config, kc_http, kc_api) against the real API server:
# writes of every kind, Status errors with the server's message, conflicts retried, many
# calls on one HTTP/2 connection, the QPS limiter, inline TLS data, a rotated token, exec
# credential plugins, tls-server-name, and a KUBECONFIG list of several files.
source "$(dirname "$0")/lib.sh"
SUITE=client

CHECK="$KILN_BUILD/tests/e2e/client_check"

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
  # Each request refused with 401 is retried once with the file read again; a second request
  # retrying shows the first one ended refused, so the rotation below comes after a refusal.
  wait_for 30 "a request refused with the bogus token" \
    bash -c "[ \$(grep -c ': 401, retrying once with a re-read token' '$dir/out') -ge 2 ]"
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

# admin_user: the cluster kubeconfig's client certificate as inline user lines.
admin_user() {
  local crt key
  crt=$(kubectl config view --raw --minify -o 'jsonpath={.users[0].user.client-certificate}')
  key=$(kubectl config view --raw --minify -o 'jsonpath={.users[0].user.client-key}')
  [ -n "$crt" ] || fail "the cluster kubeconfig has no client certificate file"
  printf '    client-certificate-data: %s\n    client-key-data: %s' \
    "$(base64 -w0 < "$crt")" "$(base64 -w0 < "$key")"
}

# exec_user COMMAND [EXTRA]: user lines running COMMAND as a v1 credential plugin.
exec_user() {
  printf '    exec:\n      apiVersion: client.authentication.k8s.io/v1\n'
  printf '      command: %s\n      interactiveMode: Never\n%s' "$1" "${2:-}"
}

test_exec_plugin_gives_a_service_account_token() {
  local ns dir out token
  ns=$(new_namespace client)
  kubectl create serviceaccount plugin -n "$ns" >/dev/null
  kubectl create role configmaps --verb='*' --resource=configmaps -n "$ns" >/dev/null
  kubectl create rolebinding plugin-configmaps --role=configmaps \
    --serviceaccount="$ns:plugin" -n "$ns" >/dev/null
  dir=$(mktemp -d)
  token=$(kubectl create token plugin -n "$ns" --duration=10m)
  echo "$token" > "$dir/token"
  # The plugin counts its runs and keeps what it was given, for the checks below.
  cat > "$dir/plugin" <<'PLUGIN'
#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$d/info"
printf '%s' "$PLUGIN_ENV" > "$d/env"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "$(cat "$d/token")" "$(date -u -d '+10 min' +%Y-%m-%dT%H:%M:%SZ)"
PLUGIN
  chmod +x "$dir/plugin"
  # A relative command resolves against the kubeconfig's directory.
  kubeconfig_with "$dir/kc" "$(exec_user ./plugin "      args: [get-token, --ns, $ns]
      env: [{name: PLUGIN_ENV, value: from-kubeconfig}]")"
  out=$("$CHECK" --kubeconfig "$dir/kc" --namespace "$ns" --v 10 crud 2>&1) || fail "$out"
  expect_eq client-check "$(jsonpath configmap/kept '{.data.from}' "$ns")" "kept configmap"
  # Every call of the scenario used one run's token (cached until it expires in 10 min).
  expect_eq "get-token --ns $ns" "$(cat "$dir/runs")" "plugin runs"
  expect_eq from-kubeconfig "$(cat "$dir/env")" "env from the kubeconfig"
  expect_eq '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}' \
    "$(cat "$dir/info")" "KUBERNETES_EXEC_INFO"
  if grep -qF "$token" <<<"$out"; then fail "the token appeared in the output"; fi
  # The server sees the service account: outside its namespace it may not read.
  out=$("$CHECK" --kubeconfig "$dir/kc" --namespace default get 2>&1) || fail "$out"
  expect_match "^KC_EFORBIDDEN 403: .*system:serviceaccount:$ns:plugin" "$out" "identity"
  # A refused token (401) runs the plugin again, once, and the call is retried with its
  # answer: here the same bad token, so the call ends Unauthorized after two runs.
  : > "$dir/runs"
  echo "not-a-token" > "$dir/token"
  out=$("$CHECK" --kubeconfig "$dir/kc" --namespace "$ns" get 2>&1) || fail "$out"
  expect_match '^KC_EUNAUTHORIZED 401' "$out" "bad token"
  expect_eq 2 "$(wc -l < "$dir/runs")" "plugin runs for a call refused with 401"
  rm -rf "$dir"
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

test_exec_plugin_gives_a_client_certificate() {
  local dir out crt key
  dir=$(mktemp -d)
  crt=$(kubectl config view --raw --minify -o 'jsonpath={.users[0].user.client-certificate}')
  key=$(kubectl config view --raw --minify -o 'jsonpath={.users[0].user.client-key}')
  # PEM text in JSON strings (newlines escaped), not base64 as in a kubeconfig.
  cat > "$dir/plugin" <<PLUGIN
#!/bin/sh
pem() { awk '{printf "%s\\\\n", \$0}' "\$1"; }
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"%s","clientKeyData":"%s"}}\n' \
  "\$(pem $crt)" "\$(pem $key)"
PLUGIN
  chmod +x "$dir/plugin"
  kubeconfig_with "$dir/kc" "    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: $dir/plugin"
  out=$("$CHECK" --kubeconfig "$dir/kc" --namespace default notfound 2>&1) || fail "$out"
  rm -rf "$dir"
}

test_exec_plugin_errors_are_clear() {
  local dir out t0
  dir=$(mktemp -d)
  # Not installed: the kubeconfig's installHint is part of the error.
  kubeconfig_with "$dir/kc" "$(exec_user kiln-no-such-plugin "      installHint: |
        kiln-no-such-plugin is installed with the moon-cli package")"
  out=$("$CHECK" --kubeconfig "$dir/kc" get 2>&1) && fail "a missing plugin worked: $out"
  expect_match 'exec: executable kiln-no-such-plugin not found' "$out" "missing plugin"
  expect_match 'installed with the moon-cli package' "$out" "install hint"
  # Output that is no ExecCredential.
  printf '#!/bin/sh\necho "{\\"kind\\": \\"Nope\\"}"\n' > "$dir/bad"
  chmod +x "$dir/bad"
  kubeconfig_with "$dir/kc" "$(exec_user "$dir/bad")"
  out=$("$CHECK" --kubeconfig "$dir/kc" get 2>&1) && fail "bad output worked: $out"
  expect_match 'decoding stdout: kind is "Nope", want ExecCredential' "$out" "bad output"
  # A plugin that hangs is killed at the timeout, with a message saying so.
  printf '#!/bin/sh\nsleep 60\n' > "$dir/hang"
  chmod +x "$dir/hang"
  kubeconfig_with "$dir/kc" "$(exec_user "$dir/hang")"
  t0=$SECONDS
  out=$("$CHECK" --kubeconfig "$dir/kc" --exec-timeout 1 get 2>&1) && fail "a hung plugin worked"
  expect_match 'did not finish within 1.0 s and was killed' "$out" "hung plugin"
  [ $((SECONDS - t0)) -le 10 ] || fail "a 1 s plugin timeout took $((SECONDS - t0)) s"
  # interactiveMode Always cannot be honoured without a terminal: refused at load.
  kubeconfig_with "$dir/kc" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $dir/hang
      interactiveMode: Always"
  out=$("$CHECK" --kubeconfig "$dir/kc" get 2>&1) && fail "interactiveMode Always accepted"
  expect_match 'users\[0\]\.user\.exec\.interactiveMode: Always needs a terminal' "$out"
  rm -rf "$dir"
}

test_tls_server_name_verifies_another_name() {
  local dir out server name
  dir=$(mktemp -d)
  server=$(kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}')
  expect_match '^https://127\.0\.0\.1:[0-9]+$' "$server" "cluster server"
  kubeconfig_with "$dir/kc" "$(admin_user)"
  # Names in the serving certificate (tests/cluster/up) that do not resolve here: the
  # connection still goes to 127.0.0.1, the name is only used for SNI and verification.
  for name in kubernetes.default kubernetes.default.svc.cluster.local localhost; do
    sed "s|^    server: .*|&\n    tls-server-name: $name|" "$dir/kc" > "$dir/kc-$name"
    out=$("$CHECK" --kubeconfig "$dir/kc-$name" --namespace default notfound 2>&1) \
      || fail "tls-server-name $name: $out"
  done
  # A name the certificate does not carry fails verification, with curl's reason.
  sed "s|^    server: .*|&\n    tls-server-name: wrong.example.com|" "$dir/kc" > "$dir/kc-wrong"
  out=$("$CHECK" --kubeconfig "$dir/kc-wrong" get 2>&1) && fail "a wrong tls-server-name verified"
  expect_match 'KC_ETLS 0: .*wrong\.example\.com' "$out" "wrong tls-server-name"
  echo "    $(head -1 <<<"$out")"
  rm -rf "$dir"
}

test_kubeconfig_list_is_merged() {
  local dir out
  dir=$(mktemp -d)
  # b: cluster c and user u (and its own context t); a: only the context used, naming them.
  kubeconfig_with "$dir/b" "$(admin_user)"
  printf 'apiVersion: v1\nkind: Config\ncurrent-context: merged\ncontexts:\n' > "$dir/a"
  printf -- '- name: merged\n  context: {cluster: c, user: u}\n' >> "$dir/a"
  out=$(KUBECONFIG="$dir/missing::$dir/a:$dir/b" "$CHECK" --namespace default notfound 2>&1) \
    || fail "merged KUBECONFIG: $out"
  # Alone, a has no cluster c: proof the list was merged, not just the first file used.
  out=$(KUBECONFIG="$dir/a" "$CHECK" --namespace default notfound 2>&1) && fail "a alone worked"
  expect_match "kubeconfig $dir/a: clusters: missing" "$out" "a alone"
  # A broken file in the list is an error naming it.
  echo "clusters: [" > "$dir/broken"
  out=$(KUBECONFIG="$dir/a:$dir/broken:$dir/b" "$CHECK" --namespace default notfound 2>&1) \
    && fail "a broken file was ignored"
  expect_match "kubeconfig $dir/broken: line 2" "$out" "broken file"
  rm -rf "$dir"
}

e2e_main "$@"
