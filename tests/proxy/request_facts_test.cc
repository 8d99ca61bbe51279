// The nginx variables RequestFacts makes ($request_time, $upstream_*, $bytes_sent, ...), read
// through the request context as plugins and `vars` read them.

#include <gtest/gtest.h>

#include <string>

#include "http/parser.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "support/full_match.h"

namespace turnpike::proxy {
namespace {

class RequestFactsTest : public ::testing::Test {
 protected:
  void Parse(std::string raw) {
    raw_ = std::move(raw);
    ASSERT_EQ(parser_.ParseHead(raw_.data(), raw_.size(), &head_), 0);
    conn_ = {"10.0.0.9", "50000", "127.0.0.1", "9080"};
    ctx_.Begin(&conn_, &head_, head_.path, "example.com", "1.2.3.4");
    ctx_.facts().Begin(/*loop_ms=*/1000, /*wall_ms=*/1700000000123, raw_.size());
  }
  std::optional<std::string> Var(std::string_view name) {
    StatusOr<VarRef> ref = CompileVar(name);
    EXPECT_TRUE(ref.ok()) << name;
    std::optional<std::string_view> v = ctx_.Get(ref.value());
    return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
  }
  static bool Like(const std::optional<std::string>& v, const char* re) {
    return testing::FullMatch(v, re);
  }

  std::string raw_;
  http::RequestParser parser_;
  http::RequestHead head_;
  ConnectionInfo conn_;
  RequestContext ctx_;
};

TEST_F(RequestFactsTest, RequestSideVariables) {
  Parse(
      "POST /a/b?x=1 HTTP/1.0\r\nHost: h\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\n\r\n");
  EXPECT_EQ(Var("content_type"), "application/json");
  EXPECT_EQ(Var("content_length"), "2");
  EXPECT_EQ(Var("server_protocol"), "HTTP/1.0");
  EXPECT_EQ(Var("server_name"), "_");
  EXPECT_EQ(Var("document_uri"), "/a/b");
  EXPECT_EQ(Var("request"), "POST /a/b?x=1 HTTP/1.0");
  EXPECT_TRUE(Var("hostname").has_value());
  EXPECT_EQ(Var("pid"), std::to_string(getpid()));
  EXPECT_TRUE(Like(Var("msec"), R"(\d{10}\.\d{3})")) << *Var("msec");
  EXPECT_FALSE(Like(std::string("1700000000.12"), R"(\d{10}\.\d{3})"));  // whole string only
  EXPECT_FALSE(Like(std::string("x1700000000.123"), R"(\d{10}\.\d{3})"));
  EXPECT_TRUE(Like(Var("time_iso8601"), R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d)"))
      << *Var("time_iso8601");
  EXPECT_TRUE(Like(Var("time_local"), R"(\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})"))
      << *Var("time_local");
  EXPECT_FALSE(Var("request_body"));
  ctx_.facts().SetRequestBody("{}");
  EXPECT_EQ(Var("request_body"), "{}");
}

TEST_F(RequestFactsTest, ConnectionCountersAndRequestId) {
  Parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  std::optional<std::string> conn = Var("connection");
  ASSERT_TRUE(Like(conn, R"([1-9]\d*)"));
  EXPECT_EQ(Var("connection_requests"), "1");
  std::optional<std::string> id = Var("request_id");
  EXPECT_TRUE(Like(id, "[0-9a-f]{32}")) << *id;
  EXPECT_EQ(Var("request_id"), id);  // fixed for the request
  Parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n");  // next request, same connection
  EXPECT_EQ(Var("connection"), conn);
  EXPECT_EQ(Var("connection_requests"), "2");
  EXPECT_NE(Var("request_id"), id);
  RequestContext other;  // another connection
  EXPECT_NE(&other, &ctx_);
}

TEST_F(RequestFactsTest, LaterPhaseVariablesAreNilUntilKnown) {
  Parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  for (const char* name :
       {"request_time", "bytes_sent", "body_bytes_sent", "request_length", "upstream_addr",
        "upstream_status", "upstream_response_time", "upstream_connect_time",
        "upstream_header_time", "upstream_host", "balancer_ip", "balancer_port",
        "upstream_scheme"}) {
    EXPECT_FALSE(Var(name)) << name;
  }
  RequestTiming t = ctx_.timing();
  EXPECT_EQ(t.start_ms, 1700000000123);
  EXPECT_EQ(t.latency_ms, -1);
  EXPECT_EQ(t.upstream_ms, -1);
}

TEST_F(RequestFactsTest, UpstreamAttemptsAndTheEnd) {
  Parse("GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
  Route route;
  Upstream up;
  route.upstream = &up;
  ctx_.SetRoute(&route);
  EXPECT_EQ(Var("upstream_scheme"), "http");
  RequestFacts& f = ctx_.facts();
  f.UpstreamAttempt("10.0.0.1", 8080, "h", 1001);
  EXPECT_EQ(Var("upstream_addr"), "10.0.0.1:8080");
  EXPECT_FALSE(Var("upstream_status"));  // nothing came back yet
  f.UpstreamEnd(502, 1004);               // refused
  f.UpstreamAttempt("::1", 9090, "node-b", 1004);
  f.UpstreamConnected(1005, /*reused=*/false);
  f.UpstreamHeader(200, 1007);
  f.UpstreamEnd(0, 1010);
  EXPECT_EQ(Var("upstream_addr"), "10.0.0.1:8080, [::1]:9090");
  EXPECT_EQ(Var("upstream_status"), "502, 200");
  EXPECT_EQ(Var("upstream_connect_time"), "-, 0.001");
  EXPECT_EQ(Var("upstream_header_time"), "-, 0.003");
  EXPECT_EQ(Var("upstream_response_time"), "0.003, 0.006");
  EXPECT_EQ(Var("upstream_host"), "node-b");
  EXPECT_EQ(Var("balancer_ip"), "::1");
  EXPECT_EQ(Var("balancer_port"), "9090");
  std::string head = "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n\r\n";
  f.Finish(/*now_ms=*/2234, /*bytes_sent=*/head.size() + 5, /*request_body_bytes=*/0, head);
  EXPECT_EQ(Var("request_time"), "1.234");
  EXPECT_EQ(Var("bytes_sent"), std::to_string(head.size() + 5));
  EXPECT_EQ(Var("body_bytes_sent"), "5");
  EXPECT_EQ(Var("request_length"), std::to_string(raw_.size()));
  RequestTiming t = ctx_.timing();
  EXPECT_EQ(t.latency_ms, 1234);
  EXPECT_EQ(t.upstream_ms, 9);
  std::string seen;
  ForEachHeader(ctx_, &PluginContext::VisitResponseHeaders,
                [&](std::string_view n, std::string_view v) {
                  seen.append(n).append("=").append(v).append(";");
                });
  EXPECT_EQ(seen, "Server=t;Content-Length=5;");
  seen.clear();
  ForEachHeader(ctx_, &PluginContext::VisitRequestHeaders,
                [&](std::string_view n, std::string_view v) {
                  seen.append(n).append("=").append(v).append(";");
                });
  EXPECT_EQ(seen, "Host=h;");
}

TEST_F(RequestFactsTest, PooledConnectionConnectsInNoTime) {
  Parse("GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
  RequestFacts& f = ctx_.facts();
  f.UpstreamAttempt("10.0.0.1", 80, "h", 1000);
  f.UpstreamConnected(1003, /*reused=*/true);
  EXPECT_EQ(Var("upstream_connect_time"), "0.000");
  EXPECT_FALSE(Var("upstream_response_time"));  // not over yet
}

}  // namespace
}  // namespace turnpike::proxy
