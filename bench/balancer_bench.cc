// RoundRobinPicker at 1 / 100 / 10k nodes: a first-attempt Pick() with weights 1-5 (the
// usual case) and with all-distinct weights (the worst case for weight classes), a retry
// Pick() with one node tried, Build(), and nginx's per-pick scan over all nodes (the
// baseline the weight classes replace).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace turnpike::upstream

BENCHMARK_MAIN();
