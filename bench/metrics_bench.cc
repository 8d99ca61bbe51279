// Metric updates on the hot path: metrics::Registry's per-worker cells (a lookup of the label
// values in the worker's own table, relaxed stores) against the naive baseline it replaces,
// one mutex-guarded map keyed by the joined label values.
#include <benchmark/benchmark.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/registry.h"

namespace {

std::vector<std::string> RouteIds(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back("route-" + std::to_string(i));
  return ids;
}

void BM_CounterAdd(benchmark::State& state) {
  turnpike::metrics::Registry registry(1);
  turnpike::Counter* c =
      registry.AddCounter({"http_status", "Requests", {"code", "route"}}).value();
  std::vector<std::string> ids = RouteIds(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    c->Add(0, {"200", ids[i++ % ids.size()]});
  }
}
BENCHMARK(BM_CounterAdd)->Arg(1)->Arg(100)->Arg(10000);

void BM_HistogramObserve(benchmark::State& state) {
  turnpike::metrics::Registry registry(1);
  turnpike::Histogram* h =
      registry
          .AddHistogram({"http_latency", "Latency", {"type", "route"}},
                        {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000})
          .value();
  std::vector<std::string> ids = RouteIds(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    h->Observe(0, {"request", ids[i % ids.size()]}, static_cast<double>(i % 700));
    ++i;
  }
}
BENCHMARK(BM_HistogramObserve)->Arg(1)->Arg(100)->Arg(10000);

// Baseline: one map for every worker, a mutex around it, a key string per update.
void BM_NaiveLockedMap(benchmark::State& state) {
  std::mutex mu;
  std::map<std::string, uint64_t> counts;
  std::vector<std::string> ids = RouteIds(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    std::string key = "200\x1f" + ids[i++ % ids.size()];
    std::lock_guard<std::mutex> lock(mu);
    ++counts[key];
  }
}
BENCHMARK(BM_NaiveLockedMap)->Arg(1)->Arg(100)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
