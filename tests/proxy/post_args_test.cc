// post_arg_NAME: which snapshots ask for form bodies to be read before routing, and how the
// request context answers from a buffered body. (Warm form requests allocating nothing:
// alloc_test.cc.)

#include <gtest/gtest.h>

#include <string>

#include "config/specs.h"
#include "http/parser.h"
#include "proxy/plugin_registry.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {
namespace {

// ---------------------------------------------------------------- the request context

class PostArgContextTest : public ::testing::Test {
 protected:
  void Parse(std::string raw) {
    raw_ = std::move(raw);
    ASSERT_EQ(parser_.ParseHead(raw_.data(), raw_.size(), &head_), 0);
    conn_ = {"10.0.0.9", "50000", "127.0.0.1", "9080"};
    ctx_.Begin(&conn_, &head_, head_.path, "example.com", "1.2.3.4");
  }
  std::optional<std::string_view> Var(std::string_view name) {
    StatusOr<VarRef> ref = CompileVar(name);
    EXPECT_TRUE(ref.ok()) << name;
    return ctx_.Get(ref.value());
  }

  std::string raw_;
  http::RequestParser parser_;
  http::RequestHead head_;
  ConnectionInfo conn_;
  RequestContext ctx_;
};

TEST_F(PostArgContextTest, FieldsOfABufferedFormBody) {
  Parse(
      "POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
      "Content-Length: 30\r\n\r\n");
  EXPECT_FALSE(Var("post_arg_name"));  // not read (streaming): no fields
  std::string body = "name=a+b&x=%31&x=2&flag&e=";
  ctx_.SetBufferedBody(body);
  EXPECT_EQ(Var("post_arg_name"), "a b");
  EXPECT_EQ(Var("post_arg_x"), "1");
  EXPECT_EQ(Var("post_arg_flag"), "");
  EXPECT_EQ(Var("post_arg_e"), "");
  EXPECT_FALSE(Var("post_arg_missing"));
  // Parsed once: later changes of the bytes are not looked at again within the request.
  body.assign(body.size(), 'z');
  EXPECT_EQ(Var("post_arg_name"), "a b");
  // A new request starts without a body.
  Parse(
      "POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
      "Content-Length: 6\r\n\r\n");
  EXPECT_FALSE(Var("post_arg_name"));
  std::string next = "name=n";
  ctx_.SetBufferedBody(next);
  EXPECT_EQ(Var("post_arg_name"), "n");
}

TEST_F(PostArgContextTest, OnlyFormContentTypesHaveFields) {
  std::string body = "name=x";
  for (const char* type :
       {"application/x-www-form-urlencoded", "application/x-www-form-urlencoded; charset=UTF-8"}) {
    Parse(std::string("POST / HTTP/1.1\r\nHost: h\r\nContent-Type: ") + type +
          "\r\nContent-Length: 6\r\n\r\n");
    ctx_.SetBufferedBody(body);
    EXPECT_EQ(Var("post_arg_name"), "x") << type;
  }
  for (const char* type : {"text/plain", "multipart/form-data", "Application/X-Www-Form-Urlencoded",
                           "application/json"}) {
    Parse(std::string("POST / HTTP/1.1\r\nHost: h\r\nContent-Type: ") + type +
          "\r\nContent-Length: 6\r\n\r\n");
    ctx_.SetBufferedBody(body);
    EXPECT_FALSE(Var("post_arg_name")) << type;
  }
  Parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\n");
  ctx_.SetBufferedBody(body);
  EXPECT_FALSE(Var("post_arg_name"));
}

// ---------------------------------------------------------------- the snapshot flag

// A plugin that does nothing; its configuration is whatever the test writes.
class NopPlugin final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseAccess; }
};
class NopFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "nop"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&, FactoryContext&) const override {
    return PluginConstSharedPtr(std::make_shared<NopPlugin>());
  }
};

class PostArgSnapshotTest : public ::testing::Test {
 protected:
  PostArgSnapshotTest() { registry_.Register(std::make_unique<NopFactory>()); }

  config::RouteSpec& AddRoute(const std::string& id) {
    config::RouteSpec r;
    r.id = id;
    r.uris = {"/" + id};
    r.upstream_id = "u";
    routes_.routes.push_back(r);
    return routes_.routes.back();
  }
  SnapshotConstSharedPtr Build() {
    if (routes_.upstreams.empty()) {
      config::UpstreamSpec up;
      up.id = "u";
      up.nodes.push_back({.host = "127.0.0.1", .port = 9, .weight = 1});
      routes_.upstreams.push_back(up);
    }
    BuildReport report;
    SnapshotConstSharedPtr snap =
        BuildSnapshot({&gateway_, &routes_, nullptr, 1, &registry_}, &report);
    EXPECT_TRUE(report.errors.empty()) << report.errors.front().message;
    return snap;
  }
  static config::PluginSpec Nop(const char* conf) {
    return {"nop", nlohmann::json::parse(conf), {}, "plugins.nop"};
  }

  config::GatewayConfig gateway_;
  config::RoutesConfig routes_;
  PluginRegistry registry_;
};

TEST_F(PostArgSnapshotTest, OrdinaryRoutesReadNoBody) {
  AddRoute("plain");
  AddRoute("vars").vars = config::VarsSpec{
      nlohmann::json::parse(R"([["arg_name", "==", "x"], ["http_content_type", "~~", "form"]])"),
      {},
      "vars"};
  AddRoute("plugin").plugins = {Nop(R"({"note": "post args are fine to mention"})")};
  SnapshotConstSharedPtr snap = Build();
  EXPECT_FALSE(snap->needs_post_args);
  for (const Route& r : snap->routes) EXPECT_FALSE(r.needs_post_args) << r.id;
}

TEST_F(PostArgSnapshotTest, RouteVarsReadingPostArgs) {
  AddRoute("plain");
  AddRoute("form").vars = config::VarsSpec{
      nlohmann::json::parse(R"(["OR", ["arg_a", "==", "1"], ["post_arg_name", "==", "x"]])"),
      {},
      "vars"};
  SnapshotConstSharedPtr snap = Build();
  EXPECT_TRUE(snap->needs_post_args);
  EXPECT_FALSE(snap->routes[0].needs_post_args);
  EXPECT_TRUE(snap->routes[1].needs_post_args);
}

TEST_F(PostArgSnapshotTest, PluginsMentioningPostArgs) {
  AddRoute("template").plugins = {Nop(R"({"key": "$post_arg_user"})")};
  AddRoute("nested").plugins = {Nop(R"({"rules": [{"vars": [["post_arg_a", "==", "1"]]}]})")};
  SnapshotConstSharedPtr snap = Build();
  EXPECT_TRUE(snap->needs_post_args);
  EXPECT_TRUE(snap->routes[0].needs_post_args);
  EXPECT_TRUE(snap->routes[1].needs_post_args);
}

TEST_F(PostArgSnapshotTest, GlobalRulesMentioningPostArgs) {
  AddRoute("plain");
  routes_.global_rules.push_back({"g1", {Nop(R"({"key": "${post_arg_user}"})")}, {}, "g"});
  SnapshotConstSharedPtr snap = Build();
  EXPECT_TRUE(snap->needs_post_args);
  EXPECT_FALSE(snap->routes[0].needs_post_args);
}

}  // namespace
}  // namespace turnpike::proxy
