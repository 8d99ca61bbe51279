// chash rings built once per node set, off the workers, and shared (upstream/chash.h): the
// snapshot build attaches them to IP-literal sets and discovery::Directory to the sets it
// publishes, before any worker can see the set; two workers' PickerTables then pick with the
// same ring object and build none on their threads; reloads keep the rings of an unchanged
// set, a new set comes with new rings, and a balancer turning chash (or not) gets a slot
// that fits; picks are those of a ring built by the picker itself.
#include <gtest/gtest.h>
#include <uv.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/specs.h"
#include "discovery/directory.h"
#include "discovery/fakes.h"
#include "proxy/picker_table.h"
#include "proxy/snapshot.h"
#include "upstream/chash.h"
#include "upstream/crc32.h"

namespace turnpike::proxy {
namespace {

using upstream::ChashPicker;
using upstream::ChashRings;

config::UpstreamSpec ChashSpec(const std::string& id, int nodes, int first_port = 1000) {
  config::UpstreamSpec u;
  u.id = id;
  u.type = "chash";
  u.hash_on = "header";
  u.key = "X-User";
  for (int i = 0; i < nodes; ++i) {
    u.nodes.push_back({"127.0.0." + std::to_string(1 + i % 200), first_port + i, 1 + i % 3, 0});
  }
  return u;
}

// What one worker saw of `up`: the rings its picker used, the picks for keys "user-0"... and
// the rings it built on its own thread meanwhile.
struct WorkerView {
  const ChashRings* rings = nullptr;
  std::vector<uint32_t> picks;
  uint64_t builds_here = 0;
};

// Runs a worker's part on a thread of its own: a PickerTable reset to `snapshot`, the set of
// `up` pinned and `keys` picks.
WorkerView RunWorker(const Snapshot& snapshot, const Upstream& up, int keys) {
  WorkerView view;
  std::thread worker([&] {
    const uint64_t builds_before = ChashRings::builds_on_this_thread();
    PickerTable table;
    table.Reset(snapshot);
    upstream::NodeSetConstSharedPtr pinned = table.CurrentNodes(up);
    const auto* picker = dynamic_cast<const ChashPicker*>(table.picker(up));
    view.rings = picker == nullptr ? nullptr : picker->rings();
    upstream::TriedSet none;
    for (int k = 0; k < keys; ++k) {
      upstream::PickRequest request;
      request.tried = &none;
      request.hash = upstream::Crc32("user-" + std::to_string(k));
      upstream::PickLease lease;
      view.picks.push_back(table.PickNode(up, *pinned, request, &lease));
      table.EndAttempt(&lease, 0, true);
    }
    view.builds_here = ChashRings::builds_on_this_thread() - builds_before;
  });
  worker.join();
  return view;
}

// The picks of a picker that builds its own ring from `set`'s nodes (no shared rings).
std::vector<uint32_t> OwnRingPicks(const upstream::NodeSet& set, int keys) {
  auto bare = std::make_shared<upstream::NodeSet>();
  bare->nodes = set.nodes;
  ChashPicker picker;
  picker.Build(bare);
  std::vector<uint32_t> picks;
  upstream::TriedSet none;
  for (int k = 0; k < keys; ++k) {
    upstream::PickRequest request;
    request.tried = &none;
    request.hash = upstream::Crc32("user-" + std::to_string(k));
    picks.push_back(picker.Pick(request));
  }
  return picks;
}

class ChashRingsTest : public ::testing::Test {
 protected:
  SnapshotConstSharedPtr Build(const Snapshot* previous = nullptr) {
    BuildReport report;
    SnapshotConstSharedPtr snap =
        BuildSnapshot({&gateway_, &routes_, previous, ++version_, nullptr}, &report);
    EXPECT_TRUE(report.errors.empty());
    return snap;
  }
  static const Upstream& Up(const Snapshot& s, const std::string& key) {
    for (const auto& u : s.upstreams) {
      if (u->key == key) return *u;
    }
    ADD_FAILURE() << "no upstream " << key;
    return *s.upstreams.front();
  }

  config::GatewayConfig gateway_;
  config::RoutesConfig routes_;
  uint64_t version_ = 0;
};

TEST_F(ChashRingsTest, TwoWorkersShareTheRingsTheSnapshotBuildMade) {
  routes_.upstreams = {ChashSpec("c", 300)};
  const uint64_t builds_before = ChashRings::builds_on_this_thread();
  SnapshotConstSharedPtr s = Build();
  EXPECT_EQ(ChashRings::builds_on_this_thread() - builds_before, 1u)
      << "built once, by the snapshot build (the reload job's thread)";
  const Upstream& up = Up(*s, "upstreams/c");
  EXPECT_TRUE(up.nodes->chash());
  upstream::NodeSetConstSharedPtr set = up.nodes->Load();
  ASSERT_NE(set->chash, nullptr);

  WorkerView one = RunWorker(*s, up, 500);
  WorkerView two = RunWorker(*s, up, 500);
  EXPECT_EQ(one.rings, set->chash.get()) << "the set's rings, not a copy";
  EXPECT_EQ(two.rings, one.rings) << "one ring object for both workers";
  EXPECT_EQ(one.builds_here, 0u) << "no ring built on a worker";
  EXPECT_EQ(two.builds_here, 0u);
  EXPECT_EQ(one.picks, OwnRingPicks(*set, 500)) << "the same choices as a ring of its own";
  EXPECT_EQ(two.picks, one.picks);
}

TEST_F(ChashRingsTest, UnchangedSetsKeepTheirRingsNewSetsGetNewOnes) {
  config::UpstreamSpec rr = ChashSpec("rr", 4, 2000);
  rr.type = "roundrobin";
  routes_.upstreams = {ChashSpec("same", 50), ChashSpec("changed", 50, 3000), rr};
  SnapshotConstSharedPtr a = Build();
  EXPECT_EQ(Up(*a, "upstreams/rr").nodes->Load()->chash, nullptr) << "no rings without chash";
  PickerTable table;
  table.Reset(*a);
  table.CurrentNodes(Up(*a, "upstreams/same"));
  const upstream::Picker* same_picker = table.picker(Up(*a, "upstreams/same"));
  const ChashRings* same_rings = Up(*a, "upstreams/same").nodes->Load()->chash.get();
  const ChashRings* changed_rings = Up(*a, "upstreams/changed").nodes->Load()->chash.get();
  const uint64_t picker_builds = table.builds();

  routes_.upstreams[1].nodes[7].weight = 9;
  routes_.upstreams[2].type = "chash";  // same nodes, now chash
  const uint64_t builds_before = ChashRings::builds_on_this_thread();
  SnapshotConstSharedPtr b = Build(a.get());
  EXPECT_EQ(ChashRings::builds_on_this_thread() - builds_before, 2u)
      << "the changed set and the upstream turned chash; not the unchanged one";
  EXPECT_EQ(Up(*b, "upstreams/same").nodes->Load()->chash.get(), same_rings);
  const ChashRings* changed_now = Up(*b, "upstreams/changed").nodes->Load()->chash.get();
  ASSERT_NE(changed_now, nullptr);
  EXPECT_NE(changed_now, changed_rings);
  const Upstream& turned = Up(*b, "upstreams/rr");
  EXPECT_NE(turned.nodes, Up(*a, "upstreams/rr").nodes) << "a slot that carries rings";
  EXPECT_TRUE(turned.nodes->chash());
  EXPECT_NE(turned.nodes->Load()->chash, nullptr);

  // The worker keeps its picker (and the rings in it) for the unchanged set.
  table.Reset(*b);
  table.CurrentNodes(Up(*b, "upstreams/same"));
  EXPECT_EQ(table.picker(Up(*b, "upstreams/same")), same_picker);
  EXPECT_EQ(table.builds(), picker_builds);

  // And back to round robin: a slot without rings again.
  routes_.upstreams[2].type = "roundrobin";
  SnapshotConstSharedPtr c = Build(b.get());
  EXPECT_FALSE(Up(*c, "upstreams/rr").nodes->chash());
  EXPECT_EQ(Up(*c, "upstreams/rr").nodes->Load()->chash, nullptr);
}

// Discovered nodes: the Directory (control thread) attaches the rings before it stores the set,
// so a worker reading the slot from another thread finds them, and builds nothing.
TEST_F(ChashRingsTest, TheDirectoryBuildsTheRingsBeforeItPublishes) {
  gateway_.discovery = {{"fake", nlohmann::json::object()}};
  config::UpstreamSpec u = ChashSpec("d", 0);
  u.discovery_type = "fake";
  u.service_name = "users";
  config::UpstreamSpec plain = u;
  plain.id = "plain";
  plain.type = "roundrobin";
  routes_.upstreams = {u, plain};
  SnapshotConstSharedPtr s = Build();
  const Upstream& up = Up(*s, "upstreams/d");
  ASSERT_TRUE(up.nodes->chash());

  uv_loop_t loop;
  uv_loop_init(&loop);
  discovery::FakeResolver resolver;
  discovery::Directory directory(&loop, &resolver);
  auto provider = std::make_unique<discovery::FakeProvider>();
  discovery::FakeProvider* fake = provider.get();
  directory.AddProvider("fake", std::move(provider));
  ASSERT_TRUE(directory.Start().ok());
  directory.Apply(NodeBindings(*s));

  DiscoveredNodes nodes;
  for (int i = 0; i < 40; ++i) nodes.push_back({"127.0.0.1", 4000 + i, 1 + i % 2, 0});
  fake->Publish("users", nodes);
  upstream::NodeSetConstSharedPtr first = up.nodes->Load();
  ASSERT_EQ(first->nodes.size(), 40u);
  ASSERT_NE(first->chash, nullptr);
  EXPECT_EQ(Up(*s, "upstreams/plain").nodes->Load()->chash, nullptr);
  WorkerView one = RunWorker(*s, up, 200);
  EXPECT_EQ(one.rings, first->chash.get());
  EXPECT_EQ(one.builds_here, 0u);
  EXPECT_EQ(one.picks, OwnRingPicks(*first, 200));

  // The same answer again: deduped, same set, same rings. A changed one: new set, new rings.
  fake->Publish("users", nodes);
  EXPECT_EQ(up.nodes->Load(), first);
  nodes.pop_back();
  fake->Publish("users", nodes);
  upstream::NodeSetConstSharedPtr second = up.nodes->Load();
  ASSERT_NE(second, first);
  ASSERT_NE(second->chash, nullptr);
  EXPECT_NE(second->chash, first->chash);
  WorkerView two = RunWorker(*s, up, 200);
  EXPECT_EQ(two.rings, second->chash.get());
  EXPECT_EQ(two.builds_here, 0u);
  EXPECT_EQ(two.picks, OwnRingPicks(*second, 200));

  first.reset();
  second.reset();
  directory.Stop();
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}

}  // namespace
}  // namespace turnpike::proxy
