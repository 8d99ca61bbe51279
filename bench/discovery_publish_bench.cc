// What one provider answer of a changed node set costs the control thread in the Directory
// (discovery/directory.h): the compare with the last answer, the schema check, the node set
// built (addresses parsed, IP and Host texts written) and compared with the slot's, the store,
// and the replaced set released. Under node churn (bench/node_churn.sh: 10k nodes, a change
// every 100 ms) this runs ten times a second per service, on the gateway's control thread.
//
// BM_PublishChanged/N: N IPv4 nodes, each answer swapping 1/40 of them (one EndpointSlice of
// 250 at 10k) for others, in turn. BM_PublishSame/N: the same list again (dropped as equal).
// BM_PublishPartsChanged/N and BM_PublishPartsSame/N: the same answers in 40 parts
// (DiscoverySink::PublishParts, as the kubernetes provider sends them): one part new per change.
//
// Before the Directory, the kubernetes provider parses each watch event and reads its nodes:
// BM_SliceEventSimdjson/N parses an EndpointSlice event of N endpoints (with the fields a real
// cluster sends: targetRef, nodeName, zone) with a reused simdjson parser, as the informer
// does, and reads its nodes (ReadEndpointSlice). BM_SliceEventNlohmann is the
// nlohmann::json::parse and destructor it replaced (the nodes not even read). The nacos and
// consul providers parse their answers with simdjson too (discovery/json_answer.h):
// BM_NacosAnswer/N reads the nodes of an instance list of N instances (ParseNacosInstances),
// BM_NacosAnswerNlohmann/N is nlohmann's parse of the same text and the same reads, as before.
#include <benchmark/benchmark.h>
#include <uv.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "discovery/directory.h"
#include "discovery/kubernetes_provider.h"
#include "discovery/nacos_api.h"
#include "discovery/parts.h"

namespace turnpike::discovery {
namespace {

class NoResolver final : public Resolver {
 public:
  uint64_t Resolve(const std::string&, Done) override { return 1; }
  void Cancel(uint64_t) override {}
};

class Provider final : public DiscoveryProvider {
 public:
  Status Start(const DiscoveryEnvironment& env) override {
    sink = env.sink;
    return Status::Ok();
  }
  void Watch(const ServiceRef&) override {}
  void Unwatch(const ServiceRef&) override {}
  void Stop() override {}
  DiscoverySink* sink = nullptr;
};

std::string Ip(int i) {
  return "127.66." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
}

// Runs a Directory watching one service of a provider; send(sink, service, k) publishes the
// k-th answer (k advances each iteration when `change`, stays 0 otherwise).
template <typename Send>
void RunDirectory(benchmark::State& state, bool change, size_t answers, Send send) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  NoResolver resolver;
  {
    Directory directory(&loop, &resolver);
    auto provider = std::make_unique<Provider>();
    Provider* p = provider.get();
    directory.AddProvider("kubernetes", std::move(provider));
    if (!directory.Start().ok()) state.SkipWithError("start");
    auto source = std::make_shared<NodeSource>();
    source->provider = "kubernetes";
    source->service.service_name = "default/churn:http";
    auto slot = std::make_shared<upstream::NodeSetSlot>();
    directory.Apply({Binding{"routes/churn", source, slot}});
    size_t k = 0;
    send(p->sink, source->service, k);
    const Directory::Stats before = directory.stats();
    for (auto _ : state) {
      if (change) k = (k + 1) % answers;
      send(p->sink, source->service, k);
      directory.ReleaseRetired();  // the tick's work, each time
    }
    const Directory::Stats& after = directory.stats();
    state.counters["stored"] = static_cast<double>(after.stored - before.stored);
    state.counters["nodes_made"] = benchmark::Counter(
        static_cast<double>(after.part_nodes_built - before.part_nodes_built),
        benchmark::Counter::kAvgIterations);
    directory.Stop();
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  uv_loop_close(&loop);
}

void Publish(benchmark::State& state, bool change) {
  const int n = static_cast<int>(state.range(0));
  const int block = std::max(1, n / 40);
  // Answers: a window of n addresses out of n + block, sliding by one block.
  std::vector<DiscoveredNodesConstSharedPtr> answers;
  for (int a = 0; a < 41; ++a) {
    auto nodes = std::make_shared<DiscoveredNodes>();
    for (int i = 0; i < n + block; ++i) {
      bool out = i / block == a % 41;  // one block left out, a different one each time
      if (!out && static_cast<int>(nodes->size()) < n) nodes->push_back({Ip(i), 18080, 1, 0});
    }
    answers.push_back(std::move(nodes));
  }
  RunDirectory(state, change, answers.size(),
               [&answers](DiscoverySink* sink, const ServiceRef& service, size_t k) {
                 sink->Publish(service, answers[k]);
               });
}

// The same change as a provider that publishes parts sends it (kubernetes: one sorted list
// per EndpointSlice, DiscoverySink::PublishParts): 40 parts of n / 40 nodes out of 41, one part
// left out in turn, the others the same lists (pointers) as in the last answer.
void PublishParts(benchmark::State& state, bool change) {
  const int n = static_cast<int>(state.range(0));
  const int size = std::max(1, n / 40);
  std::vector<DiscoveredNodesConstSharedPtr> parts;
  for (int b = 0; b < 41; ++b) {
    auto part = std::make_shared<DiscoveredNodes>();
    for (int j = 0; j < size; ++j) {
      part->push_back({"10." + std::to_string(b) + "." + std::to_string(j / 250) + "." +
                           std::to_string(j % 250 + 1),
                       18080, 1, 0});
    }
    std::sort(part->begin(), part->end(), NodeKeyLess);
    parts.push_back(std::move(part));
  }
  std::vector<std::vector<DiscoveredNodesConstSharedPtr>> answers(41);
  for (int a = 0; a < 41; ++a) {
    for (int b = 0; b < 41; ++b) {
      if (b != a) answers[a].push_back(parts[b]);
    }
  }
  RunDirectory(state, change, answers.size(),
               [&answers](DiscoverySink* sink, const ServiceRef& service, size_t k) {
                 sink->PublishParts(service, answers[k]);
               });
}

std::string SliceEvent(int endpoints) {
  std::string s = R"({"type":"MODIFIED","object":{"kind":"EndpointSlice","apiVersion":)"
                  R"("discovery.k8s.io/v1","addressType":"IPv4","metadata":{"name":"churn-x7k2p",)"
                  R"("namespace":"default","resourceVersion":"48213","labels":)"
                  R"({"kubernetes.io/service-name":"churn"}},"ports":[{"name":"http",)"
                  R"("port":18080,"protocol":"TCP"}],"endpoints":[)";
  for (int i = 0; i < endpoints; ++i) {
    if (i > 0) s += ',';
    s += R"({"addresses":[")" + Ip(i) +
         R"("],"conditions":{"ready":true,"serving":true,)"
         R"("terminating":false},"nodeName":"node-)" +
         std::to_string(i % 7) + R"(","targetRef":{"kind":"Pod","name":"churn-5d8f-)" +
         std::to_string(i) + R"(","namespace":"default","uid":"0b6c2a5e-1f6d-4c9e-9a51-)" +
         std::to_string(100000 + i) + R"("},"zone":"zone-a"})";
  }
  return s + "]}}";
}

void BM_SliceEventNlohmann(benchmark::State& state) {
  const std::string text = SliceEvent(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void BM_SliceEventSimdjson(benchmark::State& state) {
  const std::string text = SliceEvent(static_cast<int>(state.range(0)));
  simdjson::dom::parser parser;
  std::string ns, key, part;
  KubePortNodes nodes;
  size_t read = 0;
  for (auto _ : state) {
    simdjson::dom::element event;
    simdjson::dom::element object;
    if (parser.parse(text).get(event) != simdjson::SUCCESS ||
        event["object"].get(object) != simdjson::SUCCESS ||
        !ReadEndpointSlice(object, 1, &ns, &key, &part, &nodes)) {
      state.SkipWithError("the event did not parse");
      break;
    }
    read = nodes["http"].size();
  }
  state.counters["nodes"] = static_cast<double>(read);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK(BM_SliceEventSimdjson)->Arg(250)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SliceEventNlohmann)->Arg(250)->Unit(benchmark::kMicrosecond);

// An ns/instance/list answer of `n` instances, with the fields Nacos sends.
std::string NacosAnswer(int n) {
  std::string s = R"({"name":"DEFAULT_GROUP@@churn","groupName":"DEFAULT_GROUP","clusters":"",)"
                  R"("cacheMillis":10000,"hosts":[)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += ',';
    s += R"({"instanceId":")" + Ip(i) + R"(#8080#DEFAULT#DEFAULT_GROUP@@churn","ip":")" + Ip(i) +
         R"(","port":8080,"weight":1.0,"healthy":true,"enabled":true,"ephemeral":true,)"
         R"("clusterName":"DEFAULT","serviceName":"DEFAULT_GROUP@@churn","metadata":)"
         R"({"version":"v1","zone":"a"},"instanceHeartBeatInterval":5000,)"
         R"("instanceHeartBeatTimeOut":15000,"ipDeleteTimeout":30000})";
  }
  return s + R"(],"lastRefTime":1733140000000,"checksum":"","allIPs":false,"reachProtectionThreshold":false,"valid":true})";
}

void BM_NacosAnswer(benchmark::State& state) {
  const std::string text = NacosAnswer(static_cast<int>(state.range(0)));
  DiscoveredNodes nodes;
  std::string error;
  for (auto _ : state) {
    if (!ParseNacosInstances(text, 1, &nodes, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
  }
  state.counters["nodes"] = static_cast<double>(nodes.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void BM_NacosAnswerNlohmann(benchmark::State& state) {
  const std::string text = NacosAnswer(static_cast<int>(state.range(0)));
  DiscoveredNodes nodes;
  for (auto _ : state) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    nodes.clear();
    for (const nlohmann::json& h : j["hosts"]) {
      nodes.push_back(DiscoveredNode{h["ip"].get<std::string>(), h["port"].get<int>(),
                                     static_cast<int>(h["weight"].get<double>()), 0});
    }
  }
  state.counters["nodes"] = static_cast<double>(nodes.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK(BM_NacosAnswer)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NacosAnswerNlohmann)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_PublishChanged(benchmark::State& state) { Publish(state, true); }
void BM_PublishSame(benchmark::State& state) { Publish(state, false); }
BENCHMARK(BM_PublishChanged)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PublishSame)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);
void BM_PublishPartsChanged(benchmark::State& state) { PublishParts(state, true); }
void BM_PublishPartsSame(benchmark::State& state) { PublishParts(state, false); }
BENCHMARK(BM_PublishPartsChanged)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PublishPartsSame)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace turnpike::discovery

BENCHMARK_MAIN();
