// The health state machine (lua-resty-healthcheck's counters and four states),
// the health slot's passive rings and health snapshots, and the pickers'
// fail-open over them.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "upstream/health_slot.h"
#include "upstream/health_state.h"
#include "upstream/round_robin.h"

namespace turnpike::upstream {
namespace {

TEST(TargetStateTest, FailuresOfOneKindReachTheirLimit) {
  TargetState t;
  EXPECT_EQ(t.health(), Health::kHealthy);
  EXPECT_FALSE(t.Report(Outcome::kTcpFailure, 2));
  EXPECT_EQ(t.health(), Health::kMostlyHealthy);
  EXPECT_TRUE(t.up());
  EXPECT_EQ(t.tcp_failures(), 1);
  EXPECT_TRUE(t.Report(Outcome::kTcpFailure, 2));  // crossed to the unhealthy side
  EXPECT_EQ(t.health(), Health::kUnhealthy);
  EXPECT_FALSE(t.up());
  // Fully unhealthy: further failures are not counted.
  EXPECT_FALSE(t.Report(Outcome::kTcpFailure, 2));
  EXPECT_EQ(t.tcp_failures(), 2);
}

TEST(TargetStateTest, KindsCountApartAndASuccessClearsThem) {
  TargetState t;
  t.Report(Outcome::kHttpFailure, 3);
  t.Report(Outcome::kTimeout, 3);
  t.Report(Outcome::kHttpFailure, 3);
  EXPECT_EQ(t.http_failures(), 2);
  EXPECT_EQ(t.timeouts(), 1);
  EXPECT_EQ(t.health(), Health::kMostlyHealthy);
  // A success clears the failure counters but a mostly_healthy target needs
  // `successes` successes to be fully healthy again.
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 2));
  EXPECT_EQ(t.http_failures(), 0);
  EXPECT_EQ(t.timeouts(), 0);
  EXPECT_EQ(t.successes(), 1);
  EXPECT_EQ(t.health(), Health::kMostlyHealthy);
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 2));
  EXPECT_EQ(t.health(), Health::kHealthy);
  // Fully healthy: successes are not counted; a failure clears the success
  // counter.
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 2));
  EXPECT_EQ(t.successes(), 2);
  t.Report(Outcome::kHttpFailure, 3);
  EXPECT_EQ(t.successes(), 0);
  // Interleaved kinds never add up: 2 http + 2 timeouts with limits of 3 stay
  // up.
  t.Report(Outcome::kTimeout, 3);
  t.Report(Outcome::kHttpFailure, 3);
  t.Report(Outcome::kTimeout, 3);
  EXPECT_TRUE(t.up());
  EXPECT_TRUE(t.Report(Outcome::kHttpFailure, 3));
  EXPECT_FALSE(t.up());
}

TEST(TargetStateTest, RecoveryGoesThroughMostlyUnhealthy) {
  TargetState t;
  ASSERT_TRUE(t.Report(Outcome::kTimeout, 1));
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 3));
  EXPECT_EQ(t.health(), Health::kMostlyUnhealthy);
  EXPECT_FALSE(t.up());
  // A failure on the way back clears the successes: it starts over.
  EXPECT_FALSE(t.Report(Outcome::kTcpFailure, 5));
  EXPECT_EQ(t.successes(), 0);
  EXPECT_EQ(t.health(), Health::kMostlyUnhealthy);
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 3));
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 3));
  EXPECT_TRUE(t.Report(Outcome::kSuccess, 3));
  EXPECT_EQ(t.health(), Health::kHealthy);
  EXPECT_EQ(HealthName(t.health()), "healthy");
}

TEST(TargetStateTest, LimitZeroDisablesTheReport) {
  TargetState t;
  EXPECT_FALSE(t.Report(Outcome::kTcpFailure, 0));
  EXPECT_EQ(t.health(), Health::kHealthy);
  EXPECT_EQ(t.tcp_failures(), 0);
  ASSERT_TRUE(t.Report(Outcome::kTcpFailure, 1));
  EXPECT_FALSE(t.Report(Outcome::kSuccess, 0));
  EXPECT_EQ(t.health(), Health::kUnhealthy);
  EXPECT_EQ(HealthName(Health::kMostlyUnhealthy), "mostly_unhealthy");
  EXPECT_EQ(HealthName(Health::kMostlyHealthy), "mostly_healthy");
  EXPECT_EQ(HealthName(Health::kUnhealthy), "unhealthy");
}

Node MakeNode(const char* ip, uint16_t port) {
  Node n;
  n.host = n.ip_text = ip;
  n.port = port;
  auto* sin = reinterpret_cast<sockaddr_in*>(&n.addr);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port);
  inet_pton(AF_INET, ip, &sin->sin_addr);
  n.addr_len = sizeof(sockaddr_in);
  return n;
}

TEST(HealthSlotTest, PassiveRingsKeepOrderPerWorkerAndDropWhenFull) {
  HealthSlot slot(2);
  ASSERT_TRUE(slot.passive());
  Node a = MakeNode("10.0.0.1", 80);
  Node b = MakeNode("10.0.0.2", 81);
  slot.Report(0, a, Outcome::kSuccess, 200);
  slot.Report(1, b, Outcome::kTimeout, 0);
  slot.Report(0, b, Outcome::kTcpFailure, 0);
  std::vector<std::pair<uint16_t, int>> seen;
  slot.Drain([&](const PassiveReport& r) {
    seen.emplace_back(ntohs(reinterpret_cast<const sockaddr_in&>(r.addr).sin_port),
                      static_cast<int>(r.outcome) * 1000 + r.status);
  });
  using P = std::pair<uint16_t, int>;
  EXPECT_EQ(seen, (std::vector<P>{{80, 200}, {81, 2000}, {81, 3000}}));
  seen.clear();
  slot.Drain([&](const PassiveReport&) { seen.emplace_back(0, 0); });
  EXPECT_TRUE(seen.empty());

  for (size_t i = 0; i < HealthSlot::kRingSize + 5; ++i) slot.Report(1, a, Outcome::kSuccess, 200);
  EXPECT_EQ(slot.dropped(), 5u);
  size_t n = 0;
  slot.Drain([&](const PassiveReport&) { ++n; });
  EXPECT_EQ(n, HealthSlot::kRingSize);
  EXPECT_FALSE(HealthSlot(0).passive());
}

TEST(HealthSlotTest, SnapshotsMarkNodesDownByAddress) {
  HealthSlot slot(0);
  EXPECT_EQ(slot.Peek(), nullptr);
  EXPECT_FALSE(slot.used());
  slot.MarkUsed();
  EXPECT_TRUE(slot.used());

  auto health = std::make_shared<HealthSnapshot>();
  health->down = {{"10.0.0.1", 81}, {"10.0.0.3", 80}};
  slot.Store(health);
  EXPECT_EQ(slot.Peek(), health.get());
  auto set = std::make_shared<NodeSet>();
  set->nodes = {MakeNode("10.0.0.1", 80), MakeNode("10.0.0.1", 81), MakeNode("10.0.0.2", 80),
                MakeNode("10.0.0.3", 80)};
  TriedSet down;
  MarkDown(*slot.Load(), *set, &down);
  EXPECT_EQ(down.count(), 2u);
  EXPECT_TRUE(down.Contains(1));
  EXPECT_TRUE(down.Contains(3));

  // The picker skips them, and uses them again when nothing else is left
  // (fail-open).
  RoundRobinPicker p;
  p.Build(set);
  p.set_down(down, slot.Load());
  EXPECT_EQ(p.down_source(), health.get());
  TriedSet tried;
  for (int i = 0; i < 8; ++i) {
    uint32_t n = p.Pick(tried);
    EXPECT_TRUE(n == 0 || n == 2) << n;
  }
  tried.Add(0);
  tried.Add(2);
  uint32_t n = p.Pick(tried);
  EXPECT_TRUE(n == 1 || n == 3) << n;
  // A rebuild forgets the marks and their source.
  p.Build(set);
  EXPECT_EQ(p.down_source(), nullptr);
  EXPECT_EQ(p.down().count(), 0u);
}

}  // namespace
}  // namespace turnpike::upstream
