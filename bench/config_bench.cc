// Loading an apisix.yaml at 10k / 50k routes: the whole-text YAML parse, the split parse
// (pieces on two threads), the full loader (YAML to validated specs) and the snapshot build.
// Wall-clock time (the split uses two threads); run on a quiet machine and compare medians.
// BM_ReloadSnapshot is a reload's build: every route has plugins, and the previous snapshot
// is the one built from the same file. The control API's share: the parse keeping sources, the
// view's build in a reload, and the first /v1/routes.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "admin/control_view.h"
#include "config/loader.h"
#include "config/yaml_tree.h"
#include "metrics/registry.h"
#include "plugins/ip_restriction/ip_restriction.h"
#include "plugins/request_id/request_id.h"
#include "plugins/response_rewrite/response_rewrite.h"
#include "proxy/snapshot.h"

namespace turnpike {
namespace {

// The file bench/reload_scale.sh writes: a third prefix routes, a fifth with a host. With
// `plugins`, every route has ip-restriction, every other one request-id and every tenth
// response-rewrite.
std::string RoutesYaml(int n, bool plugins = false) {
  std::string s = "routes:\n";
  for (int i = 0; i < n; ++i) {
    std::string id = std::to_string(i);
    s += "  - id: r" + id + "\n";
    s += i % 3 == 0 ? "    uri: /p" + id + "/*\n" : "    uri: /api/v1/svc" + id + "/items\n";
    if (i % 5 == 0) s += "    hosts: [h" + std::to_string(i % 100) + ".example.com]\n";
    s += "    upstream_id: u" + std::to_string(i % 4) + "\n";
    if (!plugins) continue;
    s += "    plugins:\n";
    s += "      ip-restriction: {whitelist: [10.0.0.0/8, 192.168." + std::to_string(i % 256) +
         ".0/24]}\n";
    if (i % 2 == 0) s += "      request-id: {include_in_response: true}\n";
    if (i % 10 == 0) s += "      response-rewrite: {headers: {set: {X-Route: r" + id + "}}}\n";
  }
  s += "upstreams:\n";
  for (int u = 0; u < 4; ++u) {
    s += "  - {id: u" + std::to_string(u) + ", nodes: {\"127.0.0.1:" + std::to_string(8000 + u) +
         "\": 1}}\n";
  }
  s += "#END\n";
  return s;
}

void BM_YamlWhole(benchmark::State& state) {
  std::string text = RoutesYaml(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto docs = config::YamlDocument::ParseAll(text, nullptr, nullptr);
    benchmark::DoNotOptimize(docs);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_YamlWhole)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_YamlSplit(benchmark::State& state) {
  std::string text = RoutesYaml(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto doc = config::YamlDocument::ParseSplit(text, 2);
    if (!doc) state.SkipWithError("split declined");
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_YamlSplit)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ParseRoutesConfig(benchmark::State& state) {
  std::string text = RoutesYaml(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto r = config::ParseRoutesConfig(text, "apisix.yaml");
    if (!r.value || !r.errors.empty()) state.SkipWithError("config rejected");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParseRoutesConfig)
    ->Arg(10000)
    ->Arg(50000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same parse keeping each item's source for the control API (what the daemon does while
// the control API is on): the price of AppendYamlAsJson over BM_ParseRoutesConfig.
void BM_ParseRoutesConfigKeepSource(benchmark::State& state) {
  std::string text = RoutesYaml(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto r = config::ParseRoutesConfig(text, "apisix.yaml", {.keep_source = true});
    if (!r.value || !r.errors.empty()) state.SkipWithError("config rejected");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParseRoutesConfigKeepSource)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The control API's view: Build() as a reload runs it (moving the sources), then the first
// GET /v1/routes (every route parsed, shaped and rendered once).
void BM_ControlViewBuild(benchmark::State& state) {
  std::string text = RoutesYaml(static_cast<int>(state.range(0)));
  auto parsed = config::ParseRoutesConfig(text, "apisix.yaml", {.keep_source = true});
  for (auto _ : state) {
    state.PauseTiming();
    config::RoutesConfig copy = *parsed.value;
    state.ResumeTiming();
    auto view = admin::ControlView::Build(copy, {}, 1);
    benchmark::DoNotOptimize(view);
    state.PauseTiming();
    view.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ControlViewBuild)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ControlViewListRoutes(benchmark::State& state) {
  std::string text = RoutesYaml(static_cast<int>(state.range(0)));
  auto parsed = config::ParseRoutesConfig(text, "apisix.yaml", {.keep_source = true});
  for (auto _ : state) {
    state.PauseTiming();
    config::RoutesConfig copy = *parsed.value;
    auto view = admin::ControlView::Build(copy, {}, 1);
    state.ResumeTiming();
    benchmark::DoNotOptimize(view->List(admin::ControlView::Kind::kRoutes).size());
    state.PauseTiming();
    view.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ControlViewListRoutes)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BuildSnapshot(benchmark::State& state) {
  auto gateway =
      config::ParseGatewayConfig("apisix:\n  node_listen: 9080\n", "config.yaml", ".", 2);
  auto routes = config::ParseRoutesConfig(RoutesYaml(static_cast<int>(state.range(0))), "a.yaml");
  if (!gateway.value || !routes.value) {
    state.SkipWithError("config rejected");
    return;
  }
  uint64_t version = 0;
  for (auto _ : state) {
    proxy::BuildReport report;
    auto snapshot = proxy::BuildSnapshot(
        {&*gateway.value, &*routes.value, nullptr, ++version, nullptr}, &report);
    benchmark::DoNotOptimize(snapshot);
  }
}
BENCHMARK(BM_BuildSnapshot)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReloadSnapshot(benchmark::State& state) {
  auto gateway =
      config::ParseGatewayConfig("apisix:\n  node_listen: 9080\n", "config.yaml", ".", 2);
  auto routes =
      config::ParseRoutesConfig(RoutesYaml(static_cast<int>(state.range(0)), true), "a.yaml");
  if (!gateway.value || !routes.value) {
    state.SkipWithError("config rejected");
    return;
  }
  proxy::PluginRegistry registry;
  registry.Register(std::make_unique<plugins::ip_restriction::IpRestrictionFactory>());
  registry.Register(std::make_unique<plugins::request_id::RequestIdFactory>());
  registry.Register(std::make_unique<plugins::response_rewrite::ResponseRewriteFactory>());
  metrics::Registry metrics(2);
  uint64_t version = 0;
  auto build = [&](const proxy::Snapshot* previous) {
    proxy::BuildReport report;
    auto snapshot = proxy::BuildSnapshot(
        {&*gateway.value, &*routes.value, previous, ++version, &registry, &metrics}, &report);
    if (!report.errors.empty()) state.SkipWithError("build failed");
    return snapshot;
  };
  proxy::SnapshotConstSharedPtr current = build(nullptr);
  for (auto _ : state) {
    proxy::SnapshotConstSharedPtr next = build(current.get());
    // The replaced snapshot is freed on the control thread after the reload: not timed.
    state.PauseTiming();
    current = std::move(next);
    state.ResumeTiming();
  }
  state.counters["instances"] = static_cast<double>(current->plugin_instances.size());
  state.counters["index_bytes"] = static_cast<double>(current->plugin_instances.memory_bytes());
}
BENCHMARK(BM_ReloadSnapshot)->Arg(50000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace turnpike

BENCHMARK_MAIN();
