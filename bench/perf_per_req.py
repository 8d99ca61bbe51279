#!/usr/bin/env python3
"""Nanoseconds per request by symbol, from `perf record -e cpu-clock` files of load runs.

Usage: perf_per_req.py [--top N] LABEL FILE REQUESTS [LABEL FILE REQUESTS ...]

Each FILE is one run of the proxy named LABEL that answered REQUESTS requests (bench/compare.sh
PERF=1 passes its runs). A cpu-clock sample's period is the CPU time it stands for, so a
symbol's samples summed and divided by the run's requests is its CPU time per request. For each
label: the median over its runs of every symbol's ns per request, user and kernel apart; then,
for each pair of labels, the symbols whose medians differ most. Medians over rounds, as
everywhere in bench/: one run on these machines is not a figure.
"""
import collections
import statistics
import subprocess
import sys


def per_request(path, requests):
    """{(space, symbol): ns per request} for one perf file."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "period,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    ns = collections.Counter()
    for line in out.splitlines():
        parts = line.split(None, 2)  # period, ip, "sym (dso)" or "[unknown] (dso)"
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        period, rest = int(parts[0]), parts[2]
        sym, _, dso = rest.rpartition(" (")
        dso = dso.rstrip(")")
        space = "kernel" if "kernel" in dso else "user"
        if not sym or sym == "[unknown]":
            sym = "[unknown " + dso.rsplit("/", 1)[-1] + "]"
        ns[(space, sym)] += period
    return {k: v / requests for k, v in ns.items()}


def main(argv):
    top = 25
    if len(argv) > 1 and argv[1] == "--top":
        top = int(argv[2])
        argv = argv[2:]
    args = argv[1:]
    if not args or len(args) % 3:
        sys.exit(__doc__)
    runs = collections.defaultdict(list)  # label -> [ {sym: ns/req} ]
    for i in range(0, len(args), 3):
        label, path, reqs = args[i], args[i + 1], int(args[i + 2])
        if reqs > 0:
            runs[label].append(per_request(path, reqs))
    medians = {}
    for label, maps in runs.items():
        keys = set().union(*maps)
        medians[label] = {k: statistics.median(m.get(k, 0.0) for m in maps) for k in keys}
    for label, med in medians.items():
        n = len(runs[label])
        for space in ("user", "kernel"):
            total = sum(v for (s, _), v in med.items() if s == space)
            print(f"\nperf {label}: {space} {total:.0f} ns/request (median per symbol, {n} run(s))")
            rows = sorted(((v, k[1]) for k, v in med.items() if k[0] == space), reverse=True)
            for v, sym in rows[:top]:
                print(f"  {v:8.1f}  {sym}")
    labels = list(medians)
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            keys = set(medians[a]) | set(medians[b])
            diff = sorted(((medians[a].get(k, 0.0) - medians[b].get(k, 0.0), k) for k in keys),
                          key=lambda t: -abs(t[0]))
            for space in ("kernel", "user"):
                ta = sum(v for (s, _), v in medians[a].items() if s == space)
                tb = sum(v for (s, _), v in medians[b].items() if s == space)
                print(f"\nperf {a} - {b}: {space} {ta - tb:+.0f} ns/request; largest differences")
                rows = [(d, k[1]) for d, k in diff if k[0] == space][:top]
                for d, sym in rows:
                    print(f"  {d:+8.1f}  {sym}")


if __name__ == "__main__":
    main(sys.argv)
