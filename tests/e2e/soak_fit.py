#!/usr/bin/env python3
"""The soak's figures from its two files (tests/e2e/test_soak.sh).

  soak_fit.py SAMPLES PROGRESS PODS FLAT_PODS MAX_SLOPE

SAMPLES: one line a second, "time ctl_rss ctl_anon sch_rss sch_anon" (KiB). PROGRESS: "time
pods phase" whenever the pods processed or the phase changes; phase is run (the pipeline is
running), drain (waiting for the last objects to go), settle (nothing in flight) or end. A
sample belongs to the last progress line before it.

Prints "slope first last anon_slope ok|grew" for the controller then the scheduler (slope in
KiB per 1000 pods after the warm-up third, RSS in MiB), then the RSS with nothing in flight
of each process at the first and the last settle, "a,b" (MiB, '-' when there was none).
"""
import bisect
import sys

WINDOW = 11.0  # seconds: longer than the processes' 10 s heap trim period


def read(path, width):
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) == width:
            rows.append(f)
    return rows


def main():
    samples = [list(map(float, r)) for r in read(sys.argv[1], 5)]
    prog = [(float(t), int(p), ph) for t, p, ph in read(sys.argv[2], 3)]
    pods, flat_pods, max_slope = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    prog.sort()
    times = [p[0] for p in prog]
    # Stretches of samples in one phase: windows of the run ones, the settle ones whole.
    windows, settles, cur, cur_key = [], [], [], None
    for s in samples:
        i = bisect.bisect_right(times, s[0]) - 1
        if i < 0:
            continue
        _, done, phase = prog[i]
        key = (phase, i if phase == "settle" else None)
        if cur and (key != cur_key or (phase == "run" and s[0] - cur[0][1][0] >= WINDOW)):
            (windows if cur_key[0] == "run" else settles if cur_key[0] == "settle" else []).append(cur)
            cur = []
        cur_key = key
        cur.append((done, s))
    if cur:
        (windows if cur_key[0] == "run" else settles if cur_key[0] == "settle" else []).append(cur)
    if not windows:
        sys.exit("no sample while the pipeline ran")

    def low(win, col):  # the lowest sample of a window, at the pods done then
        done, s = min(win, key=lambda d: d[1][col])
        return done, s[col]

    warm = [w for w in windows if w[0][0] >= pods / 3]
    if len(warm) < 3:  # a short run: the windows after the first Jobs were gone
        warm = [w for w in windows if w[0][0] > 0] or windows[-1:]

    def slope(col):  # KiB per 1000 pods, least squares over the windows after the warm-up
        pts = [low(w, col) for w in warm]
        n = len(pts)
        mx = sum(x for x, _ in pts) / n
        my = sum(y for _, y in pts) / n
        sxx = sum((x - mx) ** 2 for x, _ in pts)
        return 0.0 if sxx == 0 else 1000 * sum((x - mx) * (y - my) for x, y in pts) / sxx

    out = []
    for col in (1, 3):  # VmRSS of the controller, of the scheduler; RssAnon follows each
        first, last, s = low(warm[0], col)[1], low(windows[-1], col)[1], slope(col)
        if pods >= flat_pods:
            ok = s <= max_slope
        else:  # too short for a slope: the last within half the first plus 32 MiB
            ok = last <= first * 1.5 + 32768
        out += [f"{s:.1f}", f"{first / 1024:.1f}", f"{last / 1024:.1f}", f"{slope(col + 1):.1f}",
                "ok" if ok else "grew"]
    for col in (1, 3):
        lows = [min(s[col] for _, s in w) / 1024 for w in settles]
        first = f"{lows[0]:.1f}" if len(lows) > 1 else "-"
        out.append(f"{first},{lows[-1]:.1f}" if lows else "-,-")
    print(" ".join(out))


main()
