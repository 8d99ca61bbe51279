// limit-count with sync_interval, per request on the worker: the delayed-sync decision of a
// key whose quota is known (SyncTable: hash the key, one shard lock), at 1, 4,096 and
// 1,048,576 keys, on 1 and 2 threads; the same for a sliding window whose view is known
// (DecideSliding: the script's check on the view, a floating-point share). What the redis policy
// costs instead (a script call per request, pipelined on the worker's connection) is
// bench/redis_link_bench, on the same machine; delayed sync adds one such call per key and
// interval, shared by every request of the key.
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugins/limit_count/delayed_sync.h"

namespace turnpike::plugins::limit_count {
namespace {

constexpr std::string_view kPrefix = "/apisix/routes/1:3861285937:";
constexpr int64_t kWindowMs = 60'000;
constexpr int64_t kWindowEndMs = 1'700'000'040'000;  // a sliding window's end (wall clock)

const std::vector<std::string>& Keys(size_t n) {
  static std::unordered_map<size_t, std::vector<std::string>> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::string>& keys = cache[n];
  if (keys.empty()) {
    for (size_t i = 0; i < n; ++i) keys.push_back("10.0." + std::to_string(i) + ".7");
  }
  return keys;
}

// The daemon's default table for up to 4,096 keys, twice the keys beyond; every key's quota
// known (as after its first request), with room for every request of the run.
// `sliding`: every key's view of the window ending at kWindowEndMs known.
SyncTable& Table(size_t n, bool sliding = false) {
  static std::unordered_map<size_t, std::unique_ptr<SyncTable>> tables[2];
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<SyncTable>& t = tables[sliding ? 1 : 0][n];
  if (t == nullptr) {
    t = std::make_unique<SyncTable>(std::max<size_t>(262144, 2 * n));
    for (const std::string& key : Keys(n)) {
      CounterKey k = Fingerprint(kPrefix, key);
      if (sliding) {
        t->DecideSliding(k, 1, 1, kWindowMs, kWindowEndMs, 20'000, 0);
        t->SettleSliding(k, 0, true, kWindowEndMs, 1, 1, kWindowEndMs - 20'000, 1'000'000'000);
      } else {
        t->Decide(k, 1, 1, kWindowMs, 0);
        t->Settle(k, 0, true, 1, 1'000'000'000, 0);
      }
    }
  }
  return *t;
}

void BM_SyncDecide(benchmark::State& state) {
  const std::vector<std::string>& keys = Keys(static_cast<size_t>(state.range(0)));
  SyncTable& table = Table(keys.size());
  const FingerprintSeed seed = SeedFingerprint(kPrefix);  // once per instance, as the plugin
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    const std::string& key = keys[i % keys.size()];
    i += 104729;  // scattered
    SyncTable::Decision d =
        table.Decide(Fingerprint(seed, key), uint64_t{1} << 52, 1, kWindowMs, 1000);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_SyncDecide)->Arg(1)->Arg(4096)->Arg(1048576)->Threads(1)->Threads(2);

void BM_SyncDecideSliding(benchmark::State& state) {
  const std::vector<std::string>& keys = Keys(static_cast<size_t>(state.range(0)));
  SyncTable& table = Table(keys.size(), /*sliding=*/true);
  const FingerprintSeed seed = SeedFingerprint(kPrefix);
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    const std::string& key = keys[i % keys.size()];
    i += 104729;
    SyncTable::Decision d = table.DecideSliding(Fingerprint(seed, key), uint64_t{1} << 52, 1,
                                                kWindowMs, kWindowEndMs, 20'000, 1000);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_SyncDecideSliding)->Arg(1)->Arg(4096)->Arg(1048576)->Threads(1)->Threads(2);

}  // namespace
}  // namespace turnpike::plugins::limit_count

BENCHMARK_MAIN();
