// limit-count's local counters: CounterTable (64 locked shards, fixed 48-byte slots, 128-bit
// key fingerprints) beside the naive baseline a first version would write (one std::mutex
// around a std::unordered_map keyed by the identity string), at 1, 4,096 and 1,048,576
// distinct keys, on 1 and 2 threads (two workers counting at once). And the redis-cluster
// policy's hash slot of a Redis key (table-driven CRC16) beside the bitwise CRC16 of the
// specification's reference code, at key lengths 64, 128 and 256 (APISIX keys are 60 bytes and up).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugins/limit_count/cluster_slot.h"
#include "plugins/limit_count/counter_table.h"

namespace turnpike::plugins::limit_count {
namespace {

constexpr std::string_view kPrefix = "/apisix/routes/1:3861285937:";

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

// The daemon's default table (262,144 slots) for up to 4,096 keys; twice the keys beyond.
CounterTable& Table(size_t keys) {
  static std::unordered_map<size_t, std::unique_ptr<CounterTable>> tables;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<CounterTable>& t = tables[keys];
  if (t == nullptr) t = std::make_unique<CounterTable>(std::max<size_t>(262144, 2 * keys));
  return *t;
}

void BM_CounterTable(benchmark::State& state) {
  const std::vector<std::string>& keys = Keys(static_cast<size_t>(state.range(0)));
  CounterTable& table = Table(keys.size());
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  int64_t now = 1'000'000;
  for (auto _ : state) {
    const std::string& key = keys[i % keys.size()];
    i += 104729;  // a large prime: keys visited in a scattered order
    CounterTable::Fixed r = table.TakeFixed(Fingerprint(kPrefix, key), 1'000'000'000, 60'000, now);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_CounterTable)->Arg(1)->Arg(4096)->Arg(1048576)->Threads(1)->Threads(2);

// One lock and a node-based hash map keyed by the whole identity, built per request.
struct NaiveCounters {
  struct Entry {
    uint64_t count = 0;
    int64_t window_end = 0;
  };
  std::mutex mu;
  std::unordered_map<std::string, Entry> map;
};

void BM_MutexMapBaseline(benchmark::State& state) {
  static NaiveCounters counters;
  const std::vector<std::string>& keys = Keys(static_cast<size_t>(state.range(0)));
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  int64_t now = 1'000'000;
  for (auto _ : state) {
    std::string identity(kPrefix);
    identity += keys[i % keys.size()];
    i += 104729;
    std::lock_guard<std::mutex> lock(counters.mu);
    NaiveCounters::Entry& e = counters.map[identity];
    if (e.window_end <= now) e = {0, now + 60'000};
    ++e.count;
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_MutexMapBaseline)->Arg(1)->Arg(4096)->Arg(1048576)->Threads(1)->Threads(2);

// A Redis key of about `len` bytes: "plugin-limit-count:v1:<identity>".
std::string RedisKey(size_t len) {
  std::string key = "plugin-limit-count:v1:/apisix/routes/1:3861285937:10.0.0.7";
  while (key.size() < len) key.push_back(static_cast<char>('a' + key.size() % 26));
  return key;
}

void BM_KeySlot(benchmark::State& state) {
  std::string key = RedisKey(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(key.data());
    benchmark::DoNotOptimize(KeySlot(key));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * key.size()));
}
BENCHMARK(BM_KeySlot)->Arg(64)->Arg(128)->Arg(256);

// The baseline: CRC16/XMODEM a bit at a time, as the cluster specification's appendix does.
uint16_t BitwiseCrc16(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char b : data) {
    crc ^= static_cast<uint16_t>(b << 8);
    for (int i = 0; i < 8; ++i) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

void BM_BitwiseCrc16Baseline(benchmark::State& state) {
  std::string key = RedisKey(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(key.data());
    benchmark::DoNotOptimize(BitwiseCrc16(key) & 16383);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * key.size()));
}
BENCHMARK(BM_BitwiseCrc16Baseline)->Arg(64)->Arg(128)->Arg(256);

}  // namespace
}  // namespace turnpike::plugins::limit_count

BENCHMARK_MAIN();
