#include "plugins/echo/echo.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/fake_factory_context.h"

namespace turnpike::plugins::echo {
namespace {

FactoryContext& TestContext() { return turnpike::testing::FakeFactoryContext::Default(); }

// Records what the plugin asks of the request.
class FakeContext : public PluginContext {
 public:
  std::optional<std::string_view> Get(const VarRef&) override { return std::nullopt; }
  void Respond(int, std::string_view) override {}
  void SetRequestHeader(std::string_view, std::string_view) override {}
  void RemoveRequestHeader(std::string_view) override {}
  int response_status() const override { return 200; }
  void SetResponseHeader(std::string_view n, std::string_view v) override {
    headers[std::string(n)] = std::string(v);
  }
  void RemoveResponseHeader(std::string_view n) override { headers.erase(std::string(n)); }
  void MarkBodyModified() override { body_modified = true; }
  void* FindRequestState(const void* key, const RequestStateType& type) override {
    return states.Find(key, type);
  }

  RequestStateStore states;
  std::map<std::string, std::string> headers;
  bool body_modified = false;
};

PluginConstSharedPtr Make(const char* json) {
  StatusOr<PluginConstSharedPtr> p =
      EchoFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p.value() : nullptr;
}

std::string Error(const char* json) {
  StatusOr<PluginConstSharedPtr> p =
      EchoFactory().Create(nlohmann::json::parse(json), TestContext());
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : p.status().message();
}

// Runs `pieces` through the filter as the proxy would; returns what the client gets.
std::string Filter(const Plugin& plugin, std::vector<std::string> pieces) {
  FakeContext ctx;
  std::string out;
  std::string scratch;
  for (size_t i = 0; i < pieces.size(); ++i) {
    BodyPiece piece{pieces[i], i == 0, i + 1 == pieces.size(), &scratch};
    plugin.BodyFilter(ctx, piece);
    out.append(piece.data);
    if (piece.last) break;
  }
  return out;
}

TEST(EchoTest, ValidatesLikeApisix) {
  EXPECT_EQ(Error(R"({"body": 1})"),
            "property \"body\" validation failed: wrong type: expected string, got number");
  EXPECT_NE(Error(R"({"headers": {"a": "b"}})").find("one of \"before_body\""), std::string::npos);
  EXPECT_NE(Error(R"({"body": "x", "headers": {}})").find("at least 1"), std::string::npos);
  EXPECT_EQ(Error(R"({"body": "x", "headers": {"a": true}})"), "invalid type as header value");
}

TEST(EchoTest, ReplacesPrefixesAndSuffixesTheBody) {
  EXPECT_EQ(Filter(*Make(R"({"body": "new"})"), {"old1", "old2"}), "new");
  EXPECT_EQ(Filter(*Make(R"({"before_body": "<", "after_body": ">"})"), {"a", "b", "c"}), "<abc>");
  EXPECT_EQ(Filter(*Make(R"({"before_body": "[", "body": "x", "after_body": "]"})"), {"o"}), "[x]");
  EXPECT_EQ(Filter(*Make(R"({"after_body": "!"})"), {"one"}), "one!");
}

TEST(EchoTest, HeaderFilterSetsHeadersAndMarksTheBodyModified) {
  PluginConstSharedPtr p = Make(R"({"body": "x", "headers": {"X-A": "1", "X-N": 2}})");
  FakeContext ctx;
  p->HeaderFilter(ctx);
  EXPECT_TRUE(ctx.body_modified);
  EXPECT_EQ(ctx.headers["X-A"], "1");
  EXPECT_EQ(ctx.headers["X-N"], "2");
  EXPECT_EQ(p->phases(), kPhaseHeaderFilter | kPhaseBodyFilter);
}

}  // namespace
}  // namespace turnpike::plugins::echo
