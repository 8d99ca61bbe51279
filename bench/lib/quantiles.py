"""Percentiles over several wrk runs, from the quantile files bench/wrk/quantile_file.lua writes.

  quantiles.py merge FILE...      "p50_ms p99_ms requests" over every request of the runs, as if
                                  one run had made them all (bench/lib/loadtest.sh merge_quantiles)
  quantiles.py pooled LIST [P]    the P-th percentile (default 99) over every request of the "B"
                                  runs against the same over the "A" runs, with a 90% interval:
                                  "ratio low high a_ms b_ms rounds" (pooled_quantile_ratio)
  quantiles.py share LIST_X LIST_Y [P [paired]]  X's pooled ratio over Y's, with a 90% interval
                                  from resampling each LIST's rounds apart (paired: the same rounds
                                  for both): "share low high x y" (the gateway's node churn
                                  against a null proxy's)

A quantile file: "requests N", then "P US" lines (P% of the run's requests took at most US
microseconds). A run's share of requests at or below a latency is read from its own quantiles and
weighted by its requests.
"""
import bisect
import random
import sys


def load(path):
    """(requests, [microseconds], [share at or below]) of one run."""
    n, us, share = 0, [], []
    for line in open(path):
        a, b = line.split()
        if a == "requests":
            n = int(b)
        else:
            us.append(int(b))
            share.append(float(a) / 100)
    return n, us, share


def at_or_below(run, v):
    """Requests of the run at or below v microseconds."""
    n, us, share = run
    i = bisect.bisect_right(us, v)
    return n * (share[i - 1] if i else 0.0)


def merge(paths):
    runs = [load(p) for p in paths]
    total = sum(r[0] for r in runs)
    if total == 0:
        print("- - 0")
        return
    candidates = sorted({v for _, us, _ in runs for v in us})
    out = []
    for p in (0.50, 0.99):
        goal = p * total - 1e-6
        out.append(next(v for v in candidates if sum(at_or_below(r, v) for r in runs) >= goal) / 1000)
    print("%.3f %.3f %d" % (out[0], out[1], total))


class Pooled:
    """The rounds of one LIST (a line per round, "A B": each a comma-separated list of the
    round's quantile files for that mode) and the P-th percentile of either mode over any
    sample of its rounds. Percentiles are read on a grid 0.2% apart around the one asked for."""

    def __init__(self, list_path, pct):
        self.pct = pct
        rounds = []
        for line in open(list_path):
            if line.strip():
                rounds.append([[load(f) for f in col.split(",") if f] for col in line.split()])
        runs = [r for rd in rounds for col in rd for r in col if r[0]]
        self.rounds = list(range(len(rounds))) if runs else []
        if not runs:
            return

        def latency_at(run, p):
            _, us, share = run
            return us[min(bisect.bisect_left(share, p - 1e-9), len(us) - 1)]

        lo = min(latency_at(r, pct - 0.02) for r in runs)
        hi = max(latency_at(r, min(pct + 0.009, 1.0)) for r in runs)
        grid, v = [], max(lo, 1) * 0.95
        while v <= hi * 1.05:
            grid.append(v)
            v *= 1.002
        grid.append(max(hi * 1.05, grid[-1] + 1))
        self.grid = grid
        # per round, per mode: (requests, requests at or below each grid latency)
        self.table = [[(sum(r[0] for r in col), [sum(at_or_below(r, g) for r in col) for g in grid])
                       for col in rd] for rd in rounds]

    def percentile(self, sample, mode):
        table = self.table
        goal = self.pct * sum(table[i][mode][0] for i in sample) - 1e-6
        a, b = 0, len(self.grid) - 1
        while a < b:
            k = (a + b) // 2
            if sum(table[i][mode][1][k] for i in sample) >= goal:
                b = k
            else:
                a = k + 1
        return self.grid[a]

    def ratio(self, sample):
        """B's percentile over A's, over the sample's rounds."""
        return self.percentile(sample, 1) / self.percentile(sample, 0)

    def resamples(self, rng):
        """Endless bootstrap samples of the rounds (with replacement)."""
        while True:
            yield [rng.choice(self.rounds) for _ in self.rounds]


def pooled(list_path, pct):
    """"ratio low high a_ms b_ms rounds" of one LIST. The interval is a paired bootstrap over
    rounds (a round's runs share its minutes of the host): 2,000 resamples with a fixed seed,
    5th to 95th percentile of the resampled ratios."""
    p = Pooled(list_path, pct)
    if not p.rounds:
        print("- - - - - 0")
        return
    pa, pb = p.percentile(p.rounds, 0), p.percentile(p.rounds, 1)
    low = high = "-"
    if len(p.rounds) > 1:
        draws = p.resamples(random.Random(12345))
        ratios = sorted(p.ratio(next(draws)) for _ in range(2000))
        low, high = "%.3f" % ratios[100], "%.3f" % ratios[1899]
    print("%.3f" % (pb / pa), low, high, "%.3f" % (pa / 1000), "%.3f" % (pb / 1000), len(p.rounds))


def share(list_x, list_y, pct, paired):
    """"share low high x y": X's pooled ratio over Y's (e.g. the gateway's and a null proxy's),
    with a 90% interval from 2,000 bootstrap resamples of the rounds: each LIST's apart when they
    come from two runs of the bench, or the same round numbers for both when `paired` (line N of
    each LIST from the same round)."""
    x, y = Pooled(list_x, pct), Pooled(list_y, pct)
    if len(x.rounds) < 2 or len(y.rounds) < 2 or (paired and x.rounds != y.rounds):
        print("- - - - -")
        return
    rng = random.Random(12345)
    dx = x.resamples(rng)
    dy = dx if paired else y.resamples(rng)
    shares = []
    for _ in range(2000):
        sx = next(dx)
        shares.append(x.ratio(sx) / y.ratio(sx if paired else next(dy)))
    shares.sort()
    rx, ry = x.ratio(x.rounds), y.ratio(y.rounds)
    print("%.3f %.3f %.3f %.3f %.3f" % (rx / ry, shares[100], shares[1899], rx, ry))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "merge":
        merge(sys.argv[2:])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "pooled":
        pooled(sys.argv[2], float(sys.argv[3]) / 100 if len(sys.argv) == 4 else 0.99)
    elif len(sys.argv) in (4, 5, 6) and sys.argv[1] == "share":
        share(sys.argv[2], sys.argv[3], float(sys.argv[4]) / 100 if len(sys.argv) >= 5 else 0.99,
              len(sys.argv) == 6 and sys.argv[5] == "paired")
    else:
        sys.exit(__doc__)
