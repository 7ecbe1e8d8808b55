#!/usr/bin/env python3
"""Invariants of tests/e2e/test_faults.sh, read from the API server's audit log (Metadata
level, ResponseComplete events), never from Kiln's own logs.

    faults_audit.py pods LOGDIR NS
        "PODS CREATES TWICE BOUND BOUND_TWICE": distinct pods created (2xx) in NS, creates,
        pods created more than once, pods bound, pods bound more than once.
    faults_audit.py throttled LOGDIR USER
        "REQUESTS 429S WRITES": requests by USER, how many got 429, successful writes.
    faults_audit.py lease LOGDIR OLD NEW LEASE_NS LEASE_NAME [SINCE]
        "TAKEOVER OLD_BEFORE OLD_AFTER NEW_AFTER" then the old user's offending requests:
        TAKEOVER is when the first successful write of NEW to the Lease received at or after
        SINCE (RFC 3339 UTC, microseconds; default: ever) was received (the new leader taking
        it); OLD_BEFORE counts OLD's successful writes (Lease excluded) received
        before it, OLD_AFTER every write OLD sent after it (whatever the answer), NEW_AFTER
        NEW's successful writes after it.
"""
import collections
import glob
import json
import sys

WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def events(logdir):
    # audit.log rotates into audit-<time>.log: read the rotated files first.
    paths = sorted(glob.glob(logdir + "/audit-*.log")) + glob.glob(logdir + "/audit.log")
    for path in paths:
        with open(path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line cut by a rotation or a restart
                if e.get("stage") == "ResponseComplete":
                    yield e


def ok(e):
    return 200 <= e.get("responseStatus", {}).get("code", 0) < 300


def pods(logdir, ns):
    created, bound = collections.Counter(), collections.Counter()
    for e in events(logdir):
        o = e.get("objectRef", {})
        if o.get("namespace") != ns or o.get("resource") != "pods" or not ok(e):
            continue
        if e["verb"] == "create" and not o.get("subresource"):
            created[o.get("name", "")] += 1
        elif e["verb"] == "create" and o.get("subresource") == "binding":
            bound[o.get("name", "")] += 1
    print(len(created), sum(created.values()), sum(1 for v in created.values() if v > 1),
          len(bound), sum(1 for v in bound.values() if v > 1))


def throttled(logdir, user):
    n = n429 = writes = 0
    for e in events(logdir):
        if e.get("user", {}).get("username") != user:
            continue
        n += 1
        code = e.get("responseStatus", {}).get("code", 0)
        n429 += code == 429
        writes += e["verb"] in WRITES and ok(e)
    print(n, n429, writes)


def lease(logdir, old, new, lease_ns, lease_name, since=""):
    evs = sorted(events(logdir), key=lambda e: e["requestReceivedTimestamp"])

    def is_lease(e):
        o = e.get("objectRef", {})
        return (o.get("resource") == "leases" and o.get("namespace") == lease_ns and
                o.get("name", lease_name) == lease_name)

    takeover = None
    for e in evs:
        if (e.get("user", {}).get("username") == new and e["verb"] in ("update", "create") and
                is_lease(e) and ok(e) and e["requestReceivedTimestamp"] >= since):
            takeover = e["requestReceivedTimestamp"]
            break
    if takeover is None:
        print("none 0 0 0")
        return
    before = after = new_after = 0
    bad = []
    for e in evs:
        user = e.get("user", {}).get("username")
        if e["verb"] not in WRITES or is_lease(e):
            continue
        t = e["requestReceivedTimestamp"]
        if user == old:
            if t < takeover:
                before += ok(e)
            else:
                after += 1
                o = e.get("objectRef", {})
                bad.append(f"{t} {e['verb']} {o.get('resource')}/{o.get('name')} "
                           f"{e.get('responseStatus', {}).get('code')}")
        elif user == new and t >= takeover:
            new_after += ok(e)
    print(takeover, before, after, new_after)
    for b in bad[:5]:
        print(b)


if __name__ == "__main__":
    {"pods": pods, "throttled": throttled, "lease": lease}[sys.argv[1]](*sys.argv[2:])
