import sys, statistics
# access log lines: "<msec> <upstream_addr> <request_time>"; argv: files. request_time in
# microseconds (request-time-us.patch) or, with a dot, nginx's seconds (millisecond steps).
def q(v, p):  # v sorted
    return v[min(len(v) - 1, int(p * len(v)))] if v else float('nan')
for f in sys.argv[1:]:
    last = {}
    groups = {'first': [], 'joiner': [], 'other': []}
    gaps = []
    for line in open(f):
        parts = line.split()
        if len(parts) < 3: continue
        try:
            t = float(parts[0]); addr = parts[1]
            us = round(float(parts[2]) * 1e6) if '.' in parts[2] else int(parts[2])
        except ValueError:
            continue
        prev = last.get(addr)
        last[addr] = t
        if prev is None: groups['first'].append(us); continue
        gap = t - prev
        gaps.append(gap)
        (groups['joiner'] if gap > 0.6 else groups['other']).append(us)
    print(f)
    for k, v in groups.items():
        v.sort()
        print(f"  {k:7s} n={len(v):7d} p50={q(v,.5):6} p90={q(v,.9):6} p99={q(v,.99):6} p99.9={q(v,.999):6} >1ms={sum(1 for x in v if x>1000)/max(1,len(v))*100:.3f}%")
    if gaps: print(f"  gap median {statistics.median(gaps):.3f} s")
