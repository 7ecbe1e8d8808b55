#!/usr/bin/env bash
# HyperNodes (topology.volcano.sh/v1alpha1) against the real control plane: the CRD's schema,
# printer columns and Volcano's admission behaviours with its messages; and kiln-controller's
# hyperNode-controller turning node labels into HyperNodes from Volcano's discovery
# configuration (volcano-controller-configmap): 32 kwok nodes labelled as 4 leaves under 2
# spines give 4 tier-1 and 2 tier-2 HyperNodes with the right members and status.nodeCount,
# and a relabel moves a node. kiln-controller runs only the hyperNode-controller, without
# leader election, reading its ConfigMap from this suite's namespace.
# shellcheck shell=bash
SUITE=hypernode
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CTL=$KILN_BUILD/controller/kiln-controller
D=$KILN_CLUSTER_DIR
LOG=$D/logs/kiln-controller-hypernode.log
CM_NS=hn-system
LEAF=hn.example.com/leaf
SPINE=hn.example.com/spine
mkdir -p "$D/logs" "$D/pids"

setup_once() {
  apply_crds || fail "cannot install the CRDs"
  kubectl get ns "$CM_NS" >/dev/null 2>&1 || kubectl create ns "$CM_NS" >/dev/null ||
    fail "cannot create namespace $CM_NS"
}

# hn NAME SPEC-YAML: create a HyperNode (stdout and stderr of kubectl).
hn() {
  kubectl create -f - 2>&1 <<EOF
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: $1}
spec:
$2
EOF
}

# refused NAME SPEC-YAML REGEX: the create is refused with a message matching REGEX.
refused() {
  local out
  if out=$(hn "$1" "$2"); then
    kubectl delete hypernode "$1" >/dev/null 2>&1
    fail "$1 accepted"
  fi
  expect_match "$3" "$out" "$1 refused"
}

test_crd_columns_and_valid_selectors() {
  setup_once
  local out
  out=$(hn hn-exact '  tier: 1
  tierName: leaf
  members: [{type: Node, selector: {exactMatch: {name: node-1}}}]') || fail "exactMatch: $out"
  out=$(hn hn-regex '  tier: 1
  members: [{type: Node, selector: {regexMatch: {pattern: "node-[0-9]+"}}}]') || fail "regexMatch: $out"
  out=$(hn hn-label '  tier: 2
  members: [{type: Node, selector: {labelMatch: {matchLabels: {topology-rack: rack1}}}}]') ||
    fail "labelMatch: $out"
  expect_match '^NAME +TIER +TIERNAME +NODECOUNT +AGE' "$(kubectl get hn hn-exact)" "printer columns"
  expect_match 'hn-exact +1 +leaf ' "$(kubectl get hn hn-exact --no-headers)" "columns of hn-exact"
  # An update to a valid member list goes through; to none, it is refused in Volcano's words.
  out=$(kubectl patch hn hn-exact --type=merge \
    -p '{"spec":{"members":[{"type":"Node","selector":{"regexMatch":{"pattern":"node-[1-5]"}}}]}}' 2>&1) ||
    fail "valid update refused: $out"
  out=$(kubectl patch hn hn-exact --type=json -p '[{"op":"remove","path":"/spec/members"}]' 2>&1) &&
    fail "update without members accepted"
  expect_match 'member must have at least one member' "$out" "update without members"
  kubectl delete hn hn-exact hn-regex hn-label >/dev/null
}

# Volcano's admission behaviours: a member selector with none or several of exactMatch,
# regexMatch and labelMatch; an invalid regular expression; no members. Each in its words.
test_admission_messages() {
  setup_once
  refused bad-none '  tier: 1
  members: [{type: Node, selector: {}}]' 'Either ExactMatch or RegexMatch or LabelMatch must be specified'
  refused bad-both '  tier: 1
  members: [{type: Node, selector: {exactMatch: {name: a}, regexMatch: {pattern: "a.*"}}}]' \
    'Only one of ExactMatch, RegexMatch, or LabelMatch can be specified'
  refused bad-regex '  tier: 1
  members: [{type: Node, selector: {regexMatch: {pattern: "a(b"}}}]' \
    'member regexMatch pattern is invalid: error parsing regexp: missing closing \): `a\(b`'
  refused bad-regex2 '  tier: 1
  members: [{type: Node, selector: {regexMatch: {pattern: "a)b"}}}]' \
    'member regexMatch pattern is invalid: error parsing regexp: unexpected \): `a\)b`'
  refused bad-regex3 '  tier: 1
  members: [{type: Node, selector: {regexMatch: {pattern: "*a"}}}]' \
    'member regexMatch pattern is invalid: error parsing regexp: missing argument to repetition operator: `\*`'
  refused bad-nomembers '  tier: 1' 'member must have at least one member'
  refused bad-empty '  tier: 1
  members: []' 'member must have at least one member|should have at least 1 items'
  refused bad-type '  tier: 1
  members: [{type: Rack, selector: {exactMatch: {name: a}}}]' 'Unsupported value: "Rack"'
  refused bad-name '  tier: 1
  members: [{type: Node, selector: {exactMatch: {name: "Node_with_invalid@characters"}}}]' \
    'spec.members\[0\].selector.exactMatch.name in body should match'
  refused bad-long '  tier: 1
  members: [{type: Node, selector: {exactMatch: {name: "'"$(printf 'a%.0s' $(seq 64))"'"}}}]' \
    'member exactMatch validate failed \[name part must be no more than 63 characters\]'
  refused bad-tier '  tier: -1
  members: [{type: Node, selector: {exactMatch: {name: a}}}]' 'spec.tier in body should be greater than or equal to 0'
}

# ---- discovery ----

start_controller() {
  stop_controller
  KUBE_POD_NAMESPACE=$CM_NS HELM_RELEASE_NAME=volcano "$CTL" --kubeconfig "$KUBECONFIG" \
    --leader-elect=false --controllers=hyperNode-controller -v=3 --healthz-address=127.0.0.1:0 \
    >>"$LOG" 2>&1 </dev/null &
  echo $! >"$D/pids/kiln-controller-hypernode.pid"
  echo "$CTL" >"$D/pids/kiln-controller-hypernode.exe" # tests/cluster/down checks it
}

stop_controller() {
  local f=$D/pids/kiln-controller-hypernode.pid pid
  [ -e "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null
  wait_for 60 "kiln-controller to exit" bash -c "! kill -0 $pid 2>/dev/null"
  rm -f "$f" "${f%.pid}.exe"
}

discovery_config() {
  kubectl apply -f - >/dev/null <<EOF || fail "cannot apply the discovery configuration"
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-controller-configmap, namespace: $CM_NS}
data:
  volcano-controller.conf: |
    networkTopologyDiscovery:
      - source: ufm
        enabled: true
        interval: 10m
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            e2e:
              - nodeLabel: "$SPINE"
              - nodeLabel: "$LEAF"
              - nodeLabel: "kubernetes.io/hostname"
EOF
}

# The label-made HyperNodes as "name tier nodeCount member,member..." lines, by tier then name.
hn_table() {
  kubectl get hn -l volcano.sh/network-topology-source=label -o json |
    jq -r '.items | sort_by(.spec.tier, .metadata.name)[] |
      "\(.metadata.labels["'"$LEAF"'"] // .metadata.labels["'"$SPINE"'"]) \(.spec.tier) \(.status.nodeCount // 0) \([.spec.members[] | .type + ":" + .selector.exactMatch.name] | join(","))"'
}

# The leaf (label value) a HyperNode name stands for, from the table's names.
leaf_members() { # VALUE: the members of the HyperNode labelled LEAF=VALUE
  kubectl get hn -l "volcano.sh/network-topology-source=label,$LEAF=$1" \
    -o jsonpath='{range .items[0].spec.members[*]}{.selector.exactMatch.name}{" "}{end}'
}

count_of() { # VALUE
  kubectl get hn -l "volcano.sh/network-topology-source=label,$LEAF=$1" \
    -o jsonpath='{.items[0].status.nodeCount}'
}

hn_count() {
  kubectl get hn -l volcano.sh/network-topology-source=label --no-headers 2>/dev/null | wc -l
}

settled() { # WANT-HYPERNODES: that many, each with nodeCount = its members
  [ "$(hn_count)" = "$1" ] || return 1
  kubectl get hn -l volcano.sh/network-topology-source=label -o json |
    jq -e '[.items[] | (.status.nodeCount // 0) == (.spec.members | length)] | all' >/dev/null
}

test_label_discovery_and_relabel() {
  setup_once
  group_nodes hn 32
  local i leaf spine
  for i in $(seq 0 31); do
    leaf=leaf$((i / 8)) spine=spine$((i / 16))
    kubectl label node "hn-$i" "$LEAF=$leaf" "$SPINE=$spine" --overwrite >/dev/null ||
      fail "cannot label hn-$i"
  done
  discovery_config
  start_controller
  wait_for 60 "6 HyperNodes with their nodeCount" settled 6
  local t
  t=$(hn_table)
  echo "$t" | sed 's/^/    /' >&2
  # 4 leaves of 8 nodes under tier 1, 2 spines of 2 leaves under tier 2.
  expect_eq "4" "$(awk '$2 == 1 && $3 == 8' <<<"$t" | wc -l | tr -d ' ')" "tier-1 HyperNodes of 8"
  expect_eq "2" "$(awk '$2 == 2 && $3 == 2' <<<"$t" | wc -l | tr -d ' ')" "tier-2 HyperNodes of 2"
  expect_eq "hn-0 hn-1 hn-2 hn-3 hn-4 hn-5 hn-6 hn-7 " "$(leaf_members leaf0 | tr ' ' '\n' | sort -V | tr '\n' ' ')" \
    "members of leaf0"
  local l0 l1 s0
  l0=$(kubectl get hn -l "$LEAF=leaf0" -o jsonpath='{.items[0].metadata.name}')
  l1=$(kubectl get hn -l "$LEAF=leaf1" -o jsonpath='{.items[0].metadata.name}')
  s0=$(kubectl get hn -l "$SPINE=spine0" -o jsonpath='{.items[0].metadata.name}')
  expect_match '^hypernode-e2e-tier1-[bcdfghjklmnpqrstvwxz2456789]{5}$' "$l0" "leaf name"
  expect_eq "$(printf '%s\n' "$l0" "$l1" | sort | tr '\n' ' ')" \
    "$(kubectl get hn "$s0" -o jsonpath='{range .spec.members[*]}{.selector.exactMatch.name}{"\n"}{end}' | sort | tr '\n' ' ')" \
    "members of spine0"
  expect_eq "HyperNode" "$(kubectl get hn "$s0" -o jsonpath='{.spec.members[0].type}')" "spine member type"
  expect_eq "Node" "$(kubectl get hn "$l0" -o jsonpath='{.spec.members[0].type}')" "leaf member type"
  expect_match 'network topology discovery source ufm is not built in Kiln' "$(cat "$LOG")" \
    "the UFM source named"

  # Relabel: hn-0 moves from leaf0 (spine0) to leaf3 (spine1); the same HyperNodes follow.
  kubectl label node hn-0 "$LEAF=leaf3" "$SPINE=spine1" --overwrite >/dev/null || fail "relabel"
  wait_for 60 "leaf0 at 7 and leaf3 at 9" \
    bash -c "[ \"\$(kubectl get hn $l0 -o jsonpath='{.status.nodeCount}')\" = 7 ] &&
             [ \"\$(kubectl get hn -l $LEAF=leaf3 -o jsonpath='{.items[0].status.nodeCount}')\" = 9 ]"
  expect_match '(^| )hn-0 ' "$(leaf_members leaf3)" "hn-0 under leaf3"
  [[ " $(leaf_members leaf0)" != *" hn-0 "* ]] || fail "hn-0 still under leaf0"
  expect_eq "$l0" "$(kubectl get hn -l "$LEAF=leaf0" -o jsonpath='{.items[0].metadata.name}')" \
    "leaf0 kept its name"
  expect_eq 6 "$(hn_count)" "HyperNodes after the relabel"

  # A leaf whose nodes all lose the label goes, and its spine keeps one member.
  for i in $(seq 8 15); do
    kubectl label node "hn-$i" "$LEAF-" >/dev/null || fail "unlabel hn-$i"
  done
  wait_for 60 "5 HyperNodes" settled 5
  [ -z "$(kubectl get hn -l "$LEAF=leaf1" -o name)" ] || fail "leaf1 still there"
  expect_eq 1 "$(kubectl get hn "$s0" -o jsonpath='{.status.nodeCount}')" "spine0 nodeCount"

  # A label-made HyperNode deleted by hand is made again.
  kubectl delete hn "$l0" >/dev/null || fail "cannot delete $l0"
  wait_for 60 "leaf0 made again" bash -c "[ -n \"\$(kubectl get hn -l $LEAF=leaf0 -o name)\" ]"
  wait_for 60 "5 HyperNodes" settled 5
  stop_controller
  kubectl delete hn -l volcano.sh/network-topology-source=label >/dev/null 2>&1
  kubectl delete configmap -n "$CM_NS" volcano-controller-configmap >/dev/null 2>&1
  kubectl delete node -l grp=hn >/dev/null 2>&1 || true
}

finally_stopped() {
  stop_controller
  kubectl delete ns "$CM_NS" --wait=false >/dev/null 2>&1 || true
}

e2e_main "$@"
