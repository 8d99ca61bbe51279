// discovery::Directory: static nodes with domain names resolved asynchronously, providers
// watched and unwatched as bindings come and go, dedupe by value, last known good, readiness,
// and release of replaced sets on the control thread.
#include "discovery/directory.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "discovery/fakes.h"
#include "discovery/parts.h"

namespace turnpike::discovery {
namespace {

std::string Ip(const upstream::Node& n) { return n.ip_text.str(); }

// A seeded pseudo-random source for the property tests: next(n) is in [0, n).
struct Lcg {
  uint32_t seed;
  uint32_t operator()(uint32_t n) {
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) % n;
  }
};

// `got` is `want` (SameNodes), with the texts and the summary a producer gives it.
void ExpectSet(const upstream::NodeSet& got, const upstream::NodeSet& want, int round) {
  ASSERT_TRUE(upstream::SameNodes(got, want)) << "round " << round;
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    EXPECT_EQ(got.nodes[i].ip_text, want.nodes[i].ip_text) << "round " << round;
    EXPECT_EQ(got.nodes[i].host_header, want.nodes[i].host_header) << "round " << round;
  }
  if (got.nodes.empty()) return;  // the slot's empty set
  const upstream::NodeSummary summary = upstream::SummarizeNodes(got.nodes);
  EXPECT_TRUE(got.summary.summarized) << "round " << round;
  EXPECT_EQ(got.summary.uniform, summary.uniform) << "round " << round;
  EXPECT_EQ(got.summary.weight, summary.weight) << "round " << round;
  EXPECT_EQ(got.summary.sorted, summary.sorted) << "round " << round;
}

class DirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    Directory::Options o;
    o.tick_ms = 5;
    o.min_refresh_ms = 10;
    o.max_refresh_ms = 10;
    o.retry_ms = 10;
    dir_ = std::make_unique<Directory>(&loop_, &resolver_, o);
    auto provider = std::make_unique<FakeProvider>();
    provider_ = provider.get();
    dir_->AddProvider("fake", std::move(provider));
    ASSERT_TRUE(dir_->Start().ok());
  }
  void TearDown() override {
    dir_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    dir_.reset();
    uv_loop_close(&loop_);
  }

  static Binding Static(upstream::NodeSetSlotSharedPtr slot, DiscoveredNodes nodes) {
    auto source = std::make_shared<NodeSource>();
    source->nodes = std::move(nodes);
    return {"upstreams/s", source, std::move(slot)};
  }
  static Binding Discovered(upstream::NodeSetSlotSharedPtr slot, const std::string& provider,
                            const std::string& service) {
    auto source = std::make_shared<NodeSource>();
    source->provider = provider;
    source->service = ServiceRef{service, {}};
    return {"upstreams/d", source, std::move(slot)};
  }
  // Runs the loop until `cond` or about a second passed.
  template <typename Cond>
  bool RunUntil(Cond cond) {
    for (int i = 0; i < 400 && !cond(); ++i) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      usleep(2500);
    }
    return cond();
  }

  uv_loop_t loop_{};
  FakeResolver resolver_;
  FakeProvider* provider_ = nullptr;
  std::unique_ptr<Directory> dir_;
};

TEST_F(DirectoryTest, DomainNodesArePublishedWhenResolved) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(slot, {{"10.0.0.1", 8080, 1, 0}, {"svc.test", 81, 2, 0}})});
  // The IP literal at once; the name once its answer comes.
  ASSERT_EQ(slot->Load()->nodes.size(), 1u);
  EXPECT_EQ(Ip(slot->Load()->nodes[0]), "10.0.0.1");
  EXPECT_FALSE(dir_->ready()) << "a first answer is outstanding";
  EXPECT_TRUE(resolver_.Pending("svc.test"));
  ASSERT_EQ(resolver_.Answer("svc.test", "10.0.0.2"), 1);
  upstream::NodeSetConstSharedPtr set = slot->Load();
  ASSERT_EQ(set->nodes.size(), 2u);
  const upstream::Node& n = set->nodes[1];
  EXPECT_EQ(n.host, "svc.test");
  EXPECT_EQ(n.ip_text, "10.0.0.2");
  EXPECT_EQ(n.port, 81);
  EXPECT_EQ(n.weight, 2);
  EXPECT_EQ(n.host_header, "svc.test:81");
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(&n.addr)->sin_port), 81);
  EXPECT_TRUE(dir_->ready());
}

TEST_F(DirectoryTest, UnresolvableNameIsSkippedAndReadyAnyway) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(slot, {{"nope.invalid", 80, 1, 0}})});
  EXPECT_TRUE(slot->Load()->nodes.empty());
  resolver_.Answer("nope.invalid", "");
  EXPECT_TRUE(slot->Load()->nodes.empty()) << "no node: the upstream answers 503";
  EXPECT_TRUE(dir_->ready()) << "a failed first lookup is a first answer";
}

TEST_F(DirectoryTest, FailedReResolutionKeepsTheLastGoodAddress) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(slot, {{"svc.test", 80, 1, 0}})});
  resolver_.Answer("svc.test", "10.0.0.7");
  const upstream::NodeSet* good = slot->Peek();
  ASSERT_EQ(slot->Load()->nodes.size(), 1u);
  uint64_t stored = dir_->stats().stored;
  // The refresh comes from the tick (TTL clamped to 10 ms here); it fails.
  ASSERT_TRUE(RunUntil([&] { return resolver_.Pending("svc.test"); }));
  resolver_.Answer("svc.test", "");
  EXPECT_EQ(slot->Peek(), good) << "last known good";
  EXPECT_EQ(dir_->stats().stored, stored);
  // The next one succeeds with the same address: still nothing stored (dedupe by value).
  ASSERT_TRUE(RunUntil([&] { return resolver_.Pending("svc.test"); }));
  resolver_.Answer("svc.test", "10.0.0.7");
  EXPECT_EQ(slot->Peek(), good);
  // A new address is a new set.
  ASSERT_TRUE(RunUntil([&] { return resolver_.Pending("svc.test"); }));
  resolver_.Answer("svc.test", "10.0.0.8");
  EXPECT_NE(slot->Peek(), good);
  EXPECT_EQ(Ip(slot->Load()->nodes[0]), "10.0.0.8");
}

TEST_F(DirectoryTest, OneLookupPerNameAcrossUpstreams) {
  auto a = std::make_shared<upstream::NodeSetSlot>();
  auto b = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(a, {{"svc.test", 80, 1, 0}}), Static(b, {{"svc.test", 81, 1, 0}})});
  EXPECT_EQ(resolver_.lookups("svc.test"), 1);
  resolver_.Answer("svc.test", "10.0.0.3");
  EXPECT_EQ(a->Load()->nodes.size(), 1u);
  EXPECT_EQ(b->Load()->nodes.size(), 1u);
  // A later snapshot adding a third user of the name takes the known address at once.
  auto c = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(a, {{"svc.test", 80, 1, 0}}), Static(c, {{"svc.test", 82, 1, 0}})});
  EXPECT_EQ(c->Load()->nodes.size(), 1u);
  EXPECT_EQ(resolver_.lookups("svc.test"), 1);
  EXPECT_EQ(dir_->hosts(), 1u);
  dir_->Apply({});
  EXPECT_EQ(dir_->hosts(), 0u) << "names nobody uses are forgotten";
}

TEST_F(DirectoryTest, ProviderIsToldWhatToWatch) {
  EXPECT_EQ(provider_->starts, 1);
  EXPECT_EQ(provider_->loop, &loop_) << "providers run their timers on the control loop";
  auto a = std::make_shared<upstream::NodeSetSlot>();
  auto b = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(a, "fake", "users"), Discovered(b, "fake", "users")});
  EXPECT_EQ(provider_->watch_calls, 1) << "one Watch per service, however many upstreams";
  EXPECT_EQ(provider_->watched.count(ServiceRef{"users", {}}), 1u);
  EXPECT_TRUE(a->Load()->nodes.empty()) << "no answer yet: 503";
  EXPECT_FALSE(dir_->ready());
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}, {"10.0.1.2", 80, 1, 0}});
  EXPECT_EQ(a->Load()->nodes.size(), 2u);
  EXPECT_EQ(b->Load()->nodes.size(), 2u);
  EXPECT_TRUE(dir_->ready());
  // A reload keeps one upstream: still watched; drops both: unwatched.
  dir_->Apply({Discovered(a, "fake", "users")});
  EXPECT_EQ(provider_->unwatch_calls, 0);
  dir_->Apply({});
  EXPECT_EQ(provider_->unwatch_calls, 1);
  EXPECT_TRUE(provider_->watched.empty());
  EXPECT_EQ(dir_->watched_services(), 0u);
  // Publishing an unwatched service is ignored.
  provider_->Publish("users", {{"10.0.1.9", 80, 1, 0}});
  EXPECT_EQ(a->Load()->nodes.size(), 2u);
}

TEST_F(DirectoryTest, EqualAnswersAreDroppedByValue) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}});
  const upstream::NodeSet* first = slot->Peek();
  EXPECT_EQ(dir_->stats().published, 1u);
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}});  // a new list, same content
  EXPECT_EQ(dir_->stats().deduped, 1u);
  EXPECT_EQ(slot->Peek(), first) << "same content: same pointer, no picker rebuild";
  provider_->Publish("users", {{"10.0.1.1", 80, 5, 0}});
  EXPECT_NE(slot->Peek(), first);
  EXPECT_EQ(slot->Load()->nodes[0].weight, 5);
}

// Each build copies the nodes of the previous one it can (same host and port) instead of
// parsing them again: whatever the lists (sorted or not, duplicates, weights and priorities
// changing, IPv6, domain names), every set stored is the one a first build of the list makes.
TEST_F(DirectoryTest, ChangedListsGiveTheSetsAFreshBuildWould) {
  const std::vector<std::string> hosts = {"10.0.0.1", "10.0.0.2", "10.0.0.10",  "10.0.1.1",
                                          "::1",      "fe80::2",  "a.svc.test", "b.svc.test"};
  const std::map<std::string, std::string> answers = {{"a.svc.test", "10.9.0.1"},
                                                      {"b.svc.test", "10.9.0.2"}};
  auto expect = [&](const DiscoveredNodes& list, upstream::NodeSet* want) {
    for (const DiscoveredNode& n : list) {
      upstream::Node node;
      auto port = static_cast<uint16_t>(n.port == 0 ? 80 : n.port);
      if (!ParseIpLiteral(n.host, port, &node)) {
        upstream::Node resolved;
        ASSERT_TRUE(ParseIpLiteral(answers.at(n.host), 0, &resolved));
        SetAddress(&resolved.addr.sa, resolved.addr_len, port, &node);
      }
      FinishNode(n, &node);
      want->nodes.push_back(node);
    }
  };
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  Lcg next{12345};
  for (int round = 0; round < 300; ++round) {
    DiscoveredNodes list;
    const uint32_t size = next(12);
    for (uint32_t i = 0; i < size; ++i) {
      list.push_back({hosts[next(static_cast<uint32_t>(hosts.size()))],
                      static_cast<int>(next(3)) * 1000, static_cast<int>(next(3)),
                      static_cast<int>(next(2))});
    }
    if (next(2) == 0) {
      std::sort(list.begin(), list.end(), [](const DiscoveredNode& a, const DiscoveredNode& b) {
        return a.host != b.host ? a.host < b.host : a.port < b.port;
      });
    }
    const upstream::NodeSetConstSharedPtr before = slot->Load();
    provider_->Publish("users", list);
    for (const auto& [name, ip] : answers) {
      if (resolver_.Pending(name)) resolver_.Answer(name, ip);
    }
    upstream::NodeSet want;
    ASSERT_NO_FATAL_FAILURE(expect(list, &want));
    const upstream::NodeSetConstSharedPtr got = slot->Load();
    ASSERT_NO_FATAL_FAILURE(ExpectSet(*got, want, round));
    if (upstream::SameNodes(*before, want)) {
      EXPECT_EQ(got, before) << "round " << round << ": an equal set is not stored";
    }
  }
}

TEST_F(DirectoryTest, ANodeFailingTheSchemaGivesNoNodes) {
  // APISIX: the whole list fails its discovery node schema check ("invalid nodes format"),
  // the upstream answers 503; the next valid answer restores it.
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}});
  ASSERT_EQ(slot->Load()->nodes.size(), 1u);
  for (const DiscoveredNodes& bad :
       {DiscoveredNodes{{"10.0.1.1", 80, 1, 0}, {"10.0.1.2", 80, -1, 0}},
        DiscoveredNodes{{"", 80, 1, 0}}, DiscoveredNodes{{"10.0.1.3", 70000, 1, 0}}}) {
    provider_->Publish("users", bad);
    EXPECT_TRUE(slot->Load()->nodes.empty()) << bad.size();
    provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}});
    EXPECT_EQ(slot->Load()->nodes.size(), 1u);
  }
  EXPECT_EQ(dir_->stats().invalid, 3u);
  EXPECT_TRUE(dir_->ready());
}

TEST_F(DirectoryTest, DiscoveredDomainNamesAreResolvedToo) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  provider_->Publish("users", {{"users.svc.test", 0, 1, 0}});
  EXPECT_TRUE(slot->Load()->nodes.empty());
  EXPECT_FALSE(dir_->ready());
  resolver_.Answer("users.svc.test", "10.0.2.1");
  ASSERT_EQ(slot->Load()->nodes.size(), 1u);
  EXPECT_EQ(slot->Load()->nodes[0].port, 80) << "port 0: the scheme's default";
  EXPECT_TRUE(dir_->ready());
  // The next answer drops the name: its lookup is forgotten.
  provider_->Publish("users", {{"10.0.2.2", 80, 1, 0}});
  EXPECT_EQ(dir_->hosts(), 0u);
}

TEST_F(DirectoryTest, UnknownDiscoveryTypeHasNoNodes) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "consul", "users")});
  EXPECT_TRUE(slot->Load()->nodes.empty());
  EXPECT_TRUE(dir_->ready()) << "nothing to wait for";
}

TEST_F(DirectoryTest, ReadyWaitsForProviders) {
  provider_->ready_flag = false;
  dir_->Apply({});
  EXPECT_FALSE(dir_->ready());
  provider_->ready_flag = true;
  EXPECT_TRUE(dir_->ready());
  provider_->ready_flag = false;
  EXPECT_TRUE(dir_->ready()) << "latched: readiness does not flap";
}

TEST_F(DirectoryTest, ReadyOnlyWaitsForTheFirstSnapshot) {
  dir_->Apply({});
  EXPECT_TRUE(dir_->ready());
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(slot, {{"late.test", 80, 1, 0}})});
  EXPECT_TRUE(dir_->ready()) << "a later reload's names do not make the daemon unready";
}

TEST_F(DirectoryTest, ReplacedSetsAreReleasedHereOnceUnused) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}});
  upstream::NodeSetConstSharedPtr pinned = slot->Load();  // a worker's picker or a request
  std::weak_ptr<const upstream::NodeSet> watch = pinned;
  provider_->Publish("users", {{"10.0.1.2", 80, 1, 0}});
  dir_->ReleaseRetired();
  EXPECT_EQ(dir_->retired(), 1u) << "still pinned";
  pinned.reset();  // the last pin goes: the set is not freed by that (the directory holds it)
  EXPECT_FALSE(watch.expired());
  dir_->ReleaseRetired();
  EXPECT_EQ(dir_->retired(), 0u);
  EXPECT_TRUE(watch.expired());
}

// A released set's node vector is refilled by a later build; a set still held never is.
TEST_F(DirectoryTest, PinnedSetsKeepTheirNodesWhileLaterBuildsRecycleReleasedOnes) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}, {"10.0.1.2", 80, 1, 0}});
  upstream::NodeSetConstSharedPtr pinned = slot->Load();
  for (int i = 3; i < 40; ++i) {
    provider_->Publish("users", {{"10.0.1." + std::to_string(i), 80, 1, 0},
                                 {"10.0.2." + std::to_string(i), 8080, 2, 0}});
    const upstream::NodeSetConstSharedPtr now = slot->Load();
    ASSERT_EQ(now->nodes.size(), 2u);
    EXPECT_EQ(now->nodes[0].host_header, "10.0.1." + std::to_string(i));
    EXPECT_EQ(now->nodes[1].host_header, "10.0.2." + std::to_string(i) + ":8080");
  }
  ASSERT_EQ(pinned->nodes.size(), 2u);
  EXPECT_EQ(pinned->nodes[0].ip_text, "10.0.1.1");
  EXPECT_EQ(pinned->nodes[1].ip_text, "10.0.1.2");
  dir_->ReleaseRetired();
  EXPECT_EQ(dir_->retired(), 1u) << "only the pinned one waits";
}

TEST_F(DirectoryTest, KeptBindingKeepsItsState) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  Binding b = Static(slot, {{"svc.test", 80, 1, 0}});
  dir_->Apply({b});
  resolver_.Answer("svc.test", "10.0.0.5");
  const upstream::NodeSet* set = slot->Peek();
  dir_->Apply({b});  // the next snapshot reuses the slot and source
  EXPECT_EQ(resolver_.lookups("svc.test"), 1);
  EXPECT_EQ(slot->Peek(), set);
}

TEST_F(DirectoryTest, StopStopsProvidersAndLookups) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(slot, {{"svc.test", 80, 1, 0}})});
  dir_->Stop();
  EXPECT_EQ(provider_->stops, 1);
  EXPECT_FALSE(resolver_.Pending("svc.test")) << "cancelled";
}

TEST_F(DirectoryTest, StoredSetsCarryTheirSummary) {
  // What the workers' round robin reads instead of the nodes (upstream::NodeSummary).
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Static(slot, {{"10.0.0.1", 80, 2, 0}, {"10.0.0.2", 80, 2, 0}})});
  upstream::NodeSetConstSharedPtr set = slot->Load();
  ASSERT_EQ(set->nodes.size(), 2u);
  EXPECT_TRUE(set->summary.summarized);
  EXPECT_TRUE(set->summary.uniform);
  EXPECT_EQ(set->summary.weight, 2);
  dir_->Apply({Static(slot, {{"10.0.0.1", 80, 2, 0}, {"10.0.0.2", 80, 1, 0}})});
  set = slot->Load();
  ASSERT_EQ(set->nodes.size(), 2u);
  EXPECT_TRUE(set->summary.summarized);
  EXPECT_FALSE(set->summary.uniform);
}

// Answers in parts (DiscoverySink::PublishParts, as the kubernetes provider sends one list per
// EndpointSlice).
DiscoveredNodesConstSharedPtr Part(const std::string& prefix, int from, int count, int weight = 1,
                                   int port = 80) {
  auto list = std::make_shared<DiscoveredNodes>();
  for (int i = from; i < from + count; ++i) {
    list->push_back({prefix + std::to_string(i), port, weight, 0});
  }
  return list;
}

TEST_F(DirectoryTest, PartsAreJoinedInOrderAndUnchangedPartsKeepTheirNodes) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  auto a = Part("10.0.1.", 1, 3);
  auto b = Part("10.0.2.", 1, 3);
  auto c = Part("10.0.3.", 1, 3);
  provider_->PublishParts("users", {c, nullptr, a, std::make_shared<DiscoveredNodes>(), b});
  upstream::NodeSetConstSharedPtr first = slot->Load();
  ASSERT_EQ(first->nodes.size(), 9u);
  EXPECT_EQ(Ip(first->nodes[0]), "10.0.1.1") << "in (host, port) order, whatever the parts' order";
  EXPECT_EQ(Ip(first->nodes[3]), "10.0.2.1");
  EXPECT_EQ(Ip(first->nodes[8]), "10.0.3.3");
  EXPECT_EQ(first->nodes[8].host_header, "10.0.3.3");
  EXPECT_TRUE(first->summary.summarized);
  EXPECT_TRUE(first->summary.uniform);
  EXPECT_TRUE(first->summary.sorted);
  EXPECT_EQ(first->summary.weight, 1);
  EXPECT_EQ(dir_->stats().part_nodes_built, 9u);
  EXPECT_TRUE(dir_->ready());

  // One part replaced: only its nodes are made; the others are the same nodes, in memory.
  auto b2 = Part("10.0.2.", 7, 2);
  provider_->PublishParts("users", {a, b2, c});
  upstream::NodeSetConstSharedPtr second = slot->Load();
  ASSERT_NE(second, first);
  ASSERT_EQ(second->nodes.size(), 8u);
  EXPECT_EQ(dir_->stats().part_nodes_built, 11u) << "the new part's 2 nodes only";
  EXPECT_EQ(&second->nodes[0], &first->nodes[0]) << "part a's nodes shared, not copied";
  EXPECT_EQ(&second->nodes[5], &first->nodes[6]) << "part c's nodes shared, not copied";
  EXPECT_EQ(Ip(second->nodes[3]), "10.0.2.7");
  EXPECT_EQ(Ip(second->nodes[4]), "10.0.2.8");
  EXPECT_EQ(second->nodes.blocks().size(), 3u);
  EXPECT_EQ(dir_->stats().parts_merged, 0u);

  // A weight changed in one part: the set is no longer uniform.
  provider_->PublishParts("users", {a, b2, Part("10.0.3.", 1, 3, 2)});
  EXPECT_FALSE(slot->Load()->summary.uniform);
  EXPECT_TRUE(slot->Load()->summary.sorted);
}

TEST_F(DirectoryTest, EqualPartsAreDroppedByPointerOrByValue) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  auto a = Part("10.0.1.", 1, 3);
  auto b = Part("10.0.2.", 1, 3);
  provider_->PublishParts("users", {a, b});
  const upstream::NodeSet* first = slot->Peek();
  EXPECT_EQ(dir_->stats().published, 1u);
  provider_->PublishParts("users", {b, a});  // the same lists
  EXPECT_EQ(dir_->stats().deduped, 1u);
  provider_->PublishParts("users", {Part("10.0.1.", 1, 3), Part("10.0.2.", 1, 3)});  // a relist
  EXPECT_EQ(dir_->stats().deduped, 2u);
  EXPECT_EQ(slot->Peek(), first) << "same content: same pointer, no picker rebuild";
  EXPECT_EQ(dir_->stats().part_nodes_built, 6u);
  // A part that goes back to an earlier content is found by value: not made again.
  provider_->PublishParts("users", {a, Part("10.0.2.", 1, 2)});
  EXPECT_EQ(dir_->stats().part_nodes_built, 8u);
  EXPECT_EQ(slot->Load()->nodes.size(), 5u);
  // Every part gone: no nodes (503), as an empty list.
  provider_->PublishParts("users", {});
  EXPECT_TRUE(slot->Load()->nodes.empty());
  provider_->PublishParts("users", {nullptr});
  EXPECT_EQ(dir_->stats().deduped, 3u);
}

TEST_F(DirectoryTest, PartsThatCannotStayInPartsAreMergedIntoOneList) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  // Parts that interleave (pod addresses across EndpointSlices do) stay in parts, merged.
  auto odd = std::make_shared<DiscoveredNodes>(
      DiscoveredNodes{{"10.0.0.1", 80, 1, 0}, {"10.0.0.3", 80, 1, 0}});
  auto even = std::make_shared<DiscoveredNodes>(DiscoveredNodes{{"10.0.0.2", 80, 1, 0}});
  provider_->PublishParts("users", {odd, even});
  EXPECT_EQ(dir_->stats().parts_merged, 0u);
  upstream::NodeSetConstSharedPtr set = slot->Load();
  ASSERT_EQ(set->nodes.size(), 3u);
  EXPECT_EQ(Ip(set->nodes[1]), "10.0.0.2");
  EXPECT_TRUE(set->summary.sorted);
  // One host and port in two parts: as one list, both nodes kept (as the merged list has them).
  auto twice = std::make_shared<DiscoveredNodes>(DiscoveredNodes{{"10.0.0.3", 80, 2, 0}});
  provider_->PublishParts("users", {odd, twice});
  EXPECT_EQ(dir_->stats().parts_merged, 1u);
  EXPECT_EQ(slot->Load()->nodes.size(), 3u);
  // A port 0 (the scheme's default): as one list.
  auto bare = std::make_shared<DiscoveredNodes>(DiscoveredNodes{{"10.0.7.1", 0, 1, 0}});
  provider_->PublishParts("users", {odd, bare});
  EXPECT_EQ(dir_->stats().parts_merged, 2u);
  ASSERT_EQ(slot->Load()->nodes.size(), 3u);
  EXPECT_EQ(slot->Load()->nodes[2].port, 80);
  // A domain name: merged, then resolved.
  auto named = std::make_shared<DiscoveredNodes>(DiscoveredNodes{{"svc.test", 81, 1, 0}});
  provider_->PublishParts("users", {Part("10.0.1.", 1, 2), named});
  EXPECT_EQ(dir_->stats().parts_merged, 3u);
  EXPECT_EQ(slot->Load()->nodes.size(), 2u) << "the IP literals at once";
  ASSERT_EQ(resolver_.Answer("svc.test", "10.0.9.9"), 1);
  set = slot->Load();
  ASSERT_EQ(set->nodes.size(), 3u);
  EXPECT_EQ(Ip(set->nodes[2]), "10.0.9.9");
  // A node failing the schema: no nodes at all (APISIX's invalid nodes format).
  auto bad = std::make_shared<DiscoveredNodes>(DiscoveredNodes{{"10.0.5.1", 80, -1, 0}});
  provider_->PublishParts("users", {Part("10.0.1.", 1, 2), bad});
  EXPECT_EQ(dir_->stats().invalid, 1u);
  EXPECT_TRUE(slot->Load()->nodes.empty());
  EXPECT_EQ(dir_->hosts(), 0u) << "the name is no longer used";
  // Back to parts that stay in parts.
  provider_->PublishParts("users", {Part("10.0.1.", 1, 2)});
  EXPECT_EQ(slot->Load()->nodes.size(), 2u);
  EXPECT_EQ(dir_->stats().parts_merged, 4u);
}

TEST_F(DirectoryTest, ListsAndPartsTakeTurns) {
  auto a = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(a, "fake", "users")});
  provider_->PublishParts("users", {Part("10.0.1.", 1, 2), Part("10.0.2.", 1, 2)});
  EXPECT_EQ(a->Load()->nodes.size(), 4u);
  // A second upstream of the service, bound later, gets the answer in parts at once.
  auto b = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(a, "fake", "users"), Discovered(b, "fake", "users")});
  ASSERT_EQ(b->Load()->nodes.size(), 4u);
  EXPECT_EQ(&b->Load()->nodes[0], &a->Load()->nodes[0]) << "both sets share the service's nodes";
  // A plain list replaces it; then parts again.
  provider_->Publish("users", {{"10.0.3.1", 80, 1, 0}});
  EXPECT_EQ(a->Load()->nodes.size(), 1u);
  EXPECT_EQ(b->Load()->nodes.size(), 1u);
  provider_->PublishParts("users", {Part("10.0.1.", 1, 2)});
  EXPECT_EQ(a->Load()->nodes.size(), 2u);
  EXPECT_EQ(Ip(b->Load()->nodes[1]), "10.0.1.2");
  // The same list as a list, after parts: a new answer (not compared with the parts).
  const upstream::NodeSet* parted = a->Peek();
  provider_->Publish("users", {{"10.0.1.1", 80, 1, 0}, {"10.0.1.2", 80, 1, 0}});
  EXPECT_EQ(a->Peek(), parted) << "an equal set is not stored";
}

// Slices of pod addresses interleave and change a few at a time: each answer's order is the
// last one's with the changed parts' nodes dropped and inserted, and is the sorted union of the
// parts, as a merge of every part gives it.
TEST_F(DirectoryTest, FewChangedPartsUpdateTheLastOrder) {
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  Lcg next{99};
  uint32_t serial = 0;  // every address made is new: no host and port twice
  auto part = [&](uint32_t size) {
    std::vector<std::string> ips;
    for (uint32_t i = 0; i < size; ++i, ++serial) {
      ips.push_back("10." + std::to_string(next(4)) + "." + std::to_string(serial / 250) + "." +
                    std::to_string(serial % 250));
    }
    auto list = std::make_shared<DiscoveredNodes>();
    for (const std::string& ip : ips) list->push_back({ip, 8080, 1, 0});
    std::sort(list->begin(), list->end(), NodeKeyLess);
    return DiscoveredNodesConstSharedPtr(std::move(list));
  };
  std::vector<DiscoveredNodesConstSharedPtr> parts;
  for (int i = 0; i < 30; ++i) parts.push_back(part(20));
  provider_->PublishParts("users", parts);
  EXPECT_EQ(dir_->stats().parts_full_merges, 1u);
  for (int round = 0; round < 200; ++round) {
    const uint64_t built = dir_->stats().part_nodes_built;
    const std::vector<DiscoveredNodesConstSharedPtr> before = parts;
    const uint32_t what = next(3);
    if (what == 0 && parts.size() > 20) {
      parts.erase(parts.begin() + next(static_cast<uint32_t>(parts.size())));
    } else if (what == 1 && parts.size() < 40) {
      parts.push_back(part(1 + next(20)));
    } else {
      for (uint32_t n = 1 + next(3); n > 0; --n) {
        parts[next(static_cast<uint32_t>(parts.size()))] = part(1 + next(20));
      }
    }
    size_t changed = 0;  // the nodes of the parts that are new
    for (const auto& p : parts) {
      if (std::find(before.begin(), before.end(), p) == before.end()) changed += p->size();
    }
    provider_->PublishParts("users", parts);
    const upstream::NodeSetConstSharedPtr got = slot->Load();
    DiscoveredNodes all;
    for (const auto& p : parts) all.insert(all.end(), p->begin(), p->end());
    std::sort(all.begin(), all.end(), NodeKeyLess);
    ASSERT_EQ(got->nodes.size(), all.size()) << "round " << round;
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(got->nodes[i].host, all[i].host) << "round " << round << " node " << i;
    }
    EXPECT_TRUE(got->summary.sorted);
    EXPECT_TRUE(std::is_sorted(got->nodes.begin(), got->nodes.end(),
                               [](const upstream::Node& a, const upstream::Node& b) {
                                 return upstream::NodeOrder(a, b) < 0;
                               }));
    EXPECT_EQ(dir_->stats().part_nodes_built - built, changed) << "round " << round;
  }
  EXPECT_EQ(dir_->stats().parts_full_merges, 1u) << "every later order updated from the last";
  EXPECT_EQ(dir_->stats().parts_merged, 0u);
}

// Whatever the parts (sorted each, interleaving or not, ports 0 and explicit, weights and
// priorities, IPv6), the set stored is the one the merged list gives, with the same summary.
TEST_F(DirectoryTest, PartsGiveTheSetOfTheirMergedList) {
  const std::vector<std::string> hosts = {"10.0.0.1", "10.0.0.2", "10.0.0.10", "10.0.1.1",
                                          "10.0.2.1", "::1",      "fe80::2",   "fe80::3"};
  auto slot = std::make_shared<upstream::NodeSetSlot>();
  dir_->Apply({Discovered(slot, "fake", "users")});
  Lcg next{4321};
  std::vector<DiscoveredNodesConstSharedPtr> pool;  // earlier parts, offered again
  for (int round = 0; round < 400; ++round) {
    std::vector<DiscoveredNodesConstSharedPtr> parts;
    const uint32_t count = next(5);
    for (uint32_t p = 0; p < count; ++p) {
      if (!pool.empty() && next(2) == 0) {
        parts.push_back(pool[next(static_cast<uint32_t>(pool.size()))]);
        continue;
      }
      DiscoveredNodes list;
      const uint32_t size = next(4);
      for (uint32_t i = 0; i < size; ++i) {
        list.push_back({hosts[next(static_cast<uint32_t>(hosts.size()))],
                        static_cast<int>(next(3)) * 40, 1 + static_cast<int>(next(2)),
                        static_cast<int>(next(2))});
      }
      std::sort(list.begin(), list.end(), NodeKeyLess);
      auto shared = std::make_shared<const DiscoveredNodes>(std::move(list));
      pool.push_back(shared);
      parts.push_back(std::move(shared));
    }
    if (pool.size() > 12) pool.erase(pool.begin());
    provider_->PublishParts("users", parts);
    upstream::NodeSet want;
    for (const DiscoveredNode& n : MergeParts(parts)) {
      upstream::Node node;
      ASSERT_TRUE(ParseIpLiteral(n.host, static_cast<uint16_t>(n.port == 0 ? 80 : n.port), &node));
      FinishNode(n, &node);
      want.nodes.push_back(node);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSet(*slot->Load(), want, round));
  }
  EXPECT_GT(dir_->stats().parts_merged, 0u) << "some rounds interleaved";
  EXPECT_GT(dir_->stats().stored, dir_->stats().parts_merged) << "others stayed in parts";
}

}  // namespace
}  // namespace turnpike::discovery
