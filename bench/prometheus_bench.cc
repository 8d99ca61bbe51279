// prometheus' log phase per request: the plugin (route facts, a probe of the worker's cache
// of bound cells, six relaxed updates) at 1 / 100 / 10k distinct label sets, against the
// naive baseline: the same six updates through the registry by label values (one series key
// built and hashed per update, what a plugin without bound cells would do).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "metrics/registry.h"
#include "plugins/prometheus/prometheus.h"
#include "turnpike/request_state.h"

namespace {

using namespace turnpike;  // NOLINT: benchmark vocabulary

// A log-phase context as the proxy gives it: the route, a node, byte counts, timings.
class LogContext final : public PluginContext {
 public:
  std::optional<std::string_view> Get(const VarRef& var) override {
    switch (var.builtin) {
      case BuiltinVar::kBalancerIp:
        return node;
      case BuiltinVar::kRequestLength:
        return std::string_view("120");
      case BuiltinVar::kBytesSent:
        return std::string_view("512");
      default:
        return std::nullopt;
    }
  }
  void Respond(int, std::string_view) override {}
  void SetRequestHeader(std::string_view, std::string_view) override {}
  void RemoveRequestHeader(std::string_view) override {}
  int response_status() const override { return 200; }
  void SetResponseHeader(std::string_view, std::string_view) override {}
  void RemoveResponseHeader(std::string_view) override {}
  void MarkBodyModified() override {}
  void* FindRequestState(const void* key, const RequestStateType& type) override {
    return states.Find(key, type);
  }
  WorkerState* FindWorkerState(const Plugin&) override { return worker_state.get(); }
  RequestTiming timing() const override { return {0, 7, 5}; }
  MatchedRoute matched_route() const override { return route; }
  bool response_from_upstream() const override { return true; }

  RequestStateStore states;
  std::unique_ptr<WorkerState> worker_state;
  MatchedRoute route;
  std::string_view node;
};

struct Fake final : FactoryContext {
  PluginOwner owner() const override { return {}; }
  const nlohmann::json& metadata() const override { return empty; }
  const nlohmann::json& attr() const override { return empty; }
  Clock& clock() override { return SystemClock::Instance(); }
  int worker_count() const override { return 1; }
  MetricsRegistry& metrics() override { return registry; }
  nlohmann::json empty = nlohmann::json::object();
  metrics::Registry registry{1};
};

// range(0) label sets: that many routes (each its own key and id) on one node.
void BM_PrometheusLog(benchmark::State& state) {
  Fake fctx;
  plugins::prometheus::PrometheusFactory factory;
  PluginConstSharedPtr plugin = factory.Create(nlohmann::json::object(), fctx).value();
  LogContext ctx;
  ctx.worker_state = plugin->CreateWorkerState({});
  size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back("route-" + std::to_string(i));
  ctx.node = "10.0.0.1";
  std::string uri = "/api/*";
  auto request = [&](size_t r) {
    ctx.route = {r + 1, ids[r], "", "", "", uri, ""};
    plugin->Log(ctx);
    ctx.states.EndRequest();
  };
  for (size_t r = 0; r < n; ++r) request(r);  // warm: every label set bound once
  size_t i = 0;
  for (auto _ : state) request(i++ % n);
}
BENCHMARK(BM_PrometheusLog)->Arg(1)->Arg(100)->Arg(10000);

// The baseline: the same updates by label values, no cache.
void BM_RegistryByLabelValues(benchmark::State& state) {
  metrics::Registry registry(1);
  plugins::prometheus::Attr attr;
  plugins::prometheus::Families f = plugins::prometheus::RegisterFamilies(registry, attr).value();
  size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back("route-" + std::to_string(i));
  size_t i = 0;
  for (auto _ : state) {
    std::string_view id = ids[i++ % n];  // series created on the first pass, as in the plugin
    f.status->Add(
        0, {"200", id, "/api/*", "", "", "", "10.0.0.1", "traditional_http", "", "", "upstream"});
    for (std::string_view type : {"request", "upstream", "apisix"}) {
      f.latency->Observe(0, {type, id, "", "", "10.0.0.1", "traditional_http", "", ""}, 5);
    }
    f.bandwidth->Add(0, {"ingress", id, "", "", "10.0.0.1", "traditional_http", "", ""}, 120);
    f.bandwidth->Add(0, {"egress", id, "", "", "10.0.0.1", "traditional_http", "", ""}, 512);
  }
}
BENCHMARK(BM_RegistryByLabelValues)->Arg(1)->Arg(100)->Arg(10000);

// A scrape's render at 10k label sets (control thread; workers keep writing meanwhile).
void BM_RenderPrometheus(benchmark::State& state) {
  metrics::Registry registry(2);
  plugins::prometheus::Attr attr;
  plugins::prometheus::Families f = plugins::prometheus::RegisterFamilies(registry, attr).value();
  for (int64_t i = 0; i < state.range(0); ++i) {
    std::string id = "route-" + std::to_string(i);
    f.status->Add(static_cast<int>(i % 2), {"200", id, "/api/*", "", "", "", "10.0.0.1",
                                            "traditional_http", "", "", "upstream"});
  }
  for (auto _ : state) benchmark::DoNotOptimize(registry.RenderPrometheus());
}
BENCHMARK(BM_RenderPrometheus)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
