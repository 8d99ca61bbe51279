#include "proxy/request_context.h"

#include <gtest/gtest.h>

#include <string>

#include "http/parser.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {
namespace {

class RequestContextTest : public ::testing::Test {
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

TEST_F(RequestContextTest, BuiltinsComeFromTheRequestAndConnection) {
  Parse("GET /a/b?x=1&y=two HTTP/1.1\r\nHost: Example.com:8080\r\n\r\n");
  EXPECT_EQ(Var("remote_addr"), "1.2.3.4");
  EXPECT_EQ(Var("realip_remote_addr"), "10.0.0.9");
  EXPECT_EQ(Var("remote_port"), "50000");
  EXPECT_EQ(Var("server_port"), "9080");
  EXPECT_EQ(Var("host"), "example.com");
  EXPECT_EQ(Var("uri"), "/a/b");
  EXPECT_EQ(Var("request_uri"), "/a/b?x=1&y=two");
  EXPECT_EQ(Var("args"), "x=1&y=two");
  EXPECT_EQ(Var("is_args"), "?");
  EXPECT_EQ(Var("request_method"), "GET");
  EXPECT_EQ(Var("scheme"), "http");
  EXPECT_FALSE(Var("route_id"));
}

TEST_F(RequestContextTest, HeadersArgsAndCookies) {
  Parse(
      "GET /p?a=1&b=&c&a=2 HTTP/1.1\r\nHost: h\r\nX-Api-Key: k1\r\n"
      "Cookie: sid=abc; theme=dark\r\nCookie: more=1\r\n\r\n");
  EXPECT_EQ(Var("http_x_api_key"), "k1");
  EXPECT_EQ(Var("http_host"), "h");
  EXPECT_FALSE(Var("http_x_missing"));
  EXPECT_EQ(Var("arg_a"), "1");  // the first one
  EXPECT_EQ(Var("arg_b"), "");
  EXPECT_EQ(Var("arg_c"), "");
  EXPECT_FALSE(Var("arg_d"));
  EXPECT_EQ(Var("cookie_sid"), "abc");
  EXPECT_EQ(Var("cookie_theme"), "dark");
  EXPECT_EQ(Var("cookie_more"), "1");
  EXPECT_FALSE(Var("cookie_none"));
}

TEST_F(RequestContextTest, HeaderVariablesFollowPluginEdits) {
  Parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: original\r\nX-B: b\r\n\r\n");
  ctx_.SetRequestHeader("x-a", "set");
  ctx_.RemoveRequestHeader("X-B");
  ctx_.SetRequestHeader("X-New", "n");
  EXPECT_EQ(Var("http_x_a"), "set");
  EXPECT_FALSE(Var("http_x_b"));
  EXPECT_EQ(Var("http_x_new"), "n");
  EXPECT_EQ(Var("http_host"), "h");  // untouched headers still come from the request
  ctx_.RemoveRequestHeader("x-new");
  EXPECT_FALSE(Var("http_x_new"));
  // The next request starts from its own head again.
  Parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: original\r\n\r\n");
  EXPECT_EQ(Var("http_x_a"), "original");
}

TEST_F(RequestContextTest, RouteAndParamsAfterMatching) {
  Parse("GET /user/42 HTTP/1.1\r\nHost: h\r\n\r\n");
  Route route;
  route.id = "r1";
  route.service_id = "s1";
  ctx_.SetRoute(&route);
  ctx_.params().names[0] = "id";
  ctx_.params().values[0] = "42";
  ctx_.params().count = 1;
  EXPECT_EQ(Var("route_id"), "r1");
  EXPECT_EQ(Var("service_id"), "s1");
  EXPECT_FALSE(Var("route_name"));
  EXPECT_EQ(Var("uri_param_id"), "42");
  EXPECT_FALSE(Var("uri_param_other"));
  ctx_.SetStatus(404);
  EXPECT_EQ(Var("status"), "404");
}

TEST_F(RequestContextTest, RemoteUserIsTheBasicAuthUser) {
  // "alice:secret:more" -> the name before the first ':'; the scheme is case-insensitive.
  Parse("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: basic   YWxpY2U6c2VjcmV0Om1vcmU=\r\n\r\n");
  EXPECT_EQ(Var("remote_user"), "alice");
  for (const char* auth : {"Bearer YWxpY2U6eA==",    // not Basic
                           "Basic ",                 // no credentials
                           "Basic YWxpY2U=",         // "alice": no ':'
                           "Basic OnNlY3JldA==",     // ":secret": empty name
                           "Basic YWxp*2U6eA=="}) {  // not base64
    Parse(std::string("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: ") + auth + "\r\n\r\n");
    EXPECT_FALSE(Var("remote_user")) << auth;
  }
  Parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_FALSE(Var("remote_user"));
}

TEST(CompileVarTest, RejectsUnknownNames) {
  EXPECT_FALSE(CompileVar("no_such_var").ok());
  EXPECT_EQ(CompileVar("bogus").status().message(), "unknown variable 'bogus'");
  EXPECT_EQ(CompileVar("http_X_Real_IP").value().name, "x-real-ip");
}

}  // namespace
}  // namespace turnpike::proxy
