// Node sets apart from the route snapshot: what BuildSnapshot puts in each upstream's slot
// (IP literals at once, domain names and discovery left to the Directory, never a blocking
// lookup), slots kept across reloads, a node-set swap that rebuilds no route, and the worker's
// PickerTable rebuilding only the picker whose set pointer changed.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "config/specs.h"
#include "proxy/picker_table.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {
namespace {

config::UpstreamSpec Spec(const std::string& id, std::vector<config::NodeSpec> nodes) {
  config::UpstreamSpec u;
  u.id = id;
  u.nodes = std::move(nodes);
  return u;
}

config::RouteSpec RouteTo(const std::string& id, const std::string& upstream_id) {
  config::RouteSpec r;
  r.id = id;
  r.uris = {"/" + id};
  r.upstream_id = upstream_id;
  r.path = "routes[" + id + "]";
  return r;
}

// One attempt on `up` (its lease, if any, ended at once).
uint32_t PickNode(PickerTable& table, const Upstream& up, const upstream::NodeSet& set,
                  const upstream::TriedSet& tried) {
  upstream::PickRequest request;
  request.tried = &tried;
  upstream::PickLease lease;
  const uint32_t index = table.PickNode(up, set, request, &lease);
  table.EndAttempt(&lease, 0, /*final=*/true);
  return index;
}

class NodeSetsTest : public ::testing::Test {
 protected:
  SnapshotConstSharedPtr Build(const Snapshot* previous = nullptr) {
    BuildReport report;
    SnapshotConstSharedPtr snap =
        BuildSnapshot({&gateway_, &routes_, previous, ++version_, nullptr}, &report);
    stats_ = report.stats;
    errors_.clear();
    for (const config::ConfigError& e : report.errors) errors_.push_back(e.ToString());
    return snap;
  }
  const Upstream& Up(const Snapshot& s, const std::string& key) {
    for (const auto& u : s.upstreams) {
      if (u->key == key) return *u;
    }
    ADD_FAILURE() << "no upstream " << key;
    return *s.upstreams.front();
  }

  config::GatewayConfig gateway_;
  config::RoutesConfig routes_;
  uint64_t version_ = 0;
  BuildStats stats_;
  std::vector<std::string> errors_;
};

TEST_F(NodeSetsTest, IpLiteralsFillTheSlotAtBuildNamesWait) {
  routes_.upstreams = {Spec("ip", {{"127.0.0.1", 8080, 2, 0}, {"::1", 8081, 1, 0}}),
                       Spec("dns", {{"127.0.0.1", 8080, 1, 0}, {"backend.invalid", 80, 1, 0}})};
  SnapshotConstSharedPtr s = Build();
  const Upstream& ip = Up(*s, "upstreams/ip");
  EXPECT_EQ(ip.source, nullptr);
  upstream::NodeSetConstSharedPtr set = ip.nodes->Load();
  ASSERT_EQ(set->nodes.size(), 2u);
  EXPECT_EQ(set->nodes[0].ip_text, "127.0.0.1");
  EXPECT_EQ(set->nodes[0].host_header, "127.0.0.1:8080");
  EXPECT_EQ(set->nodes[1].host_header, "[::1]:8081");
  EXPECT_EQ(ip.Retries(*set), 1) << "unset retries: nodes - 1 of the set in use";
  // Summarized for the workers' pickers (upstream::NodeSummary): two weights.
  EXPECT_TRUE(set->summary.summarized);
  EXPECT_FALSE(set->summary.uniform);

  // A domain name: nothing resolved during the build (it would have blocked); the whole
  // list goes to the Directory, which publishes the IP literal at once and the name later.
  const Upstream& dns = Up(*s, "upstreams/dns");
  ASSERT_NE(dns.source, nullptr);
  EXPECT_TRUE(dns.source->provider.empty());
  EXPECT_EQ(dns.source->nodes.size(), 2u);
  EXPECT_TRUE(dns.nodes->Load()->nodes.empty());
  EXPECT_EQ(stats_.pending_node_sets, 1u);
  std::vector<discovery::Binding> bindings = NodeBindings(*s);
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0].slot, dns.nodes);
  EXPECT_EQ(bindings[0].name, "upstreams/dns");
}

TEST_F(NodeSetsTest, LiteralSetsOfOneWeightAreSummarizedSo) {
  routes_.upstreams = {Spec("u", {{"127.0.0.1", 8080, 3, 1}, {"127.0.0.2", 8080, 3, 1}})};
  SnapshotConstSharedPtr s = Build();
  upstream::NodeSetConstSharedPtr set = Up(*s, "upstreams/u").nodes->Load();
  ASSERT_EQ(set->nodes.size(), 2u);
  EXPECT_TRUE(set->summary.summarized);
  EXPECT_TRUE(set->summary.uniform);
  EXPECT_EQ(set->summary.weight, 3);
}

TEST_F(NodeSetsTest, DiscoveryUpstreamsGetASource) {
  gateway_.discovery = {{"nacos", nlohmann::json::object()}};
  config::UpstreamSpec u;
  u.id = "d";
  u.discovery_type = "nacos";
  u.service_name = "users";
  u.discovery_args = {{"group_name", "g"}};
  routes_.upstreams = {u};
  SnapshotConstSharedPtr s = Build();
  const Upstream& d = Up(*s, "upstreams/d");
  ASSERT_NE(d.source, nullptr);
  EXPECT_EQ(d.source->provider, "nacos");
  EXPECT_EQ(d.source->service.service_name, "users");
  EXPECT_EQ(d.source->service.args.at("group_name"), "g");
  EXPECT_EQ(d.retries, -1);
}

TEST_F(NodeSetsTest, ADiscoveryTypeNotConfiguredSkipsItsItem) {
  gateway_.discovery = {{"dns", nlohmann::json::object()}};
  config::UpstreamSpec u;
  u.discovery_type = "nacos";
  u.service_name = "users";
  u.discovery_loc = {"apisix.yaml", 3, 5};
  u.discovery_path = "upstreams[0].discovery_type";
  config::UpstreamSpec ok = u;
  ok.id = "ok";
  ok.discovery_type = "dns";
  u.id = "d";
  routes_.upstreams = {u, ok};
  config::RouteSpec inline_route = RouteTo("inline", "");
  inline_route.upstream = u;
  routes_.routes = {RouteTo("r", "d"), inline_route};
  SnapshotConstSharedPtr s = Build();
  ASSERT_EQ(s->upstreams.size(), 1u) << "only the dns upstream is built";
  EXPECT_EQ(s->upstreams[0]->key, "upstreams/ok");
  ASSERT_EQ(s->routes.size(), 1u) << "the route with the inline upstream is skipped";
  EXPECT_EQ(s->routes[0].fail_status, 502) << "upstream_id of a skipped upstream";
  std::string error =
      "apisix.yaml:3:5: upstreams[0].discovery_type: discovery type \"nacos\" is not configured "
      "(config.yaml has no discovery.nacos)";
  EXPECT_EQ(errors_, (std::vector<std::string>{error, error}));
}

TEST_F(NodeSetsTest, ReloadsKeepSlotsOfUnchangedNodes) {
  routes_.upstreams = {Spec("same", {{"127.0.0.1", 1, 1, 0}}),
                       Spec("changed", {{"127.0.0.1", 2, 1, 0}}),
                       Spec("named", {{"svc.invalid", 3, 1, 0}})};
  SnapshotConstSharedPtr a = Build();
  routes_.upstreams[1].nodes[0].port = 20;
  routes_.upstreams[2].retries = 4;  // settings change, nodes do not
  SnapshotConstSharedPtr b = Build(a.get());
  EXPECT_EQ(Up(*b, "upstreams/same").nodes, Up(*a, "upstreams/same").nodes);
  EXPECT_NE(Up(*b, "upstreams/changed").nodes, Up(*a, "upstreams/changed").nodes)
      << "new content: a new slot, so requests on the old snapshot keep the old nodes";
  EXPECT_EQ(Up(*b, "upstreams/named").nodes, Up(*a, "upstreams/named").nodes)
      << "same source: what was resolved survives the reload";
  EXPECT_EQ(Up(*b, "upstreams/named").retries, 4);
  EXPECT_EQ(stats_.reused_node_sets, 2u);
}

TEST_F(NodeSetsTest, NodeSetSwapRebuildsNoRouteAndOnlyItsPicker) {
  routes_.upstreams = {Spec("a", {{"127.0.0.1", 1, 1, 0}}), Spec("b", {{"127.0.0.2", 2, 1, 0}})};
  routes_.routes = {RouteTo("ra", "a"), RouteTo("rb", "b")};
  SnapshotConstSharedPtr s = Build();
  const Upstream& a = Up(*s, "upstreams/a");
  const Upstream& b = Up(*s, "upstreams/b");
  const router::RouteTable* table = s->table.get();
  const Route* route = &s->routes[0];

  PickerTable pickers;
  pickers.Reset(*s);
  upstream::NodeSetConstSharedPtr pinned_a = pickers.CurrentNodes(a);
  pickers.CurrentNodes(b);
  EXPECT_EQ(pickers.builds(), 2u);
  for (int i = 0; i < 5; ++i) {
    pickers.CurrentNodes(a);
    pickers.CurrentNodes(b);
  }
  EXPECT_EQ(pickers.builds(), 2u) << "unchanged pointers: no rebuild";

  // A provider (or the resolver) publishes a new set for `a` straight into its slot.
  auto next = std::make_shared<upstream::NodeSet>(*a.nodes->Load());
  next->nodes.push_back(next->nodes[0]);
  next->nodes.Mutable(1).port = 9;
  upstream::NodeSetConstSharedPtr replaced = a.nodes->Store(next);
  EXPECT_EQ(replaced, pinned_a);

  EXPECT_EQ(pickers.CurrentNodes(a).get(), next.get());
  EXPECT_EQ(pickers.builds(), 3u) << "one rebuild: a's picker";
  pickers.CurrentNodes(b);
  EXPECT_EQ(pickers.builds(), 3u) << "b's picker untouched";
  EXPECT_EQ(s->table.get(), table) << "routes and router are not rebuilt";
  EXPECT_EQ(&s->routes[0], route);
  EXPECT_EQ(route->upstream, &a);

  // A request that pinned the old set keeps it whole, and its retries pick from it.
  upstream::TriedSet tried;
  uint32_t first = PickNode(pickers, a, *pinned_a, tried);
  EXPECT_EQ(first, 0u);
  tried.Add(first);
  EXPECT_EQ(PickNode(pickers, a, *pinned_a, tried), upstream::Picker::kNone)
      << "the old set's only node was tried";
  tried.Clear();
  EXPECT_LT(PickNode(pickers, a, *next, tried), 2u);
}

TEST_F(NodeSetsTest, NewSnapshotCarriesPickersOfUnchangedSets) {
  routes_.upstreams = {Spec("a", {{"127.0.0.1", 1, 1, 0}, {"127.0.0.1", 2, 1, 0}})};
  SnapshotConstSharedPtr s1 = Build();
  PickerTable pickers;
  pickers.Reset(*s1);
  upstream::TriedSet none;
  const Upstream& a1 = Up(*s1, "upstreams/a");
  upstream::NodeSetConstSharedPtr set = pickers.CurrentNodes(a1);
  EXPECT_EQ(PickNode(pickers, a1, *set, none), 0u);
  routes_.routes = {RouteTo("r", "a")};  // routes change, nodes do not
  SnapshotConstSharedPtr s2 = Build(s1.get());
  pickers.Reset(*s2);
  const Upstream& a2 = Up(*s2, "upstreams/a");
  EXPECT_EQ(pickers.CurrentNodes(a2), set);
  EXPECT_EQ(pickers.builds(), 1u);
  EXPECT_EQ(PickNode(pickers, a2, *set, none), 1u) << "round robin goes on where it was";
}

// A request pins its snapshot at its head and may reach its upstream after the worker moved
// on (its body was read first, or a plugin paused it): its upstream's slot number means
// another upstream, or none, in the current table.
TEST_F(NodeSetsTest, AnUpstreamOfAnOlderSnapshotTouchesNoCurrentPicker) {
  routes_.upstreams = {Spec("a", {{"127.0.0.1", 1, 1, 0}, {"127.0.0.1", 2, 1, 0}}),
                       Spec("b", {{"127.0.0.1", 3, 1, 0}, {"127.0.0.1", 4, 1, 0}})};
  SnapshotConstSharedPtr s1 = Build();
  PickerTable pickers;
  pickers.Reset(*s1);
  const Upstream& a1 = Up(*s1, "upstreams/a");
  const Upstream& b1 = Up(*s1, "upstreams/b");
  ASSERT_EQ(b1.slot, 1u);
  routes_.upstreams = {Spec("c", {{"127.0.0.1", 5, 1, 0}})};  // one upstream left, in slot 0
  SnapshotConstSharedPtr s2 = Build(s1.get());
  pickers.Reset(*s2);
  const Upstream& c2 = Up(*s2, "upstreams/c");
  pickers.CurrentNodes(c2);
  EXPECT_EQ(pickers.builds(), 1u);

  // b's slot is past the current table: its set comes from its own slot, picks scan it.
  upstream::NodeSetConstSharedPtr b_set = pickers.CurrentNodes(b1);
  EXPECT_EQ(b_set.get(), b1.nodes->Peek());
  upstream::TriedSet tried;
  uint32_t first = PickNode(pickers, b1, *b_set, tried);
  ASSERT_LT(first, 2u);
  tried.Add(first);
  uint32_t second = PickNode(pickers, b1, *b_set, tried);
  EXPECT_LT(second, 2u);
  EXPECT_NE(second, first);
  tried.Add(second);
  EXPECT_EQ(PickNode(pickers, b1, *b_set, tried), upstream::Picker::kNone);

  // a's slot is c's now: c's picker is neither rebuilt from a's nodes nor used for them.
  upstream::NodeSetConstSharedPtr a_set = pickers.CurrentNodes(a1);
  EXPECT_EQ(a_set.get(), a1.nodes->Peek());
  EXPECT_EQ(pickers.builds(), 1u);
  EXPECT_LT(PickNode(pickers, a1, *a_set, upstream::TriedSet()), 2u);
  EXPECT_EQ(pickers.CurrentNodes(c2).get(), c2.nodes->Peek());
  EXPECT_EQ(pickers.builds(), 1u);
}

TEST_F(NodeSetsTest, EmptySlotPinsTheEmptySet) {
  routes_.upstreams = {Spec("none", {})};
  SnapshotConstSharedPtr s = Build();
  PickerTable pickers;
  pickers.Reset(*s);
  const upstream::NodeSetConstSharedPtr& set = pickers.CurrentNodes(Up(*s, "upstreams/none"));
  ASSERT_NE(set, nullptr);
  EXPECT_TRUE(set->nodes.empty()) << "the request answers 503";
}

}  // namespace
}  // namespace turnpike::proxy
