// The balancers at 1 / 100 / 10k nodes, each beside the naive baseline it replaces.
//
// RoundRobinPicker: a first-attempt Pick() with weights 1-5 (the usual case) and with
// all-distinct weights (the worst case for weight classes), a retry Pick() with one node
// tried, Build(), and nginx's per-pick scan over all nodes.
// ChashPicker: Pick() for random keys (first attempt and a retry), the key's CRC-32, Build()
// (the ring); baselines: a sorted vector of points searched with std::lower_bound (prebuilt,
// and built per pick).
// LeastConnPicker: a pick and the end of its attempt with half the nodes busy; baseline: a
// full scan computing (active + 1) / weight by division.
// EwmaPicker: Pick() on measured nodes; baseline: a scan of every node's decayed average.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "upstream/chash.h"
#include "upstream/crc32.h"
#include "upstream/ewma.h"
#include "upstream/least_conn.h"
#include "upstream/round_robin.h"

namespace turnpike::upstream {
namespace {

NodeSetConstSharedPtr MakeSet(int nodes, bool distinct_weights) {
  auto set = std::make_shared<NodeSet>();
  set->nodes.reserve(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.host = std::string("10.0.")
                 .append(std::to_string(i / 256))
                 .append(".")
                 .append(std::to_string(i % 256));
    n.port = 8080;
    n.weight = distinct_weights ? 100 + i : 1 + i % 5;
    set->nodes.push_back(std::move(n));
  }
  return set;
}

void PickBench(benchmark::State& state, bool distinct_weights, bool retry) {
  const int nodes = static_cast<int>(state.range(0));
  RoundRobinPicker picker;
  picker.Build(MakeSet(nodes, distinct_weights));
  TriedSet tried;
  if (retry && nodes > 1) tried.Add(0);
  for (auto _ : state) benchmark::DoNotOptimize(picker.Pick(tried));
}

void BM_Pick(benchmark::State& state) { PickBench(state, false, false); }
void BM_PickDistinctWeights(benchmark::State& state) { PickBench(state, true, false); }
void BM_PickRetry(benchmark::State& state) { PickBench(state, false, true); }
BENCHMARK(BM_Pick)->Arg(1)->Arg(100)->Arg(10000);
BENCHMARK(BM_PickDistinctWeights)->Arg(1)->Arg(100)->Arg(10000);
BENCHMARK(BM_PickRetry)->Arg(1)->Arg(100)->Arg(10000);

// nginx's smooth weighted round robin as written in ngx_http_upstream_round_robin.c: every
// pick scans all peers.
class NginxScan {
 public:
  explicit NginxScan(const NodeSet& set) {
    for (const Node& n : set.nodes) peers_.push_back(Peer{n.weight, 0});
  }
  uint32_t Pick() {
    Peer* best = nullptr;
    int64_t total = 0;
    for (Peer& p : peers_) {
      p.current += p.weight;
      total += p.weight;
      if (best == nullptr || p.current > best->current) best = &p;
    }
    best->current -= total;
    return static_cast<uint32_t>(best - peers_.data());
  }

 private:
  struct Peer {
    int64_t weight;
    int64_t current;
  };
  std::vector<Peer> peers_;
};

void BM_PickNginxScanBaseline(benchmark::State& state) {
  NginxScan scan(*MakeSet(static_cast<int>(state.range(0)), false));
  for (auto _ : state) benchmark::DoNotOptimize(scan.Pick());
}
BENCHMARK(BM_PickNginxScanBaseline)->Arg(1)->Arg(100)->Arg(10000);

void BM_Build(benchmark::State& state) {
  const NodeSetConstSharedPtr set = MakeSet(static_cast<int>(state.range(0)), false);
  RoundRobinPicker picker;
  for (auto _ : state) {
    picker.Build(set);
    benchmark::DoNotOptimize(picker.built_from());
  }
}
BENCHMARK(BM_Build)->Arg(1)->Arg(100)->Arg(10000);

// A discovered set (one default weight, one priority) republished: what a worker pays per
// publish under node churn (bench/node_churn.sh).
void BM_BuildEqualWeights(benchmark::State& state) {
  auto set = std::make_shared<NodeSet>(*MakeSet(static_cast<int>(state.range(0)), false));
  for (size_t i = 0; i < set->nodes.size(); ++i) set->nodes.Mutable(i).weight = 1;
  const NodeSetConstSharedPtr shared = std::move(set);
  RoundRobinPicker picker;
  for (auto _ : state) {
    picker.Build(shared);
    benchmark::DoNotOptimize(picker.built_from());
  }
}
BENCHMARK(BM_BuildEqualWeights)->Arg(1)->Arg(100)->Arg(10000);

// The same set summarized as producers publish it (NodeSet::summary): the build reads the
// summary instead of the nodes.
void BM_BuildEqualWeightsSummarized(benchmark::State& state) {
  auto set = std::make_shared<NodeSet>(*MakeSet(static_cast<int>(state.range(0)), false));
  for (size_t i = 0; i < set->nodes.size(); ++i) set->nodes.Mutable(i).weight = 1;
  set->summary = SummarizeNodes(set->nodes);
  const NodeSetConstSharedPtr shared = std::move(set);
  RoundRobinPicker picker;
  for (auto _ : state) {
    picker.Build(shared);
    benchmark::DoNotOptimize(picker.built_from());
  }
}
BENCHMARK(BM_BuildEqualWeightsSummarized)->Arg(1)->Arg(100)->Arg(10000);

// Node churn as the worker sees it: a new set (one weight, one priority) arrives, the picker
// switches to it and picks the first node. The sets cycle through more memory than the last
// level cache holds (24 sets of 10k nodes are ~58 MB), so each switch meets its set cold, as
// a worker does with a set the control thread just built. Summarized (as published) against
// the node-by-node build (the build before summaries).
void SwitchBench(benchmark::State& state, bool summarized,
                 BalancerType type = BalancerType::kRoundRobin) {
  const int nodes = static_cast<int>(state.range(0));
  const size_t count = nodes >= 10000 ? 24 : 4;
  std::vector<NodeSetConstSharedPtr> sets;
  for (size_t i = 0; i < count; ++i) {
    auto set = std::make_shared<NodeSet>(*MakeSet(nodes, false));
    for (size_t i = 0; i < set->nodes.size(); ++i) set->nodes.Mutable(i).weight = 1;
    if (summarized) set->summary = SummarizeNodes(set->nodes);
    sets.push_back(std::move(set));
  }
  std::unique_ptr<Picker> picker = NewPicker(type);
  TriedSet none;
  size_t next = 0;
  for (auto _ : state) {
    picker->Build(sets[next]);
    benchmark::DoNotOptimize(picker->Pick(none));
    next = next + 1 == count ? 0 : next + 1;
  }
}
void BM_SwitchEqualWeights(benchmark::State& state) { SwitchBench(state, true); }
void BM_SwitchEqualWeightsNodeByNodeBaseline(benchmark::State& state) { SwitchBench(state, false); }
BENCHMARK(BM_SwitchEqualWeights)->Arg(1)->Arg(100)->Arg(10000);
BENCHMARK(BM_SwitchEqualWeightsNodeByNodeBaseline)->Arg(1)->Arg(100)->Arg(10000);
// least_conn and ewma keep per-node state, so their switch stays O(nodes), but over their own
// arrays only: no node read, no sort.
void BM_LeastConnSwitch(benchmark::State& state) {
  SwitchBench(state, true, BalancerType::kLeastConn);
}
void BM_LeastConnSwitchNodeByNodeBaseline(benchmark::State& state) {
  SwitchBench(state, false, BalancerType::kLeastConn);
}
void BM_EwmaSwitch(benchmark::State& state) { SwitchBench(state, true, BalancerType::kEwma); }
void BM_EwmaSwitchNodeByNodeBaseline(benchmark::State& state) {
  SwitchBench(state, false, BalancerType::kEwma);
}
BENCHMARK(BM_LeastConnSwitch)->Arg(10000);
BENCHMARK(BM_LeastConnSwitchNodeByNodeBaseline)->Arg(10000);
BENCHMARK(BM_EwmaSwitch)->Arg(10000);
BENCHMARK(BM_EwmaSwitchNodeByNodeBaseline)->Arg(10000);

// ---------------------------------------------------------------- chash

// 4096 random key hashes, cycled through by the pick benchmarks.
const std::vector<uint32_t>& KeyHashes() {
  static const std::vector<uint32_t> hashes = [] {
    std::mt19937 rng(42);
    std::vector<uint32_t> h(4096);
    for (uint32_t& x : h) x = Crc32("user-" + std::to_string(rng()));
    return h;
  }();
  return hashes;
}

void ChashPickBench(benchmark::State& state, bool retry) {
  const int nodes = static_cast<int>(state.range(0));
  ChashPicker picker;
  picker.Build(MakeSet(nodes, false));
  TriedSet tried;
  PickRequest request;
  request.tried = &tried;
  const std::vector<uint32_t>& hashes = KeyHashes();
  size_t i = 0;
  for (auto _ : state) {
    request.hash = hashes[i++ & 4095];
    if (retry && nodes > 1) {
      tried.Clear();
      TriedSet none;
      PickRequest first = request;
      first.tried = &none;
      tried.Add(picker.Pick(first));  // the key's own node failed: where does it go next
    }
    benchmark::DoNotOptimize(picker.Pick(request));
  }
  state.counters["points"] = static_cast<double>(picker.points());
}
void BM_ChashPick(benchmark::State& state) { ChashPickBench(state, false); }
// Two picks per iteration: the key's node, then the next untried one on the ring.
void BM_ChashPickRetry(benchmark::State& state) { ChashPickBench(state, true); }
BENCHMARK(BM_ChashPick)->Arg(1)->Arg(100)->Arg(10000);
BENCHMARK(BM_ChashPickRetry)->Arg(2)->Arg(100)->Arg(10000);

// What a request pays besides the pick: the CRC-32 of its key (a 20-byte header value).
void BM_ChashKeyHash(benchmark::State& state) {
  const std::string key = "user-0123456789abcde";
  for (auto _ : state) {
    benchmark::DoNotOptimize(key.data());
    benchmark::DoNotOptimize(Crc32(key));
  }
}
BENCHMARK(BM_ChashKeyHash);

// The rings of a set, as the control thread (or the reload job) builds them once per set.
void BM_ChashBuild(benchmark::State& state) {
  const NodeSetConstSharedPtr set = MakeSet(static_cast<int>(state.range(0)), false);
  ChashRingsConstSharedPtr rings;
  for (auto _ : state) {
    rings.reset();  // the previous build's memory is returned first, as a real rebuild does
    rings = ChashRings::Build(set->nodes);
    benchmark::DoNotOptimize(rings.get());
  }
  const double points = rings->rings()[0].size();
  state.counters["points"] = points;
  state.counters["bytes_per_point"] = static_cast<double>(rings->memory()) / points;
  state.counters["MB"] = static_cast<double>(rings->memory()) / 1e6;
}
BENCHMARK(BM_ChashBuild)->Arg(1)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

// What a worker pays when it sees a new set pointer: its picker takes the set's rings.
void BM_ChashPickerBuildSharedRings(benchmark::State& state) {
  auto set = std::make_shared<NodeSet>(*MakeSet(static_cast<int>(state.range(0)), false));
  set->chash = ChashRings::Build(set->nodes);
  const NodeSetConstSharedPtr shared = set;
  ChashPicker picker;
  for (auto _ : state) {
    picker.Build(shared);
    benchmark::DoNotOptimize(picker.rings());
  }
}
BENCHMARK(BM_ChashPickerBuildSharedRings)->Arg(1)->Arg(100)->Arg(10000);

// The build before the rings were shared (each worker built its own on its loop): the same
// points, sorted by a three-pass LSD radix sort over zero-filled vectors, split into hash and
// node arrays (8 bytes a point), then the index by a scan. Kept as the "before" figure.
struct PreviousRing {
  std::vector<uint32_t> hashes, nodes, index;
};
void PreviousBuild(const NodeSet& set, PreviousRing* ring) {
  uint64_t total = 0;
  for (const Node& n : set.nodes) total += uint64_t(n.weight) * ChashPicker::kPointsPerWeight;
  std::vector<uint64_t> points(total);
  uint64_t* out = points.data();
  for (uint32_t m = 0; m < set.nodes.size(); ++m) {
    const std::string id = ChashPicker::RingId(set.nodes[m]);
    const uint32_t base =
        Crc32Update(kCrc32Init, reinterpret_cast<const unsigned char*>(id.data()), id.size());
    uint32_t prev = 0;
    for (uint64_t i = 0; i < uint64_t(set.nodes[m].weight) * ChashPicker::kPointsPerWeight; ++i) {
      prev = Crc32Final(Crc32UpdateWord(base, prev));
      *out++ = uint64_t{prev} << 32 | m;
    }
  }
  const size_t n = points.size();
  if (n < 1024) {
    std::sort(points.begin(), points.end());
  } else {
    std::unique_ptr<uint64_t[]> tmp(new uint64_t[n]);
    uint64_t* from = points.data();
    uint64_t* to = tmp.get();
    for (int shift = 32; shift < 64; shift += 11) {
      std::vector<size_t> count(2048, 0);
      for (size_t i = 0; i < n; ++i) ++count[(from[i] >> shift) & 2047];
      size_t sum = 0;
      for (size_t& c : count) sum += std::exchange(c, sum);
      for (size_t i = 0; i < n; ++i) to[count[(from[i] >> shift) & 2047]++] = from[i];
      std::swap(from, to);
    }
    if (from != points.data()) std::copy(from, from + n, points.data());
  }
  ring->hashes.resize(n);
  ring->nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ring->hashes[i] = static_cast<uint32_t>(points[i] >> 32);
    ring->nodes[i] = static_cast<uint32_t>(points[i]);
  }
  const int bits = std::clamp(static_cast<int>(std::bit_width(n)) - 3, 1, 24);
  const uint32_t shift = 32 - static_cast<uint32_t>(bits);
  ring->index.assign((size_t{1} << bits) + 1, static_cast<uint32_t>(n));
  size_t p = 0;
  for (uint32_t b = 0; b < (1u << bits); ++b) {
    while (p < n && ring->hashes[p] < (uint64_t{b} << shift)) ++p;
    ring->index[b] = static_cast<uint32_t>(p);
  }
}
void BM_ChashBuildPreviousBaseline(benchmark::State& state) {
  const NodeSetConstSharedPtr set = MakeSet(static_cast<int>(state.range(0)), false);
  std::unique_ptr<PreviousRing> ring;
  for (auto _ : state) {
    ring.reset();
    ring = std::make_unique<PreviousRing>();
    PreviousBuild(*set, ring.get());
    benchmark::DoNotOptimize(ring.get());
  }
  const double bytes =
      4.0 * static_cast<double>(ring->hashes.size() + ring->nodes.size() + ring->index.size());
  state.counters["points"] = static_cast<double>(ring->hashes.size());
  state.counters["bytes_per_point"] = bytes / static_cast<double>(ring->hashes.size());
  state.counters["MB"] = bytes / 1e6;
}
BENCHMARK(BM_ChashBuildPreviousBaseline)
    ->Arg(1)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);

// The textbook ring: every point in a sorted vector of (hash, node), std::lower_bound per
// lookup. Same points as ChashPicker's.
std::vector<std::pair<uint32_t, uint32_t>> SortedPoints(const NodeSet& set) {
  std::vector<std::pair<uint32_t, uint32_t>> points;
  for (uint32_t n = 0; n < set.nodes.size(); ++n) {
    const std::string id = ChashPicker::RingId(set.nodes[n]);
    uint32_t prev = 0;
    for (int i = 0; i < set.nodes[n].weight * 160; ++i) {
      std::string bytes = id;
      for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>(prev >> (8 * b)));
      prev = Crc32(bytes);
      points.emplace_back(prev, n);
    }
  }
  std::sort(points.begin(), points.end());
  return points;
}

uint32_t LowerBoundFind(const std::vector<std::pair<uint32_t, uint32_t>>& points, uint32_t hash) {
  auto it = std::lower_bound(points.begin(), points.end(), std::pair<uint32_t, uint32_t>{hash, 0});
  return it == points.end() ? points.front().second : it->second;
}

void BM_ChashLowerBoundBaseline(benchmark::State& state) {
  const auto points = SortedPoints(*MakeSet(static_cast<int>(state.range(0)), false));
  const std::vector<uint32_t>& hashes = KeyHashes();
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(LowerBoundFind(points, hashes[i++ & 4095]));
}
BENCHMARK(BM_ChashLowerBoundBaseline)->Arg(1)->Arg(100)->Arg(10000);

// The ring built per request (what a picker without a build/pick split would do).
void BM_ChashBuiltPerPickBaseline(benchmark::State& state) {
  const NodeSetConstSharedPtr set = MakeSet(static_cast<int>(state.range(0)), false);
  const std::vector<uint32_t>& hashes = KeyHashes();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(LowerBoundFind(SortedPoints(*set), hashes[i++ & 4095]));
  }
}
BENCHMARK(BM_ChashBuiltPerPickBaseline)
    ->Arg(1)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------- least_conn

// Half the nodes carry 1-3 attempts in flight; each iteration picks and ends that attempt.
void BM_LeastConnPick(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  LeastConnPicker picker;
  picker.Build(MakeSet(nodes, false));
  TriedSet none;
  for (int i = 0; i < nodes; ++i) picker.Pick(none);  // load every node a little
  for (int i = 0; i < nodes / 2; ++i) picker.OnAttemptEnd(static_cast<uint32_t>(i * 2), 0, 0, true);
  for (auto _ : state) {
    const uint32_t n = picker.Pick(none);
    picker.OnAttemptEnd(n, 0, 0, true);
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_LeastConnPick)->Arg(1)->Arg(100)->Arg(10000);

void BM_LeastConnScanBaseline(benchmark::State& state) {
  const NodeSetConstSharedPtr set = MakeSet(static_cast<int>(state.range(0)), false);
  const size_t nodes = set->nodes.size();
  std::vector<uint32_t> active(nodes, 0);
  for (size_t i = 1; i < nodes; i += 2) active[i] = 1;
  for (auto _ : state) {
    size_t best = 0;
    double best_score = 0;
    for (size_t i = 0; i < nodes; ++i) {
      const double score = (active[i] + 1.0) / set->nodes[i].weight;
      if (i == 0 || score < best_score) {
        best = i;
        best_score = score;
      }
    }
    ++active[best];
    --active[best];
    benchmark::DoNotOptimize(best);
  }
}
BENCHMARK(BM_LeastConnScanBaseline)->Arg(1)->Arg(100)->Arg(10000);

// ---------------------------------------------------------------- ewma

void BM_EwmaPick(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  EwmaPicker picker;
  picker.Build(MakeSet(nodes, false));
  for (int i = 0; i < nodes; ++i) {
    picker.OnAttemptEnd(static_cast<uint32_t>(i), 1000, static_cast<uint64_t>(1 + i % 50), true);
  }
  TriedSet none;
  PickRequest request;
  request.tried = &none;
  uint64_t now = 1000;
  for (auto _ : state) {
    request.now_ms = ++now;
    benchmark::DoNotOptimize(picker.Pick(request));
  }
}
BENCHMARK(BM_EwmaPick)->Arg(1)->Arg(100)->Arg(10000);

// The lowest decayed average over every node (what a scan instead of two random choices
// costs).
void BM_EwmaScanBaseline(benchmark::State& state) {
  const size_t nodes = static_cast<size_t>(state.range(0));
  std::vector<double> ewma(nodes);
  std::vector<uint64_t> touched(nodes, 1000);
  for (size_t i = 0; i < nodes; ++i) ewma[i] = (1 + i % 50) / 1000.0;
  uint64_t now = 1000;
  for (auto _ : state) {
    ++now;
    size_t best = 0;
    double best_score = 0;
    for (size_t i = 0; i < nodes; ++i) {
      const double score = ewma[i] * std::exp(-static_cast<double>(now - touched[i]) / 10000);
      if (i == 0 || score < best_score) {
        best = i;
        best_score = score;
      }
    }
    benchmark::DoNotOptimize(best);
  }
}
BENCHMARK(BM_EwmaScanBaseline)->Arg(1)->Arg(100)->Arg(10000);

}  // namespace
}  // namespace turnpike::upstream

BENCHMARK_MAIN();
