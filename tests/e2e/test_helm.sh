#!/usr/bin/env bash
# The Helm chart (manifests/helm/kiln): `helm lint` and `helm template` pass with helm built
# from its Go module (tests/cluster/build), the default values render the same objects as
# `kubectl kustomize manifests/`, and each value changes what it says and nothing else. The
# rendered objects are then checked by the real API server (server-side dry run).
# shellcheck shell=bash
SUITE=helm
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHART=$KILN_ROOT/manifests/helm/kiln
D=$KILN_CLUSTER_DIR
HELM=${KILN_BIN:-$HOME/.cache/kiln/bin}/helm

# objects FILE: the documents of a rendered stream as one JSON object keyed by
# "apiVersion/kind/namespace/name". The chart's one deliberate difference, Volcano's
# helm.sh/resource-policy: keep on CRDs (and on the default Queue), is taken out (and checked)
# here.
objects() {
  python3 - "$1" <<'EOF'
import json, sys, yaml
out = {}
for d in yaml.load_all(open(sys.argv[1]), Loader=yaml.CSafeLoader):
    if not d:
        continue
    m = d.get("metadata", {})
    if d["kind"] in ("CustomResourceDefinition", "Queue"):
        ann = m.get("annotations") or {}
        if ann.pop("helm.sh/resource-policy", None) not in (None, "keep"):
            sys.exit("bad resource-policy on " + m["name"])
        if not ann:
            m.pop("annotations", None)
    key = "/".join([d["apiVersion"], d["kind"], m.get("namespace", ""), m["name"]])
    if key in out:
        sys.exit("duplicate object " + key)
    out[key] = d
json.dump(out, sys.stdout, sort_keys=True)
EOF
}

render() { # OUT ARGS...: helm template into OUT
  local out=$1
  shift
  "$HELM" template kiln "$CHART" "$@" >"$out" 2>"$out.err" || fail "helm template $*: $(cat "$out.err")"
}

test_helm_lint() {
  [ -x "$HELM" ] || fail "no helm at $HELM: run tests/cluster/build"
  local out
  out=$("$HELM" lint --strict "$CHART" 2>&1) || fail "helm lint: $out"
  expect_match '1 chart\(s\) linted, 0 chart\(s\) failed' "$out" "lint"
}

test_defaults_render_the_kustomization() {
  render "$D/helm-default.yaml"
  kubectl kustomize "$KILN_ROOT/manifests" >"$D/kustomize.yaml" || fail "kubectl kustomize failed"
  objects "$D/helm-default.yaml" >"$D/helm-default.json" || fail "chart output unreadable"
  objects "$D/kustomize.yaml" >"$D/kustomize.json" || fail "kustomize output unreadable"
  python3 - "$D/kustomize.json" "$D/helm-default.json" <<'EOF' || fail "the chart and the kustomization differ"
import json, sys
k, h = (json.load(open(p)) for p in sys.argv[1:])
bad = sorted(set(k) ^ set(h)) + [n for n in sorted(set(k) & set(h)) if k[n] != h[n]]
for n in bad:
    print("    differs:", n, file=sys.stderr)
if len(k) < 10:
    sys.exit("only %d objects" % len(k))
print("    %d objects equal" % len(k), file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
  grep -q 'helm.sh/resource-policy: keep' "$D/helm-default.yaml" || fail "CRDs lack resource-policy keep"
}

test_values_change_what_they_say() {
  printf 'actions: "enqueue, allocate"\n' >"$D/helm-sched.conf"
  render "$D/helm-default.yaml"
  objects "$D/helm-default.yaml" >"$D/helm-default.json" || fail "chart output unreadable"
  render "$D/helm-set.yaml" --set controller.replicas=2 --set scheduler.kubeApiQps=500 \
    --set scheduler.kubeApiBurst=600 --set controller.leaderElect=false \
    --set image.repository=registry.local/kiln --set image.tag=v9 \
    --set scheduler.resources.requests.cpu=1 --set scheduler.logLevel=2 \
    --set 'controller.extraArgs={--worker-threads=10}' \
    --set-file scheduler.config="$D/helm-sched.conf"
  objects "$D/helm-set.yaml" >"$D/helm-set.json" || fail "chart output unreadable"
  python3 - "$D/helm-default.json" "$D/helm-set.json" <<'EOF' || fail "values did not apply as expected"
import json, sys
base, got = (json.load(open(p)) for p in sys.argv[1:])
ctl = got["apps/v1/Deployment/kiln-system/kiln-controller"]
sch = got["apps/v1/Deployment/kiln-system/kiln-scheduler"]
cm = got["v1/ConfigMap/kiln-system/kiln-scheduler-configmap"]
c, s = ctl["spec"]["template"]["spec"]["containers"][0], sch["spec"]["template"]["spec"]["containers"][0]
checks = [
    (ctl["spec"]["replicas"] == 2, "controller replicas"),
    (sch["spec"]["replicas"] == 1, "scheduler replicas unchanged"),
    ("--kube-api-qps=500" in s["args"] and "--kube-api-burst=600" in s["args"], "scheduler qps/burst"),
    ("--kube-api-qps=50" in c["args"], "controller qps unchanged"),
    ("--leader-elect=false" in c["args"] and "--leader-elect=true" not in c["args"], "leader election off"),
    ("--leader-elect=true" in s["args"], "scheduler election unchanged"),
    ("-v=2" in s["args"], "log level"),
    (c["args"][-1] == "--worker-threads=10", "extra args"),
    (c["image"] == s["image"] == "registry.local/kiln:v9", "image"),
    (s["resources"] == {"requests": {"cpu": 1}}, "scheduler resources"),
    (cm["data"]["volcano-scheduler.conf"] == 'actions: "enqueue, allocate"\n', "scheduler config"),
    (len(c["args"]) == len(base["apps/v1/Deployment/kiln-system/kiln-controller"]["spec"]["template"]["spec"]["containers"][0]["args"]) + 1, "no flag duplicated"),
]
for ok, what in checks:
    if not ok:
        print("    wrong:", what, file=sys.stderr)
# Nothing else moved.
changed = sorted(k for k in base if base[k] != got.get(k))
want = sorted(["apps/v1/Deployment/kiln-system/kiln-controller",
               "apps/v1/Deployment/kiln-system/kiln-scheduler",
               "v1/ConfigMap/kiln-system/kiln-scheduler-configmap"])
if changed != want:
    print("    changed:", changed, file=sys.stderr)
sys.exit(0 if all(ok for ok, _ in checks) and changed == want else 1)
EOF
}

# networkPolicy: enabled=false leaves kiln-ingress out and nothing else; metricsFrom replaces
# the scraper; probesFrom adds a health-port rule; nothing else moves.
test_network_policy_values() {
  render "$D/helm-default.yaml"
  objects "$D/helm-default.yaml" >"$D/helm-default.json" || fail "chart output unreadable"
  render "$D/helm-np-off.yaml" --set networkPolicy.enabled=false
  objects "$D/helm-np-off.yaml" >"$D/helm-np-off.json" || fail "chart output unreadable"
  render "$D/helm-np-set.yaml" \
    --set 'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=obs' \
    --set 'networkPolicy.probesFrom[0].ipBlock.cidr=10.0.0.0/16'
  objects "$D/helm-np-set.yaml" >"$D/helm-np-set.json" || fail "chart output unreadable"
  python3 - "$D/helm-default.json" "$D/helm-np-off.json" "$D/helm-np-set.json" <<'EOF' ||
import json, sys
base, off, got = (json.load(open(p)) for p in sys.argv[1:])
key = "networking.k8s.io/v1/NetworkPolicy/kiln-system/kiln-ingress"
ok = True
if key not in base or set(base) - set(off) != {key} or set(off) - set(base):
    print("    enabled=false must remove only", key, file=sys.stderr)
    ok = False
ing = got[key]["spec"]["ingress"]
want = [{"from": [{"namespaceSelector": {"matchLabels": {"team": "obs"}}}],
         "ports": [{"port": "metrics", "protocol": "TCP"}]},
        {"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}],
         "ports": [{"port": "healthz", "protocol": "TCP"}]}]
if ing != want:
    print("    ingress:", json.dumps(ing), file=sys.stderr)
    ok = False
changed = sorted(k for k in base if base[k] != got.get(k))
if changed != [key]:
    print("    changed:", changed, file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
EOF
    fail "networkPolicy values did not apply as expected"
}

test_rendered_objects_pass_the_api_server() {
  # The API server validates every rendered object (server-side dry run), the namespaced ones
  # moved into a throwaway namespace so that no suite after this one finds a kiln-system.
  local ns out
  ns=$(new_namespace helm)
  # The CRDs for real (as every suite installs them), so the default Queue can be checked too.
  kubectl apply --server-side -f "$KILN_ROOT/manifests/crd/" >/dev/null || fail "cannot install the CRDs"
  # A CRD just created may have no conditions yet, which `kubectl wait` rejects: poll.
  wait_for 60 "the Queue CRD" kubectl wait --for=condition=Established --timeout=5s \
    crd/queues.scheduling.volcano.sh
  render "$D/helm-dry.yaml" --set controller.replicas=2 --set scheduler.kubeApiQps=500 \
    --set 'networkPolicy.probesFrom[0].ipBlock.cidr=10.0.0.0/16'
  python3 - "$D/helm-dry.yaml" "$ns" >"$D/helm-dry-ns.yaml" <<'EOF2' || fail "cannot rewrite the namespace"
import sys, yaml
docs = [d for d in yaml.load_all(open(sys.argv[1]), Loader=yaml.CSafeLoader) if d and d["kind"] != "Namespace"]
for d in docs:
    if d["metadata"].get("namespace") == "kiln-system":
        d["metadata"]["namespace"] = sys.argv[2]
    for sub in d.get("subjects", []):
        if sub.get("namespace") == "kiln-system":
            sub["namespace"] = sys.argv[2]
yaml.dump_all(docs, sys.stdout, Dumper=yaml.CSafeDumper)
EOF2
  out=$(kubectl apply --server-side --dry-run=server --force-conflicts -f "$D/helm-dry-ns.yaml" 2>&1) ||
    fail "the API server refused the rendered chart: $out"
  expect_match 'deployment.apps/kiln-scheduler serverside-applied \(server dry run\)' "$out" "dry run"
  expect_match 'customresourcedefinition.apiextensions.k8s.io/jobs.batch.volcano.sh serverside-applied' "$out" "CRDs"
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

e2e_main "$@"
