// A chash upstream whose nodes come from Consul (the FAKE agent of support/fake_consul.h, as in
// discovery_consul_test) and change under load, through a daemon with two workers: the
// control thread builds one ring per published node set and both workers pick with it
// (upstream/chash.h). Requests keep flowing across the changes (none fails), keys follow
// the nodes while they change, and once the registry is back to what it was every key is
// back on the node it had, whichever worker serves it.

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "integration/discovery_fixture.h"
#include "support/fake_consul.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeConsul;

class ChashDiscoveryTest : public DiscoveryTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(DiscoveryTest::SetUp());
    ASSERT_TRUE(consul_.Start());
    RegisterA();
    RegisterB();
  }

  void RegisterA() { consul_.Register(FakeConsul::Make("web-a", "web", "127.0.0.1", a_->port())); }
  void RegisterB() { consul_.Register(FakeConsul::Make("web-b", "web", "127.0.0.1", b_->port())); }

  std::string Discovery(const std::string& extra) const override {
    return "  consul:\n    servers:\n      - \"" + consul_.url() + "\"\n" + extra;
  }

  static std::string Routes() {
    return R"(
routes:
  - uri: /*
    upstream_id: web
upstreams:
  - id: web
    type: chash
    hash_on: header
    key: X-User
    discovery_type: consul
    service_name: web
#END
)";
  }

  static std::string User(int i) { return "user-" + std::to_string(i); }

  // The backend of each of `users` keys, when 4 fresh connections each (both workers) agree
  // on it; a key whose answers differ or fail maps to "".
  std::map<std::string, std::string> Owners(int users) {
    std::map<std::string, std::string> owners;
    for (int u = 0; u < users; ++u) {
      std::string owner;
      for (int i = 0; i < 4; ++i) {
        HttpResponse r = Get(gw_.port(), "/status/200", {{"X-User", User(u)}});
        const std::string b = r.status == 200 ? BackendOf(r) : "";
        if (i == 0) owner = b;
        if (b != owner) owner.clear();
      }
      owners[User(u)] = owner;
    }
    return owners;
  }

  FakeConsul consul_;
};

TEST_F(ChashDiscoveryTest, RequestsKeepFlowingWhileTheNodesChange) {
  TurnpikeOptions options = Options();
  options.worker_processes = 2;
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(), options));
  constexpr int kUsers = 16;
  const std::map<std::string, std::string> before = Owners(kUsers);
  std::set<std::string> used;
  for (const auto& [user, owner] : before) {
    ASSERT_FALSE(owner.empty()) << user << " is not sticky";
    used.insert(owner);
  }
  EXPECT_EQ(used.size(), 2u) << "16 keys over 2 equal nodes use both";

  // Every 20 ms one step of: B leaves, B is back, A leaves, A is back. A new node set (and
  // ring) at each step; always one node at least.
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (int step = 0; !stop.load(); ++step) {
      switch (step % 4) {
        case 0:
          consul_.Deregister("web-b");
          break;
        case 1:
          RegisterB();
          break;
        case 2:
          consul_.Deregister("web-a");
          break;
        default:
          RegisterA();
          break;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  int requests = 0;
  int failures = 0;
  std::string first_failure;
  std::map<std::string, std::set<std::string>> seen;  // user -> backends that served it
  const auto until = std::chrono::steady_clock::now() + seconds(3);
  for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
    const std::string user = User(i % kUsers);
    HttpResponse r = Get(gw_.port(), "/status/200", {{"X-User", user}});
    ++requests;
    if (r.status != 200) {
      if (failures++ == 0) first_failure = r.DebugString();
      continue;
    }
    seen[user].insert(BackendOf(r));
  }
  stop = true;
  churn.join();
  EXPECT_EQ(failures, 0) << "of " << requests << " requests; the first:\n" << first_failure;
  EXPECT_GT(requests, 100);
  int moved = 0;  // keys served by both backends: the changes reached the workers
  for (const auto& [user, backends] : seen) moved += backends.size() == 2 ? 1 : 0;
  // (Each step lasts 20 ms and the keys come in turn, so most keys, not surely all, were
  // asked while their node was away.)
  EXPECT_GE(moved, kUsers / 2) << "keys lose their node for a while, then get it back";

  // The registry as it was: the same nodes, so the same ring, so the same owners.
  RegisterA();
  RegisterB();
  EXPECT_TRUE(PollUntil([&] { return Owners(kUsers) == before; }, seconds(5)));
}

}  // namespace
}  // namespace turnpike::itest
