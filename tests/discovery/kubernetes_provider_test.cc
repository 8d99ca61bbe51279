// The kubernetes discovery provider on a real loop against the FAKE Kubernetes API server of
// tests/support (fake_kube_apiserver.h; the real one is not installable here): list then
// watch, events picked up as they happen, 410 Gone (in the stream and as the HTTP status)
// answered by a relist, the API server down (last good nodes kept) and back, the bearer token
// (inline and from a file that rotates), selectors, pagination, EndpointSlices, several
// clusters; and the config rules of `discovery.kubernetes`.
#include "discovery/kubernetes_provider.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "discovery/describe.h"
#include "support/fake_kube_apiserver.h"
#include "support/files.h"
#include "support/uv_loop.h"

namespace turnpike::discovery {
namespace {

using testing::FakeKubeApiServer;
using testing::RunLoopUntil;
using Kind = FakeKubeApiServer::Kind;
using std::chrono::milliseconds;
using std::chrono::seconds;

class RecordingSink final : public DiscoverySink {
 public:
  void Publish(const ServiceRef& service, DiscoveredNodesConstSharedPtr nodes) override {
    published.emplace_back(service.service_name, nodes != nullptr ? *nodes : DiscoveredNodes{});
  }
  // Records the parts, then publishes them merged (the sink's default).
  void PublishParts(const ServiceRef& service,
                    std::vector<DiscoveredNodesConstSharedPtr> parts) override {
    last_parts[service.service_name] = parts;
    DiscoverySink::PublishParts(service, std::move(parts));
  }
  std::map<std::string, std::vector<DiscoveredNodesConstSharedPtr>> last_parts;
  // The last list published for `name`; nullopt when none was.
  std::optional<DiscoveredNodes> Last(const std::string& name) const {
    for (auto it = published.rbegin(); it != published.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    return std::nullopt;
  }
  int Count(const std::string& name) const {
    int n = 0;
    for (const auto& p : published) n += p.first == name;
    return n;
  }
  std::vector<std::pair<std::string, DiscoveredNodes>> published;
};

DiscoveredNodes Nodes(std::initializer_list<std::pair<const char*, int>> list, int weight = 50) {
  DiscoveredNodes out;
  for (const auto& [host, port] : list) out.push_back(DiscoveredNode{host, port, weight, 0});
  return out;
}

StatusOr<KubernetesConfig> Parse(const std::string& json) {
  return ParseKubernetesConfig(nlohmann::json::parse(json));
}

std::string ParseError(const std::string& json) {
  StatusOr<KubernetesConfig> c = Parse(json);
  return c.ok() ? "(ok)" : c.status().message();
}

class KubernetesProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    ASSERT_TRUE(api_.Start());
  }
  void TearDown() override {
    if (provider_ != nullptr) provider_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    provider_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  KubernetesClusterConfig Cluster(const FakeKubeApiServer& api) {
    KubernetesClusterConfig c;
    c.host = "127.0.0.1";
    c.port = api.port();
    c.token = "fake-token";
    c.retry_min_ms = 50;
    c.retry_max_ms = 200;
    return c;
  }
  void StartProvider(KubernetesConfig config) {
    provider_ = std::make_unique<KubernetesProvider>(std::move(config));
    ASSERT_TRUE(provider_->Start(DiscoveryEnvironment{&sink_, &loop_}).ok());
  }
  void StartProvider(KubernetesClusterConfig cluster) {
    KubernetesConfig config;
    config.clusters.push_back(std::move(cluster));
    StartProvider(std::move(config));
  }
  // Runs the loop until `done` (a 5 ms tick wakes it while the fake server's threads work).
  bool RunUntil(const std::function<bool()>& done, milliseconds limit = seconds(5)) {
    return RunLoopUntil(&loop_, done, limit, milliseconds(5));
  }
  void RunFor(milliseconds d) {
    RunUntil([] { return false; }, d);
  }
  bool WaitFor(const std::string& name, const DiscoveredNodes& nodes,
               milliseconds limit = seconds(5)) {
    return RunUntil([&] { return sink_.Last(name) == nodes; }, limit);
  }
  // Watches `name` and runs until the provider is ready and answered it.
  void WatchReady(const std::string& name) {
    provider_->Watch(ServiceRef{name, {}});
    ASSERT_TRUE(RunUntil([&] { return provider_->ready() && sink_.Last(name).has_value(); }))
        << name << ": state " << provider_->informer(0).state();
  }
  void Web(const std::vector<std::string>& ips, const std::string& ns = "default") {
    api_.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints(ns, "web", ips, {{"http", 8080}}));
  }

  uv_loop_t loop_{};
  FakeKubeApiServer api_;
  RecordingSink sink_;
  std::unique_ptr<KubernetesProvider> provider_;
};

TEST_F(KubernetesProviderTest, ListsThenFollowsTheWatch) {
  Web({"10.0.0.2", "10.0.0.1"});
  ASSERT_NO_FATAL_FAILURE(StartProvider(Cluster(api_)));
  EXPECT_FALSE(provider_->ready());
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  // Sorted by host; APISIX's default weight.
  EXPECT_EQ(sink_.Last("default/web:http"), Nodes({{"10.0.0.1", 8080}, {"10.0.0.2", 8080}}));
  ASSERT_TRUE(api_.WaitForOpenWatches(1, seconds(5)));
  auto reqs = api_.requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].target, "/api/v1/endpoints?limit=120");
  EXPECT_EQ(reqs[0].authorization, "Bearer fake-token");
  EXPECT_EQ(reqs[1].target.rfind("/api/v1/endpoints?watch=true&allowWatchBookmarks=true&"
                                 "timeoutSeconds=",
                                 0),
            0u)
      << reqs[1].target;
  EXPECT_NE(reqs[1].target.find("&resourceVersion=101"), std::string::npos) << reqs[1].target;
  // An address added, then the object deleted, each picked up from the stream.
  Web({"10.0.0.1", "10.0.0.2", "10.0.0.3"});
  ASSERT_TRUE(WaitFor("default/web:http",
                      Nodes({{"10.0.0.1", 8080}, {"10.0.0.2", 8080}, {"10.0.0.3", 8080}})))
      << Describe(sink_.Last("default/web:http"));
  api_.Delete(Kind::kEndpoints, "default", "web");
  ASSERT_TRUE(WaitFor("default/web:http", {})) << Describe(sink_.Last("default/web:http"));
  EXPECT_EQ(api_.lists(), 1);  // all of it through one watch
  EXPECT_EQ(provider_->informer(0).stats().events, 2u);
}

TEST_F(KubernetesProviderTest, PortsByNameTargetPortOrNumberAndNotReadyAddressesLeftOut) {
  nlohmann::json ep = FakeKubeApiServer::Endpoints("default", "multi", {"10.0.0.1"},
                                                   {{"http", 80}, {"", 9000}}, {"10.0.0.9"});
  ep["subsets"][0]["ports"].push_back({{"port", 9100}, {"targetPort", 9101}});
  api_.Apply(Kind::kEndpoints, ep);
  ASSERT_NO_FATAL_FAILURE(StartProvider(Cluster(api_)));
  for (const char* name : {"default/multi:http", "default/multi:9000", "default/multi:9101",
                           "default/multi:80", "default/none:http", "bad-name"}) {
    provider_->Watch(ServiceRef{name, {}});
  }
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }));
  EXPECT_EQ(sink_.Last("default/multi:http"), Nodes({{"10.0.0.1", 80}}));
  EXPECT_EQ(sink_.Last("default/multi:9000"), Nodes({{"10.0.0.1", 9000}}));
  EXPECT_EQ(sink_.Last("default/multi:9101"), Nodes({{"10.0.0.1", 9100}}));
  // A named port is not found by its number; unknown objects and names have no nodes.
  EXPECT_EQ(sink_.Last("default/multi:80"), DiscoveredNodes{});
  EXPECT_EQ(sink_.Last("default/none:http"), DiscoveredNodes{});
  EXPECT_EQ(sink_.Last("bad-name"), DiscoveredNodes{});
  // A later Watch is answered from memory at once.
  provider_->Watch(ServiceRef{"default/multi:9000#2", {}});
  provider_->Watch(ServiceRef{"default/multi:http", {{"x", "y"}}});
  EXPECT_EQ(sink_.published.back().second, Nodes({{"10.0.0.1", 80}}));
}

TEST_F(KubernetesProviderTest, NothingPublishedBeforeTheFirstList) {
  api_.set_token("other");
  Web({"10.0.0.1"});
  ASSERT_NO_FATAL_FAILURE(StartProvider(Cluster(api_)));
  provider_->Watch(ServiceRef{"default/web:http", {}});
  RunFor(milliseconds(300));
  EXPECT_FALSE(provider_->ready());
  EXPECT_FALSE(sink_.Last("default/web:http").has_value());
  EXPECT_GE(provider_->informer(0).stats().failures, 2u);  // 401s, retried with back-off
  api_.set_token("fake-token");
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.1", 8080}})));
  EXPECT_TRUE(provider_->ready());
}

TEST_F(KubernetesProviderTest, TokenFileIsReadBeforeEachRequest) {
  testing::TempDir dir;
  std::string file = dir.File("token");
  ASSERT_TRUE(testing::WriteFile(file, "first-token\n"));
  api_.set_token("first-token");
  Web({"10.0.0.1"});
  KubernetesClusterConfig c = Cluster(api_);
  c.token.clear();
  c.token_file = file;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  ASSERT_TRUE(api_.WaitForOpenWatches(1, seconds(5)));
  // The token rotates; the next watch uses the new one.
  ASSERT_TRUE(testing::WriteFile(file, "second-token"));
  api_.set_token("second-token");
  api_.EndWatches();
  ASSERT_TRUE(RunUntil([&] { return api_.watches() == 2; }));
  EXPECT_EQ(api_.requests().back().authorization, "Bearer second-token");
  EXPECT_EQ(api_.requests().back().status, 200);
  Web({"10.0.0.2"});
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.2", 8080}})));
  EXPECT_EQ(provider_->informer(0).stats().failures, 0u);
}

TEST_F(KubernetesProviderTest, GoneInTheStreamRelists) {
  Web({"10.0.0.1"});
  ASSERT_NO_FATAL_FAILURE(StartProvider(Cluster(api_)));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  ASSERT_TRUE(api_.WaitForOpenWatches(1, seconds(5)));
  api_.ExpireWatches();
  ASSERT_TRUE(RunUntil([&] { return api_.lists() == 2 && api_.open_watches() == 1; }));
  EXPECT_EQ(provider_->informer(0).stats().gone, 1u);
  EXPECT_EQ(provider_->informer(0).stats().failures, 0u);
  Web({"10.0.0.5"});
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.5", 8080}})));
}

TEST_F(KubernetesProviderTest, ApiServerDownKeepsTheLastNodesThenGoneAsHttpStatusRelists) {
  FakeKubeApiServer::Options o;
  o.gone_as_http_status = true;
  FakeKubeApiServer api(o);
  ASSERT_TRUE(api.Start());
  api.Apply(Kind::kEndpoints,
            FakeKubeApiServer::Endpoints("default", "web", {"10.0.0.1"}, {{"http", 8080}}));
  api.Apply(Kind::kEndpoints,
            FakeKubeApiServer::Endpoints("default", "old", {"10.0.0.7"}, {{"http", 8080}}));
  ASSERT_NO_FATAL_FAILURE(StartProvider(Cluster(api)));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  provider_->Watch(ServiceRef{"default/old:http", {}});
  ASSERT_TRUE(api.WaitForOpenWatches(1, seconds(5)));
  size_t before = sink_.published.size();
  api.Stop();
  RunFor(milliseconds(400));  // several failed attempts: nothing published
  EXPECT_EQ(sink_.published.size(), before);
  EXPECT_GE(provider_->informer(0).stats().failures, 2u);
  // Meanwhile the cluster changed and compacted its history: the re-watch gets 410 Gone and
  // the provider lists again, which also drops the object deleted while it was away.
  api.Apply(Kind::kEndpoints,
            FakeKubeApiServer::Endpoints("default", "web", {"10.0.0.2"}, {{"http", 8080}}));
  api.Delete(Kind::kEndpoints, "default", "old");
  api.Compact();
  ASSERT_TRUE(api.Start());
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.2", 8080}})))
      << Describe(sink_.Last("default/web:http"));
  ASSERT_TRUE(WaitFor("default/old:http", {}));
  EXPECT_EQ(provider_->informer(0).stats().gone, 1u);
  EXPECT_EQ(api.lists(), 2);
  ASSERT_TRUE(api.WaitForOpenWatches(1, seconds(5)));
  provider_->Stop();
  uv_run(&loop_, UV_RUN_NOWAIT);
}

TEST_F(KubernetesProviderTest, WatchTimeoutAndBookmarksMoveTheVersion) {
  FakeKubeApiServer::Options o;
  o.bookmark_interval_ms = 50;
  FakeKubeApiServer api(o);
  ASSERT_TRUE(api.Start());
  api.Apply(Kind::kEndpoints,
            FakeKubeApiServer::Endpoints("default", "web", {"10.0.0.1"}, {{"http", 8080}}));
  KubernetesClusterConfig c = Cluster(api);
  c.watch_timeout_s = 1;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  // A change elsewhere moves the version; bookmarks carry it to the informer.
  api.Apply(Kind::kEndpointSlices, FakeKubeApiServer::EndpointSlice("a", "b", "c", {}, {}));
  ASSERT_TRUE(RunUntil([&] { return provider_->informer(0).resource_version() == "102"; }))
      << provider_->informer(0).resource_version();
  EXPECT_GT(provider_->informer(0).stats().bookmarks, 0u);
  // timeoutSeconds=1: the stream ends, and the next watch continues from that version.
  ASSERT_TRUE(RunUntil([&] { return api.watches() >= 2; }, seconds(5)));
  auto reqs = api.requests();
  EXPECT_NE(reqs.back().target.find("timeoutSeconds=1&resourceVersion=102"), std::string::npos)
      << reqs.back().target;
  EXPECT_EQ(api.lists(), 1);
  provider_->Stop();
  uv_run(&loop_, UV_RUN_NOWAIT);
}

TEST_F(KubernetesProviderTest, PaginatedListIsAppliedWhole) {
  for (int i = 0; i < 5; ++i) {
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "svc" + std::to_string(i),
                                            {"10.0.0." + std::to_string(i + 1)}, {{"http", 80}}));
  }
  KubernetesClusterConfig c = Cluster(api_);
  c.list_limit = 2;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/svc4:http"));
  EXPECT_EQ(sink_.Last("default/svc4:http"), Nodes({{"10.0.0.5", 80}}));
  EXPECT_EQ(provider_->informer(0).stats().pages, 3u);
  EXPECT_EQ(provider_->objects(0), 5u);
  auto reqs = api_.requests();
  ASSERT_GE(reqs.size(), 3u);
  EXPECT_EQ(reqs[1].target.find("/api/v1/endpoints?limit=2&continue="), 0u) << reqs[1].target;
}

TEST_F(KubernetesProviderTest, NamespaceEqualAndLabelSelectorGoToTheApiServer) {
  api_.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints("default", "web", {"10.0.0.1"},
                                                            {{"http", 80}}, {}, {{"app", "web"}}));
  api_.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints("prod", "web", {"10.0.1.1"},
                                                            {{"http", 80}}, {}, {{"app", "web"}}));
  api_.Apply(Kind::kEndpoints, FakeKubeApiServer::Endpoints("default", "db", {"10.0.0.2"},
                                                            {{"http", 80}}, {}, {{"app", "db"}}));
  KubernetesClusterConfig c = Cluster(api_);
  c.namespace_filter = NamespaceFilter::kEqual;
  c.namespace_value = "default";
  c.label_selector = "app in (web,api)";
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  EXPECT_EQ(provider_->objects(0), 1u);
  EXPECT_EQ(api_.requests()[0].target,
            "/api/v1/endpoints?limit=120&labelSelector=app%20in%20%28web%2Capi%29"
            "&fieldSelector=metadata.namespace%3Ddefault");
  provider_->Watch(ServiceRef{"prod/web:http", {}});
  provider_->Watch(ServiceRef{"default/db:http", {}});
  EXPECT_EQ(sink_.Last("prod/web:http"), DiscoveredNodes{});
  EXPECT_EQ(sink_.Last("default/db:http"), DiscoveredNodes{});
}

TEST_F(KubernetesProviderTest, NamespaceMatchAndNotMatchAreWholeNamespaceRegexes) {
  for (const char* ns : {"default", "my-app", "my-app2", "other"}) {
    api_.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints(ns, "web", {"10.0.0.1"}, {{"http", 80}}));
  }
  KubernetesClusterConfig c = Cluster(api_);
  c.namespace_filter = NamespaceFilter::kMatch;
  c.namespace_regexes = {"default", "^my-[a-z]+$", "oth"};  // "oth" matches only a part
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }));
  EXPECT_EQ(provider_->objects(0), 2u);  // default, my-app
  provider_->Stop();
  RunFor(milliseconds(10));
  provider_.reset();

  c.namespace_filter = NamespaceFilter::kNotMatch;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }));
  EXPECT_EQ(provider_->objects(0), 2u);  // my-app2, other
  provider_->Watch(ServiceRef{"other/web:http", {}});
  EXPECT_EQ(sink_.Last("other/web:http"), Nodes({{"10.0.0.1", 80}}));
}

TEST_F(KubernetesProviderTest, EndpointSlicesOfAServiceAreMergedAndOnlyReadyOnesCount) {
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice(
                 "default", "web-a", "web", {{"10.0.0.3"}, {"10.0.0.9", false}}, {{"http", 8080}}));
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-b", "web", {{"10.0.0.1"}},
                                              {{"http", 8080}}));
  api_.Apply(Kind::kEndpoints,  // not read with watch_endpoint_slices
             FakeKubeApiServer::Endpoints("default", "web", {"10.9.9.9"}, {{"http", 8080}}));
  KubernetesClusterConfig c = Cluster(api_);
  c.watch_endpoint_slices = true;
  c.default_weight = 7;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  EXPECT_EQ(sink_.Last("default/web:http"), Nodes({{"10.0.0.1", 8080}, {"10.0.0.3", 8080}}, 7));
  EXPECT_EQ(api_.requests()[0].target, "/apis/discovery.k8s.io/v1/endpointslices?limit=120");
  // One slice goes away; the other's endpoints stay.
  api_.Delete(Kind::kEndpointSlices, "default", "web-a");
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.1", 8080}}, 7)))
      << Describe(sink_.Last("default/web:http"));
  // An endpoint turning ready is picked up.
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-b", "web",
                                              {{"10.0.0.1"}, {"10.0.0.2"}}, {{"http", 8080}}));
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.1", 8080}, {"10.0.0.2", 8080}}, 7)));
}

// An object sent again with the nodes it had (a label changed, an endpoint not ready added)
// changes no service: nothing is merged or published; a real change is.
TEST_F(KubernetesProviderTest, AnObjectWithTheSameNodesPublishesNothing) {
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-a", "web", {{"10.0.0.3"}},
                                              {{"http", 8080}}));
  KubernetesClusterConfig c = Cluster(api_);
  c.watch_endpoint_slices = true;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  const int published = sink_.Count("default/web:http");
  const uint64_t events = provider_->informer(0).stats().events;
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-a", "web",
                                              {{"10.0.0.3"}, {"10.0.0.4", false}}, {{"http", 8080}},
                                              {{"team", "a"}}));
  ASSERT_TRUE(RunUntil([&] { return provider_->informer(0).stats().events > events; }));
  EXPECT_EQ(sink_.Count("default/web:http"), published);
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-a", "web",
                                              {{"10.0.0.3"}, {"10.0.0.4"}}, {{"http", 8080}}));
  ASSERT_TRUE(WaitFor("default/web:http", Nodes({{"10.0.0.3", 8080}, {"10.0.0.4", 8080}})))
      << Describe(sink_.Last("default/web:http"));
  EXPECT_EQ(sink_.Count("default/web:http"), published + 1);
}

// Each slice is sorted once when it arrives and a service's slices are merged per change:
// whatever the slices hold, in whatever order, the published list is sorted by host then port.
TEST_F(KubernetesProviderTest, ManySlicesMergeIntoOneSortedList) {
  std::mt19937 rng(11);
  std::vector<std::string> ips;
  for (int i = 0; i < 300; ++i)
    ips.push_back("10.0." + std::to_string(i % 7) + "." + std::to_string(i));
  std::shuffle(ips.begin(), ips.end(), rng);
  DiscoveredNodes want;
  // 7 slices of uneven sizes (an odd count of runs, one empty), two ports of the same name.
  const size_t cuts[] = {0, 10, 10, 90, 91, 200, 260, 300};
  for (int s = 0; s < 7; ++s) {
    std::vector<FakeKubeApiServer::SliceEndpoint> endpoints;
    for (size_t i = cuts[s]; i < cuts[s + 1]; ++i) {
      endpoints.push_back({ips[i]});
      want.push_back({ips[i], 8000 + s % 2, 1, 0});
    }
    api_.Apply(Kind::kEndpointSlices,
               FakeKubeApiServer::EndpointSlice("default", "web-" + std::to_string(s), "web",
                                                endpoints, {{"http", 8000 + s % 2}}));
  }
  std::sort(want.begin(), want.end(), [](const DiscoveredNode& a, const DiscoveredNode& b) {
    return a.host != b.host ? a.host < b.host : a.port < b.port;
  });
  KubernetesClusterConfig c = Cluster(api_);
  c.watch_endpoint_slices = true;
  c.default_weight = 1;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  EXPECT_EQ(sink_.Last("default/web:http"), want);
  // A change of one slice (the churn benchmark's step): still one sorted list.
  std::vector<FakeKubeApiServer::SliceEndpoint> moved = {{"10.9.0.1"}, {"10.0.0.0"}, {"9.9.9.9"}};
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-3", "web", moved, {{"http", 8001}}));
  std::erase_if(want, [](const DiscoveredNode& n) { return n.port == 8001; });
  for (int s = 1; s < 7; s += 2) {
    if (s == 3) continue;
    for (size_t i = cuts[s]; i < cuts[s + 1]; ++i) want.push_back({ips[i], 8001, 1, 0});
  }
  for (const auto& e : moved) want.push_back({e.ip, 8001, 1, 0});
  std::sort(want.begin(), want.end(), [](const DiscoveredNode& a, const DiscoveredNode& b) {
    return a.host != b.host ? a.host < b.host : a.port < b.port;
  });
  ASSERT_TRUE(WaitFor("default/web:http", want)) << Describe(sink_.Last("default/web:http"));
}

// The provider publishes one part per slice, and a slice the event did not change as the same
// list (pointer): the Directory then makes only the changed slice's nodes.
TEST_F(KubernetesProviderTest, UnchangedSlicesArePublishedAsTheSameParts) {
  for (int s = 0; s < 3; ++s) {
    api_.Apply(Kind::kEndpointSlices,
               FakeKubeApiServer::EndpointSlice(
                   "default", "web-" + std::to_string(s), "web",
                   {{"10.0." + std::to_string(s) + ".2"}, {"10.0." + std::to_string(s) + ".1"}},
                   {{"http", 8000}}));
  }
  KubernetesClusterConfig c = Cluster(api_);
  c.watch_endpoint_slices = true;
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  const std::vector<DiscoveredNodesConstSharedPtr> before = sink_.last_parts["default/web:http"];
  ASSERT_EQ(before.size(), 3u);
  for (const auto& part : before) {
    ASSERT_EQ(part->size(), 2u);
    EXPECT_LT((*part)[0].host, (*part)[1].host) << "each part sorted";
  }
  api_.Apply(Kind::kEndpointSlices,
             FakeKubeApiServer::EndpointSlice("default", "web-1", "web", {{"10.0.1.9"}},
                                              {{"http", 8000}}));
  ASSERT_TRUE(RunUntil([&] { return sink_.last_parts["default/web:http"] != before; }));
  const std::vector<DiscoveredNodesConstSharedPtr>& after = sink_.last_parts["default/web:http"];
  ASSERT_EQ(after.size(), 3u);
  int same = 0;
  for (const auto& part : after) same += std::count(before.begin(), before.end(), part);
  EXPECT_EQ(same, 2) << "the two slices the event left alone";
  EXPECT_EQ(sink_.Last("default/web:http")->size(), 5u);
}

TEST_F(KubernetesProviderTest, SeveralClustersByIdInTheServiceName) {
  FakeKubeApiServer second;
  ASSERT_TRUE(second.Start());
  second.set_token("second-token");
  Web({"10.0.0.1"});
  second.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "web", {"10.1.0.1"}, {{"http", 8080}}));
  KubernetesConfig config;
  config.multi = true;
  config.clusters.push_back(Cluster(api_));
  config.clusters.back().id = "one";
  config.clusters.push_back(Cluster(second));
  config.clusters.back().id = "two";
  config.clusters.back().token = "second-token";
  ASSERT_NO_FATAL_FAILURE(StartProvider(std::move(config)));
  for (const char* name : {"one/default/web:http", "two/default/web:http", "three/default/web:http",
                           "default/web:http"}) {
    provider_->Watch(ServiceRef{name, {}});
  }
  ASSERT_TRUE(RunUntil([&] { return provider_->ready(); }));
  EXPECT_EQ(sink_.Last("one/default/web:http"), Nodes({{"10.0.0.1", 8080}}));
  EXPECT_EQ(sink_.Last("two/default/web:http"), Nodes({{"10.1.0.1", 8080}}));
  EXPECT_EQ(sink_.Last("three/default/web:http"), DiscoveredNodes{});
  EXPECT_EQ(sink_.Last("default/web:http"), DiscoveredNodes{});
  second.Apply(Kind::kEndpoints,
               FakeKubeApiServer::Endpoints("default", "web", {"10.1.0.2"}, {{"http", 8080}}));
  ASSERT_TRUE(WaitFor("two/default/web:http", Nodes({{"10.1.0.2", 8080}})));
  EXPECT_EQ(sink_.Last("one/default/web:http"), Nodes({{"10.0.0.1", 8080}}));
  nlohmann::json dump = provider_->Dump();
  ASSERT_EQ(dump["endpoints"].size(), 2u);
  EXPECT_EQ(dump["endpoints"][1]["id"], "two");
  EXPECT_EQ(dump["endpoints"][1]["endpoints"][0]["name"], "default/web");
  EXPECT_EQ(nlohmann::json::parse(dump["endpoints"][1]["endpoints"][0]["value"].get<std::string>()),
            nlohmann::json::parse(R"({"http":[{"host":"10.1.0.2","port":8080,"weight":50}]})"));
  provider_->Stop();
  uv_run(&loop_, UV_RUN_NOWAIT);
}

TEST_F(KubernetesProviderTest, UnwatchedServicesAreNotPublished) {
  Web({"10.0.0.1"});
  ASSERT_NO_FATAL_FAILURE(StartProvider(Cluster(api_)));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  provider_->Unwatch(ServiceRef{"default/web:http", {}});
  int before = sink_.Count("default/web:http");
  Web({"10.0.0.2"});
  ASSERT_TRUE(RunUntil([&] { return provider_->informer(0).stats().events == 1; }));
  EXPECT_EQ(sink_.Count("default/web:http"), before);
}

TEST_F(KubernetesProviderTest, AHostNameIsResolvedBeforeListing) {
  // c-ares reads /etc/hosts first; the fake listens on 127.0.0.1 only.
  std::string hosts = testing::ReadFile("/etc/hosts");
  if (hosts.find("127.0.0.1 localhost") == std::string::npos &&
      hosts.find("127.0.0.1\tlocalhost") == std::string::npos) {
    GTEST_SKIP() << "/etc/hosts does not map localhost to 127.0.0.1";
  }
  if (hosts.find("::1") != std::string::npos) GTEST_SKIP() << "localhost may resolve to ::1";
  Web({"10.0.0.1"});
  KubernetesClusterConfig c = Cluster(api_);
  c.host = "localhost";
  ASSERT_NO_FATAL_FAILURE(StartProvider(c));
  ASSERT_NO_FATAL_FAILURE(WatchReady("default/web:http"));
  EXPECT_EQ(sink_.Last("default/web:http"), Nodes({{"10.0.0.1", 8080}}));
}

TEST(KubernetesConfigTest, SingleClusterDefaultsAndEnv) {
  setenv("TP_K8S_HOST", "127.0.0.1", 1);
  setenv("TP_K8S_PORT", "6443", 1);
  setenv("TP_K8S_TOKEN", " abc.def \n", 1);
  StatusOr<KubernetesConfig> c = Parse(R"({
    "service": {"schema": "http", "host": "${TP_K8S_HOST}", "port": "${TP_K8S_PORT}"},
    "client": {"token": "${TP_K8S_TOKEN}"}})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c.value().multi);
  const KubernetesClusterConfig& k = c.value().clusters.at(0);
  EXPECT_EQ(k.host, "127.0.0.1");
  EXPECT_EQ(k.port, 6443);
  EXPECT_EQ(k.token, "abc.def");
  EXPECT_EQ(k.default_weight, 50);
  EXPECT_FALSE(k.watch_endpoint_slices);
  // No client: the pod's service-account token file.
  c = Parse(R"({"service": {"schema": "http", "host": "kube.local", "port": 8001}})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().clusters[0].token_file,
            "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(c.value().clusters[0].port, 8001);
  c = Parse(R"({"service": {"schema": "http", "host": "h", "port": "1"},
                "client": {"token_file": "${TP_K8S_HOST}"}, "default_weight": 0,
                "watch_endpoint_slices": true, "label_selector": "a=b",
                "namespace_selector": {"not_equal": "kube-system"}, "shared_size": "10m"})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().clusters[0].token_file, "127.0.0.1");
  EXPECT_EQ(c.value().clusters[0].default_weight, 0);
  EXPECT_TRUE(c.value().clusters[0].watch_endpoint_slices);
  EXPECT_EQ(c.value().clusters[0].namespace_filter, NamespaceFilter::kNotEqual);
}

TEST(KubernetesConfigTest, ErrorsNameTheField) {
  unsetenv("TP_K8S_UNSET");
  const std::string http = R"("service": {"schema": "http", "host": "h", "port": "80"})";
  EXPECT_EQ(ParseError("{}").rfind("service.schema: https is not supported yet", 0), 0u)
      << ParseError("{}");
  EXPECT_EQ(ParseError(R"({"service": {"schema": "ftp"}})"),
            "service.schema: must be one of http, https");
  EXPECT_EQ(
      ParseError(R"({"service": {"schema": "http", "host": "${TP_K8S_UNSET}", "port": "1"}})"),
      "service.host: not found environment variable TP_K8S_UNSET");
  EXPECT_EQ(ParseError(R"({"service": {"schema": "http", "host": "Bad_Host", "port": "1"}})"),
            "service.host: \"Bad_Host\" is not a host name, an IPv4 address or ${ENV}");
  EXPECT_EQ(ParseError(R"({"service": {"schema": "http", "host": "h", "port": "0"}})"),
            "service.port: invalid port value: 0");
  EXPECT_EQ(ParseError(R"({"service": {"schema": "http", "host": "h", "port": "70000"}})"),
            "service.port: invalid port value: 70000");
  EXPECT_EQ(ParseError("{" + http + R"(, "client": {"token": "a b"}})"),
            "client.token: must be ${ENV} or up to 4096 of A-Za-z0-9+/._=-");
  EXPECT_EQ(ParseError("{" + http + R"(, "default_weight": -1})"),
            "default_weight: must be an integer >= 0");
  EXPECT_EQ(ParseError("{" + http + R"(, "namespace_selector": {"equal": "a", "match": ["b"]}})"),
            "namespace_selector: only one of equal, not_equal, match and not_match may be set");
  EXPECT_EQ(ParseError("{" + http + R"(, "namespace_selector": {"equal": "Bad"}})")
                .rfind("namespace_selector.equal: must be a namespace name", 0),
            0u);
  EXPECT_EQ(ParseError("{" + http + R"(, "namespace_selector": {"match": ["("]}})")
                .rfind("namespace_selector.match[0]: invalid regex", 0),
            0u)
      << ParseError("{" + http + R"(, "namespace_selector": {"match": ["("]}})");
  EXPECT_EQ(ParseError("{" + http + R"(, "namespace_selector": {"not_match": []}})"),
            "namespace_selector.not_match: must be a non-empty list");
  EXPECT_EQ(ParseError("{" + http + R"(, "watch_endpoint_slices": "yes"})"),
            "watch_endpoint_slices: must be a boolean");
  EXPECT_EQ(ParseError("{" + http + R"(, "shared_size": "64"})"),
            "shared_size: must match ^[1-9][0-9]*m$");
  EXPECT_EQ(ParseError("42"), "must be an object (one cluster) or a non-empty list of clusters");
  EXPECT_EQ(ParseError("[]"), "must be an object (one cluster) or a non-empty list of clusters");
}

TEST(KubernetesConfigTest, MultiClusterNeedsIdServiceAndOneClientCredential) {
  const std::string one =
      R"({"id": "one", "service": {"schema": "http", "host": "h", "port": "1"},
          "client": {"token": "t"}})";
  StatusOr<KubernetesConfig> c = Parse("[" + one + "]");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c.value().multi);
  EXPECT_EQ(c.value().clusters[0].id, "one");
  EXPECT_EQ(ParseError("[" + one + "," + one + "]"), "[1].id: duplicate id value");
  EXPECT_EQ(ParseError(R"([{"service": {"schema": "http", "host": "h", "port": "1"}}])"),
            "[0].id: is required");
  EXPECT_EQ(ParseError(R"([{"id": "UP", "service": {}}])"), "[0].id: must match ^[a-z0-9]{1,64}$");
  EXPECT_EQ(ParseError(R"([{"id": "a", "client": {"token": "t"}}])"), "[0].service: is required");
  EXPECT_EQ(ParseError(R"([{"id": "a", "service": {"schema": "http", "port": "1"},
                            "client": {"token": "t"}}])"),
            "[0].service.host: is required");
  EXPECT_EQ(ParseError(R"([{"id": "a", "service": {"schema": "http", "host": "h", "port": "1"}}])"),
            "[0].client: is required");
  EXPECT_EQ(ParseError(R"([{"id": "a", "service": {"schema": "http", "host": "h", "port": "1"},
                            "client": {"token": "t", "token_file": "/f"}}])"),
            "[0].client: exactly one of token and token_file is required");
}

// An object as the informer hands it over: parsed by simdjson from its JSON text.
simdjson::dom::element Parsed(simdjson::dom::parser& parser, const nlohmann::json& object) {
  return parser.parse(object.dump()).value();
}

TEST(KubernetesObjectsTest, ReadEndpointsAndSlices) {
  std::string ns, key, part;
  KubePortNodes nodes;
  simdjson::dom::parser parser;
  nlohmann::json ep = FakeKubeApiServer::Endpoints("ns", "svc", {"10.0.0.2", "10.0.0.1"},
                                                   {{"http", 80}, {"", 81}}, {"10.0.0.3"});
  ASSERT_TRUE(ReadEndpoints(Parsed(parser, ep), 5, &ns, &key, &nodes));
  EXPECT_EQ(key, "ns/svc");
  EXPECT_EQ(nodes["http"], Nodes({{"10.0.0.2", 80}, {"10.0.0.1", 80}}, 5));
  EXPECT_EQ(nodes["81"], Nodes({{"10.0.0.2", 81}, {"10.0.0.1", 81}}, 5));
  EXPECT_FALSE(ReadEndpoints(Parsed(parser, {{"metadata", {{"name", "x"}}}}), 1, &ns, &key, &nodes));
  // A slice: ready endpoints only; an unnamed port has the name "" (as the controller writes).
  nlohmann::json slice = FakeKubeApiServer::EndpointSlice(
      "ns", "svc-1", "svc", {{"10.0.0.1"}, {"10.0.0.2", false}}, {{"", 90}});
  ASSERT_TRUE(ReadEndpointSlice(Parsed(parser, slice), 1, &ns, &key, &part, &nodes));
  EXPECT_EQ(key, "ns/svc");
  EXPECT_EQ(part, "svc-1");
  EXPECT_EQ(nodes[""], Nodes({{"10.0.0.1", 90}}, 1));
  slice["metadata"].erase("labels");
  EXPECT_FALSE(ReadEndpointSlice(Parsed(parser, slice), 1, &ns, &key, &part, &nodes));
}

// Ports and conditions as the API server may write them: a port named by number, a port
// without a name (its number is the key), a null or missing `ready`, a port number out of
// range (kept as -1, which fails the node schema downstream), an address that is not a string.
TEST(KubernetesObjectsTest, ReadsPortKeysAndSkipsWhatIsNotReady) {
  std::string ns, key, part;
  KubePortNodes nodes;
  simdjson::dom::parser parser;
  auto slice = nlohmann::json::parse(R"({
    "metadata": {"namespace": "ns", "name": "svc-a",
                 "labels": {"kubernetes.io/service-name": "svc"}},
    "ports": [{"name": null, "port": 8080}, {"name": "big", "port": 70000}],
    "endpoints": [
      {"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
      {"addresses": ["10.0.0.2"], "conditions": {"ready": null}},
      {"addresses": ["10.0.0.3"], "conditions": {}},
      {"addresses": ["10.0.0.4"]},
      {"addresses": [7, "10.0.0.5"], "conditions": {"ready": true}}
    ]})");
  ASSERT_TRUE(ReadEndpointSlice(Parsed(parser, slice), 2, &ns, &key, &part, &nodes));
  EXPECT_EQ(key, "ns/svc");
  EXPECT_EQ(nodes["8080"], Nodes({{"10.0.0.1", 8080}, {"10.0.0.5", 8080}}, 2));
  EXPECT_EQ(nodes["big"], Nodes({{"10.0.0.1", -1}, {"10.0.0.5", -1}}, 2));
  EXPECT_EQ(nodes.size(), 2u);
}

}  // namespace
}  // namespace turnpike::discovery
