// DiscoveryService's control API side: /v1/discovery/<name>/dump asks the provider that runs
// under that name, and /v1/discovery/consul/show_dump_file reads the file that
// discovery.consul.dump.path names (APISIX's consul control API), with its 503 answers.
#include "daemon/discovery_service.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <fstream>
#include <memory>
#include <string>

#include "support/files.h"

namespace turnpike::daemon {
namespace {

using Json = nlohmann::json;

// A provider with something to dump (or nothing, like most of APISIX's).
class DumpingProvider final : public DiscoveryProvider {
 public:
  explicit DumpingProvider(Json dump) : dump_(std::move(dump)) {}
  Status Start(const DiscoveryEnvironment&) override { return Status::Ok(); }
  void Watch(const ServiceRef&) override {}
  void Unwatch(const ServiceRef&) override {}
  void Stop() override {}
  Json Dump() const override { return dump_; }

 private:
  Json dump_;
};

class DumpingFactory final : public DiscoveryProviderFactory {
 public:
  DumpingFactory(std::string name, Json dump) : name_(std::move(name)), dump_(std::move(dump)) {}
  std::string_view name() const override { return name_; }
  StatusOr<std::unique_ptr<DiscoveryProvider>> Create(const Json&) const override {
    return std::unique_ptr<DiscoveryProvider>(std::make_unique<DumpingProvider>(dump_));
  }

 private:
  std::string name_;
  Json dump_;
};

class DiscoveryServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    registry_.Register(std::make_unique<DumpingFactory>("consul", Json{{"services", {}}}));
    registry_.Register(std::make_unique<DumpingFactory>("nacos", Json()));
  }
  void TearDown() override {
    if (service_) service_->Stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    service_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  void Start(std::vector<std::pair<std::string, Json>> discovery) {
    service_ = std::make_unique<DiscoveryService>(&registry_, std::move(discovery));
    ASSERT_TRUE(service_->Start(&loop_).ok());
  }

  uv_loop_t loop_{};
  discovery::ProviderRegistry registry_;
  std::unique_ptr<DiscoveryService> service_;
};

TEST_F(DiscoveryServiceTest, DumpAsksTheConfiguredProvider) {
  ASSERT_NO_FATAL_FAILURE(Start({{"consul", Json::object()}, {"nacos", Json::object()}}));
  std::optional<Json> consul = service_->Dump("consul");
  ASSERT_TRUE(consul.has_value());
  EXPECT_EQ(*consul, (Json{{"services", {}}}));
  std::optional<Json> nacos = service_->Dump("nacos");
  ASSERT_TRUE(nacos.has_value()) << "configured";
  EXPECT_TRUE(nacos->is_null()) << "with nothing to show";
  EXPECT_FALSE(service_->Dump("dns").has_value()) << "not configured";
}

TEST_F(DiscoveryServiceTest, ShowDumpFile) {
  testing::TempDir dir;
  std::string path = dir.File("consul.dump");
  std::ofstream(path) << R"({"services":{"web":[{"host":"127.0.0.1","port":80,"weight":1}]}})";
  ASSERT_NO_FATAL_FAILURE(Start(
      {{"consul", Json{{"dump", {{"path", path}}}}}, {"nacos", Json{{"dump", {{"path", path}}}}}}));
  std::optional<admin::HttpAnswer> file = service_->ShowDumpFile("consul");
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->status, 200);
  EXPECT_EQ(file->content_type, "text/plain");
  EXPECT_EQ(file->body, R"({"services":{"web":[{"host":"127.0.0.1","port":80,"weight":1}]}})");
  EXPECT_FALSE(service_->ShowDumpFile("nacos").has_value()) << "consul's endpoint only";

  std::remove(path.c_str());
  std::optional<admin::HttpAnswer> gone = service_->ShowDumpFile("consul");
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->status, 503);
  EXPECT_EQ(gone->body, path + ": No such file or directory");
}

TEST_F(DiscoveryServiceTest, ShowDumpFileWithoutDumpParams) {
  ASSERT_NO_FATAL_FAILURE(Start({{"consul", Json::object()}}));
  std::optional<admin::HttpAnswer> answer = service_->ShowDumpFile("consul");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 503);
  EXPECT_EQ(answer->body, "dump params is nil");
}

TEST_F(DiscoveryServiceTest, NoShowDumpFileWithoutConsul) {
  ASSERT_NO_FATAL_FAILURE(Start({}));
  EXPECT_FALSE(service_->ShowDumpFile("consul").has_value());
  EXPECT_FALSE(service_->Dump("consul").has_value());
}

}  // namespace
}  // namespace turnpike::daemon
