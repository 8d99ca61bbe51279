// LoadGatewayConfig / LoadRoutesConfig: reading real files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

class LoaderFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/turnpike_config_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
  testing::ScopedEnv no_worker_env_{"APISIX_WORKER_PROCESSES", std::nullopt};
};

TEST_F(LoaderFileTest, LoadsBothFiles) {
  std::string config = Write("config.yaml", "apisix:\n  node_listen: 9095\n");
  auto g = LoadGatewayConfig(config, 2);
  ASSERT_TRUE(g.value.has_value());
  EXPECT_EQ(g.value->file, config);
  EXPECT_EQ(g.value->listen.at(0).port, 9095);
  EXPECT_EQ(g.value->routes_file, dir_ + "/apisix.yaml");

  std::string routes = Write("apisix.yaml", "routes:\n  - {uri: /a, upstream_id: 1}\n#END\n");
  auto r = LoadRoutesConfig(g.value->routes_file);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(r.value->file, routes);
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].loc.file, routes);
}

TEST_F(LoaderFileTest, JsonProviderLoadsApisixJson) {
  std::string config = Write(
      "config.yaml", "deployment:\n  role: data_plane\n  role_data_plane:\n"
                     "    config_provider: json\n");
  auto g = LoadGatewayConfig(config, 2);
  ASSERT_TRUE(g.value.has_value()) << ::testing::PrintToString(testing::Strings(g.errors));
  EXPECT_EQ(g.value->routes_file, dir_ + "/apisix.json");

  std::string routes = Write("apisix.json",
                             "{\n  \"routes\": [\n    {\"uri\": \"/a\", \"upstream_id\": 1}\n  ]\n}\n");
  auto r = LoadRoutesConfig(g.value->routes_file);
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(testing::Strings(r.errors));
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].loc.file, routes);
  EXPECT_EQ(r.value->routes[0].loc.line, 3);

  // The extension decides: YAML text in a .json file is not JSON.
  std::string yaml_in_json = Write("wrong.json", "routes: []\n#END\n");
  auto wrong = LoadRoutesConfig(yaml_in_json);
  EXPECT_FALSE(wrong.value.has_value());
  ASSERT_EQ(wrong.errors.size(), 1u);
  EXPECT_EQ(wrong.errors[0].message.rfind("invalid JSON: ", 0), 0u);
}

TEST_F(LoaderFileTest, MissingFilesAreFileLevelErrors) {
  std::string missing = dir_ + "/nope.yaml";
  auto g = LoadGatewayConfig(missing, 2);
  EXPECT_FALSE(g.value.has_value());
  EXPECT_EQ(testing::Strings(g.errors),
            (std::vector<std::string>{missing + ": cannot open file: No such file or directory"}));
  auto r = LoadRoutesConfig(missing);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(r.errors.size(), 1u);
  auto dir = LoadRoutesConfig(dir_);
  EXPECT_FALSE(dir.value.has_value());
  EXPECT_EQ(dir.errors.size(), 1u);
}

// The sample files shipped in conf/ must load cleanly.
TEST(SampleConfigTest, ShippedConfLoadsWithoutErrorsOrWarnings) {
  std::string here = __FILE__;  // <root>/tests/config/loader_file_test.cc
  std::string root = here.substr(0, here.rfind("/tests/config/"));
  testing::ScopedEnv no_worker_env("APISIX_WORKER_PROCESSES", std::nullopt);
  auto g = LoadGatewayConfig(root + "/conf/config.yaml", 4);
  ASSERT_TRUE(g.value.has_value()) << ::testing::PrintToString(testing::Strings(g.errors));
  EXPECT_TRUE(g.warnings.empty()) << ::testing::PrintToString(testing::Strings(g.warnings));
  EXPECT_EQ(g.value->role, "data_plane");
  auto r = LoadRoutesConfig(g.value->routes_file);
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(testing::Strings(r.errors));
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(testing::Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(testing::Strings(r.warnings));
  EXPECT_FALSE(r.value->routes.empty());
}

}  // namespace
}  // namespace turnpike::config
