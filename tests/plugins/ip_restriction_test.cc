#include "plugins/ip_restriction/ip_restriction.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/fake_plugin_context.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::ip_restriction {
namespace {

FactoryContext& TestContext() { return turnpike::testing::FakeFactoryContext::Default(); }

using testing::FakePluginContext;

std::shared_ptr<const IpRestrictionPlugin> Make(const char* json) {
  StatusOr<PluginConstSharedPtr> p =
      IpRestrictionFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::static_pointer_cast<const IpRestrictionPlugin>(p.value()) : nullptr;
}

std::string Error(const char* json) {
  StatusOr<PluginConstSharedPtr> p =
      IpRestrictionFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_FALSE(p.ok()) << json;
  return p.ok() ? "" : p.status().message();
}

TEST(IpRestrictionTest, ValidatesLikeApisix) {
  EXPECT_EQ(Error("{}"), "value should match only one schema, but matches none");
  EXPECT_EQ(Error(R"({"whitelist": ["1.1.1.1"], "blacklist": ["2.2.2.2"]})"),
            "value should match only one schema, but matches both schemas 1 and 2");
  EXPECT_EQ(Error(R"({"whitelist": []})"),
            "property \"whitelist\" validation failed: expect array to have at least 1 items");
  EXPECT_EQ(Error(R"({"whitelist": "1.1.1.1"})"),
            "property \"whitelist\" validation failed: wrong type: expected array, got string");
  EXPECT_EQ(Error(R"({"whitelist": ["10.0.0.0/8", "10.0.0.256"]})"),
            "property \"whitelist\" validation failed: failed to validate item 2: object matches "
            "none of the required (invalid ip address: 10.0.0.256)");
  EXPECT_NE(Error(R"({"blacklist": ["::1/129"]})").find("invalid ip address: ::1/129"),
            std::string::npos);
  EXPECT_NE(Error(R"({"blacklist": ["1.2.3.4/33"]})").find("failed to validate item 1"),
            std::string::npos);
  EXPECT_NE(Error(R"({"blacklist": [1]})").find("failed to validate item 1"), std::string::npos);
  EXPECT_EQ(Error(R"({"whitelist": ["1.1.1.1"], "message": ""})"),
            "property \"message\" validation failed: string too short, expected at least 1, got 0");
  std::string long_message =
      R"({"whitelist": ["1.1.1.1"], "message": ")" + std::string(1025, 'a') + "\"}";
  EXPECT_EQ(Error(long_message.c_str()),
            "property \"message\" validation failed: string too long, expected at most 1024, got "
            "1025");
  EXPECT_EQ(Error(R"({"whitelist": ["1.1.1.1"], "response_code": 409})"),
            "property \"response_code\" validation failed: expected 409 to be at most 404");
  EXPECT_EQ(Error(R"({"whitelist": ["1.1.1.1"], "response_code": 402})"),
            "property \"response_code\" validation failed: expected 402 to be at least 403");
}

TEST(IpRestrictionTest, WhitelistLetsOnlyListedClientsIn) {
  auto p = Make(R"({"whitelist": ["10.255.254.0/24", "192.168.0.0/16", "2001:db8::/32",
                                  "127.0.0.1"]})");
  EXPECT_TRUE(p->Allows("10.255.254.0"));
  EXPECT_TRUE(p->Allows("10.255.254.255"));
  EXPECT_FALSE(p->Allows("10.255.255.0"));
  EXPECT_FALSE(p->Allows("10.255.253.255"));
  EXPECT_TRUE(p->Allows("192.168.77.1"));
  EXPECT_TRUE(p->Allows("127.0.0.1"));
  EXPECT_FALSE(p->Allows("127.0.0.2"));
  EXPECT_TRUE(p->Allows("2001:db8::1"));
  EXPECT_TRUE(p->Allows("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"));
  EXPECT_FALSE(p->Allows("2001:db9::"));
  EXPECT_FALSE(p->Allows("::ffff:127.0.0.1"));  // families do not mix
  EXPECT_FALSE(p->Allows(""));                  // unparsable: not listed
  EXPECT_FALSE(p->Allows("not-an-ip"));
}

TEST(IpRestrictionTest, BlacklistTurnsListedClientsAway) {
  auto p = Make(R"({"blacklist": ["127.0.0.0/24", "::1"]})");
  EXPECT_FALSE(p->Allows("127.0.0.9"));
  EXPECT_FALSE(p->Allows("::1"));
  EXPECT_TRUE(p->Allows("127.0.1.0"));
  EXPECT_TRUE(p->Allows("::2"));
  EXPECT_TRUE(p->Allows("garbage"));
}

TEST(IpRestrictionTest, AnswersWithApisixJsonMessage) {
  auto p = Make(R"({"blacklist": ["10.0.0.0/8"], "message": "Do you want to do something bad?",
                    "response_code": 404})");
  FakePluginContext ctx;
  ctx.vars["remote_addr"] = "10.1.2.3";
  p->Access(ctx);
  EXPECT_TRUE(ctx.responded);
  EXPECT_EQ(ctx.respond_status, 404);
  EXPECT_EQ(ctx.respond_body, "{\"message\":\"Do you want to do something bad?\"}\n");

  FakePluginContext other;
  other.vars["remote_addr"] = "11.1.2.3";
  p->Access(other);
  EXPECT_FALSE(other.responded);

  auto deny = Make(R"({"whitelist": ["10.0.0.0/8"]})");
  p->Access(ctx);
  FakePluginContext outsider;
  outsider.vars["remote_addr"] = "8.8.8.8";
  deny->Access(outsider);
  EXPECT_EQ(outsider.respond_status, 403);
  EXPECT_EQ(outsider.respond_body, "{\"message\":\"Your IP address is not allowed\"}\n");
}

TEST(IpRestrictionTest, ReplyBodyEscapesLikeCjson) {
  EXPECT_EQ(ReplyBody("a \"b\" c/d"), "{\"message\":\"a \\\"b\\\" c\\/d\"}\n");
}

// A message from YAML may not be UTF-8; building the reply used json::dump(), which threw out
// of Create() (found by tests/fuzz/yaml_config_fuzz). The bytes now read as U+FFFD.
TEST(IpRestrictionTest, MessageThatIsNotUtf8) {
  nlohmann::json conf = {{"blacklist", {"10.0.0.1"}}, {"message", "no \xff entry"}};
  StatusOr<PluginConstSharedPtr> p = StatusOr<PluginConstSharedPtr>(Status::Error("not run"));
  ASSERT_NO_THROW(p = IpRestrictionFactory().Create(conf, TestContext()));
  ASSERT_TRUE(p.ok()) << p.status().message();
  FakePluginContext ctx;
  ctx.vars = {{"remote_addr", "10.0.0.1"}};
  p.value()->Access(ctx);
  EXPECT_EQ(ctx.respond_body, "{\"message\":\"no \xEF\xBF\xBD entry\"}\n");
}

}  // namespace
}  // namespace turnpike::plugins::ip_restriction
