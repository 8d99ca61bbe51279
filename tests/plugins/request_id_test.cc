#include "plugins/request_id/request_id.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "plugins/fake_plugin_context.h"
#include "plugins/request_id/id_generator.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::request_id {
namespace {

FactoryContext& TestContext() { return turnpike::testing::FakeFactoryContext::Default(); }

using testing::FakePluginContext;

std::shared_ptr<const RequestIdPlugin> Make(const char* json) {
  StatusOr<PluginConstSharedPtr> p =
      RequestIdFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::static_pointer_cast<const RequestIdPlugin>(p.value()) : nullptr;
}

std::string Error(const char* json) {
  StatusOr<PluginConstSharedPtr> p =
      RequestIdFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_FALSE(p.ok()) << json;
  return p.ok() ? "" : p.status().message();
}

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

void ExpectUuid(const std::string& id, char version) {
  ASSERT_EQ(id.size(), 36u) << id;
  for (size_t i = 0; i < id.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      EXPECT_EQ(id[i], '-') << id;
    } else {
      EXPECT_TRUE(IsHex(id[i])) << id;
    }
  }
  EXPECT_EQ(id[14], version) << id;
  EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;  // RFC 4122 variant
}

TEST(RequestIdTest, ValidatesLikeApisix) {
  EXPECT_EQ(Error(R"({"include_in_response": "bad"})"),
            "property \"include_in_response\" validation failed: wrong type: expected boolean, "
            "got string");
  EXPECT_EQ(Error(R"({"algorithm": "bad"})"),
            "property \"algorithm\" validation failed: matches none of the enum values");
  EXPECT_EQ(Error(R"({"header_name": 1})"),
            "property \"header_name\" validation failed: wrong type: expected string, got number");
  EXPECT_EQ(Error(R"({"algorithm": "range_id", "range_id": {"length": 5}})"),
            "property \"range_id\" validation failed: property \"length\" validation failed: "
            "expected 5 to be at least 6");
  EXPECT_EQ(Error(R"({"range_id": {"char_set": "abc"}})"),
            "property \"range_id\" validation failed: property \"char_set\" validation failed: "
            "string too short, expected at least 6, got 3");
  EXPECT_EQ(Error(R"({"range_id": {"length": 7.5}})"),
            "property \"range_id\" validation failed: property \"length\" validation failed: "
            "wrong type: expected integer, got number");
  // Defaults, and unknown fields are ignored as in APISIX's schema.
  auto p = Make(R"({"unknown": 1})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->phases(), uint32_t{kPhaseRewrite | kPhaseHeaderFilter});
  EXPECT_EQ(Make(R"({"include_in_response": false})")->phases(), uint32_t{kPhaseRewrite});
}

TEST(RequestIdTest, GeneratesEachAlgorithmsFormat) {
  std::string id;
  Make("{}")->Generate(&id);
  ExpectUuid(id, '4');
  Make(R"({"algorithm": "uuidv7"})")->Generate(&id);
  ExpectUuid(id, '7');
  Make(R"({"algorithm": "nanoid"})")->Generate(&id);
  EXPECT_EQ(id.size(), 21u);
  EXPECT_EQ(
      id.find_first_not_of("-_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
      std::string::npos)
      << id;
  Make(R"({"algorithm": "range_id", "range_id": {"char_set": "xyz123", "length": 40}})")
      ->Generate(&id);
  EXPECT_EQ(id.size(), 40u);
  EXPECT_EQ(id.find_first_not_of("xyz123"), std::string::npos) << id;
  Make(R"({"algorithm": "range_id"})")->Generate(&id);  // APISIX's defaults
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of(kDefaultCharSet), std::string::npos) << id;
  Make(R"({"algorithm": "ksuid"})")->Generate(&id);
  ASSERT_EQ(id.size(), 27u);
  EXPECT_EQ(id.find_first_not_of("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
            std::string::npos);
}

TEST(RequestIdTest, IdsAreDistinctAndSpreadOverTheAlphabet) {
  auto p = Make("{}");
  std::set<std::string> seen;
  std::string id;
  for (int i = 0; i < 10000; ++i) {
    p->Generate(&id);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 10000u);
  // Every character of a small set shows up at every position.
  auto r = Make(R"({"algorithm": "range_id", "range_id": {"char_set": "abcdef", "length": 6}})");
  std::set<std::pair<size_t, char>> pairs;
  for (int i = 0; i < 2000; ++i) {
    r->Generate(&id);
    for (size_t k = 0; k < id.size(); ++k) pairs.insert({k, id[k]});
  }
  EXPECT_EQ(pairs.size(), 36u);
}

TEST(RequestIdTest, KsuidAndUuidV7CarryTheTime) {
  FastRandom rng(42);
  char k[kKsuidLength];
  Ksuid(rng, 1400000000, k);  // KSUID epoch: timestamp 0
  char z[kKsuidLength];
  Ksuid(rng, 1400000000 + 100, z);
  EXPECT_LT(std::string(k, sizeof(k)), std::string(z, sizeof(z)));  // sortable by time
  char u[kUuidLength];
  UuidV7(rng, 0x0123456789ab, u);
  EXPECT_EQ(std::string(u, 13), "01234567-89ab");
}

TEST(RequestIdTest, GeneratesAndSetsUpstreamAndResponseHeaders) {
  auto p = Make("{}");
  FakePluginContext ctx;
  p->Rewrite(ctx);
  ASSERT_EQ(ctx.upstream_headers.count("x-request-id"), 1u);
  std::string id = ctx.upstream_headers["x-request-id"];
  ExpectUuid(id, '4');
  p->HeaderFilter(ctx);
  EXPECT_EQ(ctx.ResponseValues("X-Request-Id"), std::vector<std::string>{id});

  // A new request gets a new id.
  ctx.NextRequest();
  p->Rewrite(ctx);
  EXPECT_NE(ctx.upstream_headers["x-request-id"], id);
}

TEST(RequestIdTest, KeepsTheClientsIdAndTheNodesResponseHeader) {
  auto p = Make(R"({"header_name": "Custom-Id"})");
  FakePluginContext ctx;
  ctx.request_headers = {{"custom-id", "abc"}};
  p->Rewrite(ctx);
  EXPECT_TRUE(ctx.upstream_headers.empty());  // sent unchanged
  p->HeaderFilter(ctx);
  EXPECT_EQ(ctx.ResponseValues("custom-id"), std::vector<std::string>{"abc"});

  // The node answered with its own id: kept.
  ctx.NextRequest();
  ctx.response_headers = {{"Custom-Id", "from-node"}};
  p->Rewrite(ctx);
  p->HeaderFilter(ctx);
  EXPECT_EQ(ctx.ResponseValues("custom-id"), std::vector<std::string>{"from-node"});

  // An empty client header counts as missing.
  ctx.NextRequest();
  ctx.request_headers = {{"Custom-Id", ""}};
  p->Rewrite(ctx);
  EXPECT_EQ(ctx.upstream_headers["custom-id"].size(), 36u);
}

TEST(RequestIdTest, UnderscoresInHeaderNameMatchDashes) {
  auto p = Make(R"({"header_name": "X_Trace_Id"})");
  FakePluginContext ctx;
  ctx.request_headers = {{"X-Trace-Id", "t1"}};
  p->Rewrite(ctx);
  EXPECT_TRUE(ctx.upstream_headers.empty());
}

TEST(RequestIdTest, NoResponseHeaderWhenExcluded) {
  auto p = Make(R"({"include_in_response": false})");
  FakePluginContext ctx;
  p->Rewrite(ctx);
  EXPECT_EQ(ctx.upstream_headers.size(), 1u);
  EXPECT_EQ(p->phases() & kPhaseHeaderFilter, 0u);
}

}  // namespace
}  // namespace turnpike::plugins::request_id
