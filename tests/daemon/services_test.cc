// Plugin services (include/turnpike/service.h): the daemon starts them when it serves and
// stops them on shutdown; `turnpike check` builds the plugins but never starts them.
#include "daemon/services.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "daemon/check.h"
#include "daemon/control.h"
#include "metrics/registry.h"
#include "support/fake_clock.h"
#include "support/files.h"
#include "support/net.h"
#include "turnpike/typed_factory.h"

namespace turnpike::daemon {
namespace {

struct Counts {
  std::atomic<int> created{0}, started{0}, stopped{0};
  std::atomic<int> start_workers{0};
  std::vector<std::string>* order = nullptr;  // names, as started / stopped
};

class RecordingService final : public Service {
 public:
  RecordingService(std::string name, Counts* counts, bool fail)
      : name_(std::move(name)), counts_(counts), fail_(fail) {}
  Status Start(ServiceContext& ctx) override {
    if (fail_) return Status::Error("cannot connect");
    ++counts_->started;
    counts_->start_workers = ctx.worker_count();
    attr_ = ctx.attr();
    if (counts_->order) counts_->order->push_back("start " + name_);
    return Status::Ok();
  }
  void Stop() override {
    ++counts_->stopped;
    if (counts_->order) counts_->order->push_back("stop " + name_);
  }
  nlohmann::json attr_;

 private:
  std::string name_;
  Counts* counts_;
  bool fail_;
};

class NopPlugin final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseLog; }
};

class ServiceFactory final : public PluginFactory {
 public:
  ServiceFactory(std::string name, Counts* counts, bool fail = false)
      : name_(std::move(name)), counts_(counts), service_(name_, counts, fail) {}
  std::string_view name() const override { return name_; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&, FactoryContext&) const override {
    ++counts_->created;
    return PluginConstSharedPtr(std::make_shared<NopPlugin>());
  }
  Service* service() const override { return &service_; }

 private:
  std::string name_;
  Counts* counts_;
  mutable RecordingService service_;
};

class NoServiceFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "plain"; }
  int priority() const override { return 2; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&, FactoryContext&) const override {
    return PluginConstSharedPtr(std::make_shared<NopPlugin>());
  }
};

constexpr char kRoutes[] = R"(routes:
  - id: r1
    uri: /a
    plugins:
      svc-test: {}
    upstream:
      nodes: {"127.0.0.1:1": 1}
#END
)";

TEST(ServiceHostTest, StartsInOrderStopsInReverseAndOnlyOnce) {
  Counts counts;
  std::vector<std::string> order;
  counts.order = &order;
  proxy::PluginRegistry registry;
  registry.Register(std::make_unique<ServiceFactory>("a", &counts));
  registry.Register(std::make_unique<NoServiceFactory>());
  registry.Register(std::make_unique<ServiceFactory>("b", &counts));
  config::GatewayConfig gateway;
  gateway.worker_processes = 3;
  gateway.plugin_attr = {{"b", nlohmann::json{{"k", 1}}}};
  testing::FakeClock clock;
  metrics::Registry metrics(3);
  {
    ServiceHost host(gateway, clock, metrics);
    ASSERT_TRUE(host.StartAll(registry).ok());
    ASSERT_TRUE(host.StartAll(registry).ok());  // no second start
    EXPECT_EQ(host.running(), 2u);
    EXPECT_EQ(counts.start_workers, 3);
    auto* b = static_cast<RecordingService*>(registry.Find("b")->service());
    EXPECT_EQ(b->attr_, (nlohmann::json{{"k", 1}}));
    host.StopAll();
    host.StopAll();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"start a", "start b", "stop b", "stop a"}));
}

TEST(ServiceHostTest, AFailedStartStopsTheStartedOnes) {
  Counts counts;
  proxy::PluginRegistry registry;
  registry.Register(std::make_unique<ServiceFactory>("a", &counts));
  registry.Register(std::make_unique<ServiceFactory>("broken", &counts, /*fail=*/true));
  config::GatewayConfig gateway;
  testing::FakeClock clock;
  metrics::Registry metrics(1);
  ServiceHost host(gateway, clock, metrics);
  Status s = host.StartAll(registry);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "plugin broken: cannot connect");
  EXPECT_EQ(counts.started, 1);
  EXPECT_EQ(counts.stopped, 1);
  EXPECT_EQ(host.running(), 0u);
}

TEST(CheckTest, BuildsThePluginsButNeverStartsServices) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::WriteFile(dir.File("apisix.yaml"), kRoutes));
  config::GatewayConfig gateway;
  gateway.routes_file = dir.File("apisix.yaml");
  Counts counts;
  proxy::PluginRegistry registry;
  registry.Register(std::make_unique<ServiceFactory>("svc-test", &counts));
  std::FILE* err = std::tmpfile();
  CheckResult r = CheckRoutes(gateway, registry, err);
  std::fclose(err);
  EXPECT_TRUE(r.loaded);
  EXPECT_EQ(r.problems, 0);
  EXPECT_EQ(r.routes, 1u);
  EXPECT_EQ(counts.created, 1);
  EXPECT_EQ(counts.started, 0);
  EXPECT_EQ(counts.stopped, 0);
}

TEST(ControlTest, StartsServicesWhenServingAndStopsThemOnShutdown) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::WriteFile(dir.File("apisix.yaml"), kRoutes));
  auto gateway = std::make_shared<config::GatewayConfig>();
  gateway->routes_file = dir.File("apisix.yaml");
  gateway->worker_processes = 1;
  gateway->enable_ipv6 = false;
  int port = testing::FreePort();
  ASSERT_NE(port, 0);
  gateway->listen = {config::ListenAddr{"127.0.0.1", port}};
  Counts counts;
  int rc = -1;
  {
    Control control(gateway, [&counts](proxy::PluginRegistry* r) {
      r->Register(std::make_unique<ServiceFactory>("svc-test", &counts));
    });
    std::thread runner([&] { rc = control.Run(); });
    testing::PollUntil([&] { return counts.started > 0; }, std::chrono::seconds(20));
    EXPECT_EQ(counts.started, 1);
    EXPECT_GE(counts.created, 1);  // the first snapshot was built before the start
    EXPECT_TRUE(testing::WaitForPort(port, std::chrono::seconds(10)));
    EXPECT_EQ(counts.stopped, 0);
    kill(getpid(), SIGTERM);  // the daemon's graceful stop (handled on its loop)
    runner.join();
  }
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(counts.started, 1);
  EXPECT_EQ(counts.stopped, 1);
}

}  // namespace
}  // namespace turnpike::daemon
