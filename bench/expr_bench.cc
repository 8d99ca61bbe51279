// Expr::Eval on a typical 3-clause `vars` expression and on a regex clause, and IpMatcher with
// 1 / 100 / 10k CIDRs against the linear scan it replaces.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "expr/expr.h"
#include "expr/ip_matcher.h"

namespace turnpike::expr {
namespace {

// A request's variables as a handful of (name, value) pairs; lookups cost a short scan, as a
// real RequestVars' header or query scan would.
class BenchVars final : public RequestVars {
 public:
  using Values = std::vector<std::pair<std::string, std::string>>;
  explicit BenchVars(Values values) : values_(std::move(values)) {}
  std::optional<std::string_view> Get(const VarRef& var) override {
    for (const auto& [name, value] : values_) {
      if (name == var.source) return std::string_view(value);
    }
    return std::nullopt;
  }

 private:
  Values values_;
};

ExprConstPtr MustCompile(const char* text) {
  StatusOr<ExprConstPtr> e = Expr::Compile(nlohmann::json::parse(text));
  if (!e.ok()) std::abort();
  return std::move(e).value();
}

void BM_Eval_ThreeClauses(benchmark::State& state) {
  const ExprConstPtr e = MustCompile(
      R"([["arg_name", "==", "json"], ["http_x_version", "~=", "v0"], ["arg_n", ">", 10]])");
  BenchVars vars(
      BenchVars::Values{{"arg_name", "json"}, {"http_x_version", "v2"}, {"arg_n", "42"}});
  for (auto _ : state) benchmark::DoNotOptimize(e->Eval(vars));
}
BENCHMARK(BM_Eval_ThreeClauses);

void BM_Eval_Regex(benchmark::State& state) {
  const ExprConstPtr e = MustCompile(R"([["http_user_agent", "~*", "(iphone|android).*mobile"]])");
  BenchVars vars(
      BenchVars::Values{{"http_user_agent",
                         "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like "
                         "Gecko) Chrome/124.0 Mobile Safari/537.36"}});
  for (auto _ : state) benchmark::DoNotOptimize(e->Eval(vars));
}
BENCHMARK(BM_Eval_Regex);

void BM_Eval_OrGroupWithIpMatch(benchmark::State& state) {
  const ExprConstPtr e = MustCompile(R"(["OR", ["arg_debug", "==", "1"],
      ["remote_addr", "ipmatch", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]]])");
  BenchVars vars(BenchVars::Values{{"remote_addr", "192.168.10.20"}});
  for (auto _ : state) benchmark::DoNotOptimize(e->Eval(vars));
}
BENCHMARK(BM_Eval_OrGroupWithIpMatch);

// --- IpMatcher ------------------------------------------------------------------------------

std::string V4Text(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
         std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}

struct CidrSet {
  std::vector<std::string> entries;
  std::vector<std::pair<uint32_t, uint32_t>> nets;  // (network, mask)
  std::vector<std::string> queries;                 // about half hit
};

CidrSet MakeCidrs(int count) {
  std::mt19937 rng(11);
  CidrSet s;
  for (int i = 0; i < count; ++i) {
    const int len = 16 + static_cast<int>(rng() % 17);
    const uint32_t mask = ~uint32_t{0} << (32 - len);
    const uint32_t net = static_cast<uint32_t>(rng()) & mask;
    s.entries.push_back(V4Text(net) + "/" + std::to_string(len));
    s.nets.push_back({net, mask});
  }
  for (int q = 0; q < 1024; ++q) {
    uint32_t ip = static_cast<uint32_t>(rng());
    if (q % 2 == 0) {
      const auto& [net, mask] = s.nets[rng() % s.nets.size()];
      ip = net | (ip & ~mask);
    }
    s.queries.push_back(V4Text(ip));
  }
  return s;
}

void BM_IpMatcher(benchmark::State& state) {
  const CidrSet s = MakeCidrs(static_cast<int>(state.range(0)));
  StatusOr<IpMatcher> m = IpMatcher::Build(s.entries);
  if (!m.ok()) std::abort();
  state.counters["ranges"] = static_cast<double>(m.value().range_count());
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(m.value().Match(s.queries[i++ & 1023]));
}
BENCHMARK(BM_IpMatcher)->Arg(1)->Arg(100)->Arg(10000);

// The baseline: parse the address, then test it against every (network, mask) in turn.
void BM_IpLinearScan(benchmark::State& state) {
  const CidrSet s = MakeCidrs(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    uint32_t ip = 0;
    bool hit = false;
    if (IpMatcher::ParseV4(s.queries[i++ & 1023], &ip)) {
      for (const auto& [net, mask] : s.nets) {
        if ((ip & mask) == net) {
          hit = true;
          break;
        }
      }
    }
    benchmark::DoNotOptimize(hit);
  }
}
BENCHMARK(BM_IpLinearScan)->Arg(1)->Arg(100)->Arg(10000);

void BM_IpMatcher_V6(benchmark::State& state) {
  std::vector<std::string> entries;
  for (int i = 0; i < state.range(0); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "2001:db8:%x::/48", i);
    entries.push_back(buf);
  }
  StatusOr<IpMatcher> m = IpMatcher::Build(entries);
  if (!m.ok()) std::abort();
  const std::string query = "2001:db8:2a::17";
  for (auto _ : state) benchmark::DoNotOptimize(m.value().Match(query));
}
BENCHMARK(BM_IpMatcher_V6)->Arg(1)->Arg(10000);

}  // namespace
}  // namespace turnpike::expr

BENCHMARK_MAIN();
