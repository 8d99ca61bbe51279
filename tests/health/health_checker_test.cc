// HealthChecker on a real loop with real sockets: a checker starts on first use, tcp probes
// take a refusing node out (and the snapshot workers read says so), and the control API's
// JSON has APISIX's shapes.
#include "health/health_checker.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace turnpike::health {
namespace {

// A listening socket on 127.0.0.1 (connects succeed through the backlog), or, with
// `listening` false, a port that was bound and closed again (connects are refused).
class Port {
 public:
  explicit Port(bool listening) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
    socklen_t len = sizeof(sin);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sin), &len);
    port_ = ntohs(sin.sin_port);
    if (listening) {
      EXPECT_EQ(listen(fd_, 64), 0);
    } else {
      close(fd_);
      fd_ = -1;
    }
  }
  ~Port() {
    if (fd_ >= 0) close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

upstream::Node MakeNode(uint16_t port) {
  upstream::Node n;
  n.host = n.ip_text = "127.0.0.1";
  n.port = port;
  auto* sin = reinterpret_cast<sockaddr_in*>(&n.addr);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &sin->sin_addr);
  n.addr_len = sizeof(sockaddr_in);
  return n;
}

class HealthCheckerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    checker_ = std::make_unique<HealthChecker>(&loop_, HealthChecker::Options{10, 10000});
  }
  void TearDown() override {
    checker_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  // Runs the loop until `done` or `ms` pass.
  bool RunUntil(const std::function<bool()>& done, uint64_t ms) {
    const uint64_t end = uv_now(&loop_) + ms;
    while (!done()) {
      if (uv_now(&loop_) >= end) return false;
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }

  Binding MakeBinding(const std::string& name, std::vector<uint16_t> ports, bool passive) {
    auto checks = std::make_shared<config::HealthChecksSpec>();
    checks->active.type = "tcp";
    checks->active.unhealthy_tcp_failures = 1;
    checks->active.healthy_successes = 1;
    if (passive) checks->passive.emplace();
    auto set = std::make_shared<upstream::NodeSet>();
    for (uint16_t p : ports) set->nodes.push_back(MakeNode(p));
    return Binding{name, checks, std::make_shared<upstream::NodeSetSlot>(set),
                   std::make_shared<upstream::HealthSlot>(passive ? 1 : 0)};
  }

  uv_loop_t loop_{};
  std::unique_ptr<HealthChecker> checker_;  // made in SetUp: it needs the initialised loop
};

TEST_F(HealthCheckerTest, StartsOnFirstUseAndTakesARefusingNodeOut) {
  Port up(true);
  Port down(false);
  Binding b = MakeBinding("/apisix/upstreams/1", {up.port(), down.port()}, false);
  upstream::HealthSlotSharedPtr slot = b.health;
  checker_->Start();
  checker_->Apply({b});
  EXPECT_EQ(checker_->checkers(), 1u);

  // Unused: no probe, no nodes in the view, no metric.
  RunUntil([] { return false; }, 200);
  EXPECT_EQ(checker_->stats().probes, 0u);
  EXPECT_EQ(nlohmann::json::parse(checker_->AllJson()),
            nlohmann::json::parse(R"([{"name": "/apisix/upstreams/1", "type": "tcp"}])"));
  EXPECT_TRUE(checker_->Statuses().empty());
  EXPECT_EQ(slot->Peek(), nullptr);

  slot->MarkUsed();
  // The first probes run one healthy.interval (1 s) after the start.
  ASSERT_TRUE(
      RunUntil([&] { return slot->Peek() != nullptr && !slot->Load()->down.empty(); }, 3000));
  EXPECT_EQ(slot->Load()->down,
            (std::vector<upstream::HealthSnapshot::Addr>{{"127.0.0.1", down.port()}}));
  EXPECT_GE(checker_->stats().probes, 2u);

  nlohmann::json all = nlohmann::json::parse(checker_->AllJson());
  ASSERT_TRUE(all.is_array());
  ASSERT_EQ(all.size(), 1u);
  const nlohmann::json& nodes = all[0]["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0],
            nlohmann::json::parse(R"({"ip": "127.0.0.1", "port": )" + std::to_string(up.port()) +
                                  R"(, "hostname": "127.0.0.1", "status": "healthy",
               "counter": {"success": 0, "http_failure": 0, "tcp_failure": 0,
                           "timeout_failure": 0}})"));
  EXPECT_EQ(nodes[1]["status"], "unhealthy");
  EXPECT_EQ(nodes[1]["counter"]["tcp_failure"], 1);
  EXPECT_EQ(checker_->OneJson("/apisix/upstreams/1"), all[0].dump());
  EXPECT_EQ(checker_->OneJson("/apisix/upstreams/2"), std::nullopt);

  std::vector<TargetStatus> statuses = checker_->Statuses();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_TRUE(statuses[0].healthy);
  EXPECT_FALSE(statuses[1].healthy);
  EXPECT_EQ(statuses[1].port, down.port());
  EXPECT_EQ(statuses[1].name, "/apisix/upstreams/1");
}

TEST_F(HealthCheckerTest, PassiveReportsAndNodeChanges) {
  Port a(true);
  Port b(true);
  Binding binding = MakeBinding("/apisix/routes/r", {a.port(), b.port()}, true);
  // No active probes during the test.
  auto checks = std::make_shared<config::HealthChecksSpec>(*binding.checks);
  checks->active.healthy_interval = checks->active.unhealthy_interval = 300;
  checks->passive->unhealthy_statuses = {500};
  checks->passive->unhealthy_http_failures = 2;
  binding.checks = checks;
  upstream::HealthSlotSharedPtr slot = binding.health;
  upstream::NodeSetSlotSharedPtr nodes = binding.nodes;
  checker_->Start();
  checker_->Apply({binding});
  slot->MarkUsed();
  ASSERT_TRUE(RunUntil([&] { return slot->Peek() != nullptr; }, 1000));
  EXPECT_TRUE(slot->Load()->down.empty());

  const upstream::Node node_b = nodes->Load()->nodes[1];
  slot->Report(0, node_b, upstream::Outcome::kSuccess, 500);
  slot->Report(0, node_b, upstream::Outcome::kSuccess, 404);  // in neither list: ignored
  slot->Report(0, node_b, upstream::Outcome::kSuccess, 500);
  ASSERT_TRUE(RunUntil([&] { return !slot->Load()->down.empty(); }, 1000));
  EXPECT_EQ(slot->Load()->down[0].port, b.port());
  EXPECT_EQ(checker_->stats().passive, 3u);  // received; the 404 was not counted

  // B leaves the node set (a discovery answer): its target goes, the snapshot follows.
  auto only_a = std::make_shared<upstream::NodeSet>();
  only_a->nodes.push_back(nodes->Load()->nodes[0]);
  nodes->Store(only_a);
  ASSERT_TRUE(RunUntil([&] { return slot->Load()->down.empty(); }, 1000));
  EXPECT_EQ(checker_->Statuses().size(), 1u);

  // A reload without the upstream drops its checker.
  checker_->Apply({});
  EXPECT_EQ(checker_->checkers(), 0u);
  EXPECT_EQ(checker_->AllJson(), "{}");
}

}  // namespace
}  // namespace turnpike::health
