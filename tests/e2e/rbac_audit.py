#!/usr/bin/env python3
"""Least privilege, proved from the API server's audit log (issue 27).

  rbac_audit.py AUDIT_LOG MANIFEST.yaml...

The manifests name ServiceAccounts, (Cluster)Roles and their bindings. For every ServiceAccount
bound there, the audit log's requests by system:serviceaccount:NS:NAME are matched against
the rules it is granted:

- every request refused with 403 fails the check (a call the process makes that is not
  granted), except the namespace lifecycle's "because it is being terminated", which is no
  RBAC answer;
- every granted (apiGroup, resource, verb, resourceName) that no request used fails the check
  (a grant the process does not need), except the `*/finalizers` subresources: those are never
  requested, the OwnerReferencesPermissionEnforcement admission plugin checks them when an
  object with blockOwnerDeletion is created, so a missing one shows as a refused create;
  and the few grants in CONDITIONAL, used only when the cluster lacks something.

Prints one REPORT line per (user, verb, resource) with its count, then the failures; exits 1
on any failure.
"""
import collections
import json
import sys

import yaml

EXEMPT_SUBRESOURCES = {"finalizers"}
# Grants a process uses only when the cluster lacks something, which a shared test cluster
# may already have: reported when unused, not failed. kiln-scheduler creates the default
# and root queues when they are missing (a fresh cluster: the install suite run on its own
# uses it; after other suites they exist).
CONDITIONAL = {("kiln-scheduler", "create", "scheduling.volcano.sh", "queues"):
               "creates the default and root queues only when they are missing",
               ("kiln-scheduler", "patch", "", "pods"):
               "writes device assignments only with the deviceshare plugin configured",
               ("kiln-scheduler", "patch", "", "nodes"):
               "writes the node lock only with deviceshare.NodeLockEnable",
               # The install suite's scheduler runs Volcano's default configuration, where
               # predicate.DynamicResourceAllocationEnable is off; tests/e2e/test_dra.sh writes
               # claims (with the admin's credentials).
               ("kiln-scheduler", "patch", "resource.k8s.io", "resourceclaims/status"):
               "writes a claim's allocation only when it binds a pod with ResourceClaims",
               # tests/e2e/test_volumes.sh binds WaitForFirstConsumer claims; other suites'
               # claims are bound by kube-controller-manager before their pods are scheduled.
               ("kiln-scheduler", "patch", "", "persistentvolumes"):
               "binds a volume to a claim only for a WaitForFirstConsumer claim",
               ("kiln-scheduler", "patch", "", "persistentvolumeclaims"):
               "selects a node only for a claim a provisioner makes the volume of"}


def load_manifests(paths):
    docs = []
    for p in paths:
        with open(p) as fh:
            docs += [d for d in yaml.safe_load_all(fh) if d]
    return docs


def grants_by_user(docs):
    """{user: [(scope, rule)]}: scope is None for a ClusterRole bound cluster-wide, else the
    namespace of the Role or RoleBinding."""
    roles = {}
    for d in docs:
        if d.get("kind") in ("ClusterRole", "Role"):
            ns = d["metadata"].get("namespace") if d["kind"] == "Role" else None
            roles[(d["kind"], ns, d["metadata"]["name"])] = d.get("rules") or []
    grants = collections.defaultdict(list)
    for d in docs:
        kind = d.get("kind")
        if kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        bns = d["metadata"].get("namespace") if kind == "RoleBinding" else None
        ref = d["roleRef"]
        rns = bns if ref["kind"] == "Role" else None
        rules = roles.get((ref["kind"], rns, ref["name"]))
        if rules is None:
            raise SystemExit(f"{kind} {d['metadata']['name']} refers to a missing {ref['kind']} {ref['name']}")
        for s in d.get("subjects") or []:
            if s.get("kind") != "ServiceAccount":
                continue
            user = f"system:serviceaccount:{s.get('namespace') or bns}:{s['name']}"
            for r in rules:
                grants[user].append((bns, r))
    return grants


def expand(scope, rule):
    """The (scope, group, resource, verb, resourceName) cells one rule grants."""
    names = rule.get("resourceNames") or [None]
    for g in rule.get("apiGroups") or [""]:
        for res in rule.get("resources") or []:
            for v in rule.get("verbs") or []:
                for n in names:
                    yield (scope, g, res, v, n)


def read_audit(path, users):
    events = collections.defaultdict(list)
    seen = set()
    with open(path, errors="replace") as fh:
        for line in fh:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            user = (e.get("user") or {}).get("username")
            # A watch is still open when the log is read: its ResponseStarted event is all there
            # is of it. Each request once, by its audit ID.
            if user not in users or e.get("stage") not in ("ResponseStarted", "ResponseComplete", "Panic"):
                continue
            if e.get("auditID") in seen and e.get("stage") != "ResponseComplete":
                continue
            seen.add(e.get("auditID"))
            o = e.get("objectRef") or {}
            res = o.get("resource", "")
            if o.get("subresource"):
                res += "/" + o["subresource"]
            st = e.get("responseStatus") or {}
            events[user].append({
                "group": o.get("apiGroup", ""), "resource": res, "verb": e.get("verb"),
                "name": o.get("name"), "namespace": o.get("namespace"),
                "code": st.get("code"), "message": st.get("message", ""),
                "uri": e.get("requestURI", "")})
    return events


def covers(cell, ev):
    scope, g, res, v, n = cell
    if g not in ("*", ev["group"]) or res not in ("*", ev["resource"]) or v not in ("*", ev["verb"]):
        return False
    if scope is not None and ev["namespace"] != scope:
        return False
    return n is None or ev["name"] == n


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    grants = grants_by_user(load_manifests(argv[2:]))
    if not grants:
        print("no ServiceAccount is bound in the manifests given")
        return 1
    events = read_audit(argv[1], set(grants))
    failures = []
    for user in sorted(grants):
        evs = events.get(user, [])
        if not evs:
            failures.append(f"{user}: no request in the audit log (did it run under its ServiceAccount?)")
            continue
        counts = collections.Counter((e["verb"], (e["group"] + "/" if e["group"] else "") + e["resource"])
                                     for e in evs)
        for (verb, res), c in sorted(counts.items(), key=lambda x: (x[0][1], x[0][0])):
            print(f"REPORT {user.rsplit(':', 1)[1]} {verb} {res} {c}")
        for e in evs:
            if e["code"] == 403 and "being terminated" not in e["message"]:
                failures.append(f"{user}: refused 403: {e['verb']} {e['uri']}: {e['message'][:160]}")
        cells = set()
        for scope, rule in grants[user]:
            cells.update(expand(scope, rule))
        for cell in sorted(cells, key=lambda c: tuple(str(x) for x in c)):
            scope, g, res, v, n = cell
            if res.split("/")[-1] in EXEMPT_SUBRESOURCES and "/" in res:
                continue
            if not any(covers(cell, e) for e in evs):
                why = CONDITIONAL.get((user.rsplit(":", 1)[1], v, g, res))
                if why:
                    print(f"REPORT {user.rsplit(':', 1)[1]} {v} {g}/{res}: not used this run ({why})")
                    continue
                where = f" in namespace {scope}" if scope else ""
                name = f" named {n}" if n else ""
                failures.append(f"{user}: granted but never used: {v} {g + '/' if g else ''}{res}{name}{where}")
    for f in failures:
        print("FAIL " + f)
    print(f"rbac: {sum(len(v) for v in events.values())} requests of {len(grants)} ServiceAccounts, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
