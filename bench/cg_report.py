#!/usr/bin/env python3
"""Where the instructions of one request go, from the two runs `bench/callgrind.sh` keeps.

`KEEP=1 bench/callgrind.sh N` leaves callgrind.N and callgrind.3N in a directory (it prints
which). Start-up and shutdown are in both, so (cost(3N) - cost(N)) / 2N is the cost of one
request, for each function or each source line, as for the total the script prints.

  bench/cg_report.py DIR                  functions by their own (self) instructions
  bench/cg_report.py DIR --inclusive      functions with what they call
  bench/cg_report.py DIR --lines          source lines
  bench/cg_report.py DIR --base OTHER     the difference from another kept directory (a
                                          before/after of one change; same N)
Options: --top K (default 40), --match REGEX (only names or lines that match),
         --min X (hide rows under X instructions per request; default 3).
Needs callgrind_annotate (valgrind). Reads only; prints a table.
"""

import argparse
import collections
import glob
import os
import re
import subprocess
import sys

ROW = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$")


def annotate(path, *args):
    out = subprocess.run(
        ["callgrind_annotate", "--show-percs=no", "--threshold=100", *args, path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split("\n")


def functions(path, inclusive):
    """{function: instructions} from the function summary."""
    costs = collections.Counter()
    lines = annotate(path, "--auto=no", "--inclusive=" + ("yes" if inclusive else "no"))
    for line in lines:
        m = ROW.match(line)
        if not m or "PROGRAM TOTALS" in line or m.group(2).startswith("=>"):
            continue
        name = re.sub(r"\s*\[[^\]]*\]$", "", m.group(2))  # the object file
        name = re.sub(r"\s*\(\d[\d,]*x\)$", "", name)  # call counts, when shown
        # The source file (spelled differently by different build directories) is dropped.
        name = re.sub(r"^(?:\?\?\?|[^:\s]*\.[A-Za-z]+):", "", name)
        cost = int(m.group(1).replace(",", ""))
        if inclusive:
            # A function may be listed once per file it has code from, each with the whole
            # inclusive cost: the largest is the function's.
            costs[name] = max(costs[name], cost)
        else:
            costs[name] += cost
    return costs


def source_lines(path):
    """{(file, line, text): instructions} from the annotated sources."""
    costs = collections.Counter()
    current = None
    number = None
    for line in annotate(path, "--auto=yes", "--context=0"):
        m = re.match(r"-- Auto-annotated source: (.*)", line)
        if m:
            current, number = os.path.basename(m.group(1)), None
            continue
        m = re.match(r"-- line (\d+) ", line)
        if m:
            number = int(m.group(1))
            continue
        if current is None or number is None:
            continue
        m = re.match(r"\s*([\d,]+|\.)\s{2}(.*)$", line)
        if not m:
            continue
        text = m.group(2)
        if "events annotated" in text:
            continue
        if text.lstrip().startswith("=>"):
            continue  # a call's inclusive cost, counted in the callee's lines
        if m.group(1) != ".":
            costs[(current, number, text.strip()[:100])] += int(m.group(1).replace(",", ""))
        number += 1
    return costs


def per_request(directory, loader):
    runs = {}
    for path in glob.glob(os.path.join(directory, "callgrind.*")):
        suffix = path.rsplit(".", 1)[1]
        if suffix.isdigit():
            runs[int(suffix)] = path
    small = [n for n in runs if 3 * n in runs]
    if len(small) != 1:
        sys.exit(f"cg_report: {directory} needs callgrind.N and callgrind.3N (KEEP=1 callgrind.sh)")
    n = small[0]
    a, b = loader(runs[n]), loader(runs[3 * n])
    return {k: (b[k] - a[k]) / (2 * n) for k in set(a) | set(b)}, n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--base")
    p.add_argument("--inclusive", action="store_true")
    p.add_argument("--lines", action="store_true")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--match", default="")
    p.add_argument("--min", type=float, default=3)
    o = p.parse_args()

    if o.lines:
        loader = source_lines
    else:
        loader = lambda path: functions(path, o.inclusive)  # noqa: E731
    now, n = per_request(o.dir, loader)
    before = per_request(o.base, loader)[0] if o.base else {}
    pattern = re.compile(o.match) if o.match else None

    def label(key):
        return f"{key[0]}:{key[1]} {key[2]}" if o.lines else key

    everything = sum(now.values()) - sum(before.values())
    rows = []
    for key in set(now) | set(before):
        delta = now.get(key, 0) - before.get(key, 0)
        if abs(delta) < o.min or (pattern and not pattern.search(label(key))):
            continue
        rows.append((delta, now.get(key, 0), label(key)))
    rows.sort(key=lambda r: -abs(r[0]))
    what = "source lines" if o.lines else ("inclusive" if o.inclusive else "self")
    print(f"instructions per request ({what}; N = {n}" + (f"; minus {o.base}" if o.base else "") + ")")
    if not o.inclusive:  # self costs add up to the request's total
        print(f"{everything:9.0f}  all {what} costs")
    for delta, value, name in rows[: o.top]:
        if o.base:
            print(f"{delta:+9.0f} {value:9.0f}  {name[:150]}")
        else:
            print(f"{delta:9.0f}  {name[:150]}")


if __name__ == "__main__":
    main()
