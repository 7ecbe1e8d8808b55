#!/usr/bin/env python3
"""A hostile tenant's objects, seeded (issue 27): Volcano Jobs, PodGroups, Queues, CronJobs,
JobTemplates and JobFlows with extreme values the schemas allow (and some they refuse), and
scheduler configurations that cannot be used.

  hostile_gen.py objects SEED BATCH COUNT PREFIX   multi-document YAML (JSON documents) on stdout
  hostile_gen.py conf SEED BATCH                   one bad scheduler configuration on stdout

The same SEED and BATCH give the same output, so a failure names what reproduces it.
Namespaced objects carry no namespace (kubectl -n gives it); Queues are cluster-scoped and
named PREFIX-q<n>, so that the suite can delete them after the batch.
"""
import json
import random
import sys

INT32 = [0, 1, 2, 3, 7, 64, 1000, 65535, 2**31 - 1]
# Quantities from the smallest Kubernetes parses to the largest it keeps exactly.
QTY = ["1n", "1u", "1m", "1", "3", "1k", "1Ki", "1M", "1Gi", "1T", "1P", "1E", "7E",
       "9223372036854775807", "999999999999999999999", "1e18", "0.000000001", "123456789012345678901234567890n"]
# The events and actions a policy may name; the API server refuses the others (BAD_*), which
# the generator uses now and then.
EVENTS = ["PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed",
          "JobUpdated", "*"]
BAD_EVENTS = ["PodRunning", "OutOfSync", "CommandIssued"]
ACTIONS = ["AbortJob", "RestartJob", "RestartTask", "RestartPod", "TerminateJob", "CompleteJob",
           "ResumeJob", "RestartPartition"]
BAD_ACTIONS = ["SyncJob", "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue"]
BAD = 0.05  # how often a value is one the API server refuses
PLUGINS = {
    "env": [[], ["--bogus"]],
    "svc": [[], ["--publish-not-ready-addresses=true"], ["--disable-network-policy=true"], ["--x=" + "y" * 300]],
    "ssh": [[], ["--no-root=true"], ["--ssh-key-file-path=/" + "a/" * 100]],
    "pytorch": [[], ["--master=m", "--worker=w", "--port=99999"], ["--port=-1"]],
    "mpi": [[], ["--master=m", "--worker=w", "--port=22"]],
    "tensorflow": [[], ["--ps=ps", "--worker=worker", "--port=0"]],
    "ray": [[], ["--head=head", "--worker=worker"]],
    "hcclrank": [[]],
    "nosuchplugin": [["--a"]],
}
MIN_MEMBER_ANNOTATION = ["2147483647", "0", "-1", "abc", "99999999999999999999", "1"]


def name(r, n=None):
    n = n or r.choice([1, 3, 8, 20, 40, 63])
    s = "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789-") for _ in range(n))
    s = "a" + s[1:] if s[0] == "-" else s
    return s[:-1] + "z" if s[-1] == "-" else s


def resources(r):
    out = {}
    for res in r.sample(["cpu", "memory", "example.com/x", "nvidia.com/gpu", "ephemeral-storage"], r.randint(0, 3)):
        q = r.choice(QTY)
        if "/" in res:
            q = r.choice(["1", "3", "1k", "1E", "9223372036854775807", "1000000"])
        out[res] = q
    if not out:
        return {}
    # Extended resources need limits equal to requests.
    return {"requests": out, "limits": {k: v for k, v in out.items() if "/" in k or r.random() < 0.5}}


def pod_template(r, long_run=False):
    spec = {"restartPolicy": r.choice(["Never", "OnFailure", "Always"]),
            "containers": [{"name": "c%d" % i, "image": "busybox", "resources": resources(r)}
                           for i in range(r.choice([1, 1, 2, 5]))]}
    if r.random() < 0.2:
        spec["priorityClassName"] = r.choice(["system-node-critical", "no-such-class"])
    ann = {"kwok.kiln.dev/run-for": r.choice(["1s", "2s", "30s"])}
    if r.random() < 0.3:
        ann["scheduling.volcano.sh/group-min-member"] = r.choice(MIN_MEMBER_ANNOTATION)
    return {"metadata": {"annotations": ann}, "spec": spec}


def policies(r):
    out = []
    events = r.sample(EVENTS[:-1], len(EVENTS) - 1)  # '*' must stand alone
    codes = [1, 137, 255]
    for _ in range(r.choice([0, 0, 1, 3])):
        p = {"action": r.choice(BAD_ACTIONS if r.random() < BAD else ACTIONS)}
        if r.random() < 0.3 and codes:
            p["exitCode"] = codes.pop(r.randrange(len(codes))) if r.random() > BAD else r.choice([0, -1])
        elif events:
            p["event"] = r.choice(BAD_EVENTS) if r.random() < BAD else events.pop()
        if r.random() < 0.2:
            p["timeout"] = r.choice(["1s", "999999h", "1.5m", "0.000000001s"])
        out.append(p)
    return out


def job_spec(r, queue_names, max_tasks, jobname_len):
    tasks = []
    used = set()
    for _ in range(r.randint(1, max_tasks)):
        # The pod name <job>-<task>-<index> must fit in 63 characters (else refused).
        room = max(1, 63 - jobname_len - 16)
        n = name(r, 63 if not tasks and r.random() < BAD else r.choice([1, 5, min(20, room), room]))
        if n in used:
            continue
        used.add(n)
        replicas = r.choice(INT32)
        t = {"name": n, "replicas": replicas, "template": pod_template(r)}
        if r.random() < 0.4:
            t["minAvailable"] = r.choice(INT32) if r.random() < BAD / 4 else r.randint(0, replicas)
        if r.random() < 0.3:
            t["maxRetry"] = r.choice(INT32)
        if r.random() < 0.3:
            t["policies"] = policies(r)
        if tasks and r.random() < 0.3:
            t["dependsOn"] = {"name": [name(r, 5) if r.random() < BAD else r.choice(tasks)["name"]],
                              "iteration": r.choice(["any", "all"])}
        tasks.append(t)
    spec = {"schedulerName": "volcano", "tasks": tasks}
    if r.random() < 0.7:
        total = sum(t["replicas"] for t in tasks)
        spec["minAvailable"] = r.choice(INT32) if r.random() < BAD else min(r.choice(INT32), total)
    for k, pool in [("maxRetry", INT32), ("ttlSecondsAfterFinished", INT32),
                    ("queue", queue_names + ["default", "no-such-queue"]),
                    ("priorityClassName", ["no-such-class", "high"])]:
        if r.random() < 0.3:
            spec[k] = r.choice(pool)
    if r.random() < 0.4:
        spec["policies"] = policies(r)
    if r.random() < 0.5:
        names = [t["name"] for t in tasks]
        plugins = {}
        for p, args in PLUGINS.items():
            if r.random() >= 0.35:
                continue
            if p in ("mpi", "pytorch", "tensorflow", "ray") and r.random() > BAD:
                # These name the tasks they read; name this Job's own, as a real user would.
                a, b = r.choice(names), r.choice(names)
                args = [["--master=" + a, "--worker=" + b]] if p in ("mpi", "pytorch") else \
                    [["--ps=" + a, "--worker=" + b]] if p == "tensorflow" else [["--head=" + a, "--worker=" + b]]
            if p == "nosuchplugin" and r.random() > BAD:
                continue
            plugins[p] = r.choice(args)
        spec["plugins"] = plugins
    if r.random() < 0.2:
        spec["volumes"] = [{"mountPath": "/v%d" % i,
                            "volumeClaim": {"accessModes": ["ReadWriteOnce"],
                                            "resources": {"requests": {"storage": r.choice(QTY)}}}}
                           for i in range(r.choice([1, 3]))]
    if r.random() < 0.2:
        spec["minSuccess"] = r.choice(INT32[1:])
    return spec


def objects(seed, batch, count, prefix):
    r = random.Random("%s/%s" % (seed, batch))
    docs = []
    queues = []
    # Queues, maybe a deep chain of parents (hierarchy), with extreme weights and capabilities.
    for i in range(max(1, count // 8)):
        q = "%s-q%d" % (prefix, i)
        spec = {"weight": r.choice([1, 2, 65535] if r.random() > BAD else [0, 65536]), "reclaimable": r.random() < 0.5}
        if r.random() < 0.5:
            spec["capability"] = {"cpu": r.choice(QTY), "memory": r.choice(QTY)}
        if r.random() < 0.3:
            spec["deserved"] = {"cpu": r.choice(QTY)}
        if queues and r.random() < 0.6:
            spec["parent"] = queues[-1]
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                     "metadata": {"name": q}, "spec": spec})
        queues.append(q)
    templates = []
    for i in range(count):
        kind = r.choice(["job"] * 4 + ["podgroup", "cronjob", "jobflow", "command"])
        n = "%s-%d-%s" % (kind[:2], i, name(r, r.choice([2, 10, 30])))
        if kind == "job":
            docs.append({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "metadata": {"name": n}, "spec": job_spec(r, queues, r.choice([1, 2, 5, 20]), len(n))})
        elif kind == "podgroup":
            spec = {"minMember": r.choice(INT32), "queue": r.choice(queues + ["default", "nope"])}
            if r.random() < 0.6:
                spec["minResources"] = {"cpu": r.choice(QTY), "memory": r.choice(QTY),
                                        "example.com/x": r.choice(QTY)}
            if r.random() < 0.3:
                spec["minTaskMember"] = {name(r, 5): r.choice(INT32) for _ in range(r.randint(1, 4))}
            docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": n}, "spec": spec})
        elif kind == "cronjob":
            spec = {"schedule": r.choice(["@every 1s", "@every 0.5s", "@every 1." + "0" * 3000 + "1s",
                                          "@every 9999999999h", "*/1 * * * *", "0 0 31 2 *",
                                          "@yearly", "59 23 29 2 *", "*/0 * * * *", "1-60/7 * * * *"]),
                    "concurrencyPolicy": r.choice(["Allow", "Forbid", "Replace", "Sometimes"]),
                    "jobTemplate": {"spec": job_spec(r, queues, 2, 63)}}
            for k, pool in [("startingDeadlineSeconds", [0, 1, 2**31 - 1, 2**53, 2**63 - 1]),
                            ("successfulJobsHistoryLimit", INT32), ("failedJobsHistoryLimit", INT32),
                            ("suspend", [True, False]),
                            ("timeZone", ["UTC", "Asia/Kolkata", "America/New_York", "Nowhere/Nope", "../../etc/passwd"])]:
                if r.random() < 0.5:
                    spec[k] = r.choice(pool)
            docs.append({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                         "metadata": {"name": n[:52]}, "spec": spec})
        elif kind == "jobflow":
            depth = r.choice([1, 3, 10, 40])
            names = []
            for d in range(depth):
                t = "%s-t%d" % (n[:40], d)
                if t not in templates:
                    docs.append({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                                 "metadata": {"name": t}, "spec": job_spec(r, queues, 2, 63)})
                    templates.append(t)
                names.append(t)
            flows = []
            for d, t in enumerate(names):
                f = {"name": t}
                if d > 0:
                    f["dependsOn"] = {"targets": [names[d - 1]] + ([name(r, 4)] if r.random() < 0.1 else [])}
                flows.append(f)
            docs.append({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                         "metadata": {"name": n[:50]},
                         "spec": {"flows": flows, "jobRetainPolicy": r.choice(["retain", "delete"])}})
        else:
            docs.append({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                         "metadata": {"name": n},
                         "action": r.choice(ACTIONS + ["Nonsense", "SyncJob", "CloseQueue"]),
                         "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": r.choice(["Job", "Queue", "Pod"]),
                                    "name": name(r, 8), "uid": "x"}})
    return docs


BAD_CONFS = [
    "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n    arguments: &a {x: *a}\n",
    "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n    arguments: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
    "actions: \"nosuchaction\"\ntiers:\n- plugins:\n  - name: gang\n",
    "a: &a [*a, *a]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: &d [*c, *c, *c, *c]\ne: [*d, *d, *d, *d]\n",
    "\x00\x01\x02garbage\xff",
    "actions: \"enqueue, allocate\"\ntiers: " + "[" * 3000 + "]" * 3000 + "\n",
]


def conf(seed, batch):
    r = random.Random("%s/conf/%s" % (seed, batch))
    return BAD_CONFS[(batch + r.randrange(len(BAD_CONFS))) % len(BAD_CONFS)]


def main(argv):
    if len(argv) >= 6 and argv[1] == "objects":
        docs = objects(argv[2], int(argv[3]), int(argv[4]), argv[5])
        sys.stdout.write("".join("---\n" + json.dumps(d) + "\n" for d in docs))
        return 0
    if len(argv) >= 4 and argv[1] == "conf":
        sys.stdout.buffer.write(conf(argv[2], int(argv[3])).encode("utf-8", "surrogateescape"))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
