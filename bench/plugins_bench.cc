// Hot paths of the built-in plugins: request-id generation (per-worker xoshiro256** vs. the
// naive std::random_device + mt19937 + snprintf baseline), response-rewrite's body
// substitution on 1 KiB / 64 KiB / 1 MiB bodies, and ip-restriction's lookup.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>

#include "expr/ip_matcher.h"
#include "plugins/request_id/id_generator.h"
#include "plugins/response_rewrite/substitution.h"

namespace turnpike::plugins {
namespace {

void BM_UuidV4(benchmark::State& state) {
  request_id::FastRandom rng = request_id::FastRandom::FromOs();
  char out[request_id::kUuidLength];
  for (auto _ : state) {
    request_id::UuidV4(rng, out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_UuidV4);

// What a first attempt often looks like: a fresh std::string per id, formatted with snprintf,
// from a (thread-local) Mersenne Twister.
void BM_UuidV4NaiveBaseline(benchmark::State& state) {
  thread_local std::mt19937_64 mt{std::random_device{}()};
  for (auto _ : state) {
    uint64_t a = mt();
    uint64_t b = mt();
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>((a >> 16) & 0xffff),
                  static_cast<unsigned>((a & 0x0fff) | 0x4000),
                  static_cast<unsigned>(((b >> 48) & 0x3fff) | 0x8000),
                  static_cast<unsigned long long>(b & 0xffffffffffffULL));
    std::string id(buf);
    benchmark::DoNotOptimize(id);
  }
}
BENCHMARK(BM_UuidV4NaiveBaseline);

void BM_Nanoid(benchmark::State& state) {
  request_id::FastRandom rng = request_id::FastRandom::FromOs();
  char out[request_id::kNanoidLength];
  for (auto _ : state) {
    request_id::Nanoid(rng, out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Nanoid);

void BM_RangeId16(benchmark::State& state) {
  request_id::FastRandom rng = request_id::FastRandom::FromOs();
  char out[16];
  for (auto _ : state) {
    request_id::RangeId(rng, "abcdefghijklmnopqrstuvwxyzABCDEFGHIGKLMNOPQRSTUVWXYZ0123456789", 16,
                        out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_RangeId16);

void BM_Ksuid(benchmark::State& state) {
  request_id::FastRandom rng = request_id::FastRandom::FromOs();
  char out[request_id::kKsuidLength];
  for (auto _ : state) {
    request_id::Ksuid(rng, 1700000000, out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Ksuid);

// gsub("world", "turnpike") over a body of `range(0)` bytes with a match every 64 bytes.
void BM_SubstituteGlobal(benchmark::State& state) {
  auto sub = response_rewrite::Substitution::Compile("world", "turnpike", "jo", true);
  if (!sub.ok()) std::abort();
  std::string body;
  while (body.size() < static_cast<size_t>(state.range(0))) {
    body.append("hello world, this is a line of text padding it out to 64 bytes.\n");
  }
  body.resize(static_cast<size_t>(state.range(0)));
  std::string out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sub.value().Apply(body, &out));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_SubstituteGlobal)->Arg(1 << 10)->Arg(64 << 10)->Arg(1 << 20);

void BM_IpRestrictionMatch(benchmark::State& state) {
  std::vector<std::string> entries;
  for (int i = 0; i < state.range(0); ++i) {
    entries.push_back(std::to_string(10 + i / 65536 % 200) + "." + std::to_string(i / 256 % 256) +
                      "." + std::to_string(i % 256) + ".0/24");
  }
  auto m = expr::IpMatcher::Build(entries);
  if (!m.ok()) std::abort();
  for (auto _ : state) benchmark::DoNotOptimize(m.value().Match("192.168.1.77"));
}
BENCHMARK(BM_IpRestrictionMatch)->Arg(1)->Arg(100)->Arg(10000);

}  // namespace
}  // namespace turnpike::plugins

BENCHMARK_MAIN();
