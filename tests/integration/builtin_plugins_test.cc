// The built-in request-id, ip-restriction and response-rewrite plugins through the real
// daemon: each on its own route, then all of them and file-logger on one route with a global
// rule, so every phase (rewrite, access, header_filter, body_filter, log) is seen end to end.

#include <chrono>
#include <string>
#include <thread>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

bool IsUuidV4(const std::string& s) {
  if (s.size() != 36 || s[14] != '4') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = s[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

class BuiltinPluginsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 1u) << "backend did not start"; }

  void Start(const std::string& yaml, const TurnpikeOptions& options = {}) {
    std::string upstream = "{nodes: [" + Node(backends_[0]->port()) + "]}";
    ASSERT_NO_FATAL_FAILURE(StartGateway(
        gw_, Fill(yaml, {{"A", upstream}, {"LOG", dir_.File("log.json")}}), options));
  }
  HttpResponse Send(const std::string& path, const Headers& headers = {}) {
    HttpRequest req;
    req.target = path;
    for (const auto& h : headers) req.headers.push_back(h);
    return Fetch(gw_.port(), req);
  }

  // The log file's lines once it has `n` (file-logger's writer flushes every 50 ms).
  std::vector<std::string> LogLines(size_t n) {
    std::vector<std::string> lines;
    for (int i = 0; i < 250 && lines.size() < n; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      lines.clear();
      std::string text = ReadFile(dir_.File("log.json"));
      for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
        lines.push_back(text.substr(pos, nl - pos));
      }
    }
    return lines;
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  TempDir dir_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(BuiltinPluginsTest, RequestIdReachesTheNodeAndComesBack) {
  Start(R"(
routes:
  - uri: /echo
    upstream: {A}
    plugins:
      request-id: {}
  - uri: /echo/nano
    upstream: {A}
    plugins:
      request-id: {header_name: X-Trace, algorithm: nanoid, include_in_response: false}
#END
)");
  HttpResponse r = Send("/echo");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  std::string id = r.Header("X-Request-Id").value_or("");
  EXPECT_TRUE(IsUuidV4(id)) << id;
  EXPECT_EQ(Echo(r).Header("X-Request-Id").value_or(""), id);
  EXPECT_NE(Send("/echo").Header("X-Request-Id").value_or(""), id);  // a new one per request

  // The client's own id is kept, upstream and in the response.
  r = Send("/echo", {{"X-Request-Id", "client-123"}});
  EXPECT_EQ(r.Header("X-Request-Id").value_or(""), "client-123");
  EXPECT_EQ(Echo(r).HeaderValues("X-Request-Id"), std::vector<std::string>{"client-123"});

  r = Send("/echo/nano");
  EXPECT_FALSE(r.HasHeader("X-Trace"));
  EXPECT_EQ(Echo(r).Header("X-Trace").value_or("").size(), 21u);
}

TEST_F(BuiltinPluginsTest, IpRestrictionUsesTheRealClientAddress) {
  TurnpikeOptions options;
  options.http_extra = "    real_ip_header: X-Forwarded-For\n    real_ip_from: [127.0.0.1]\n";
  Start(R"(
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      ip-restriction: {blacklist: [10.0.0.0/8, "2001:db8::/32"]}
  - uri: /echo
    upstream: {A}
    plugins:
      ip-restriction: {whitelist: [192.168.1.0/24], message: "go away", response_code: 404}
#END
)",
        options);
  HttpResponse r = Send("/hello");
  EXPECT_EQ(r.status, 200);  // 127.0.0.1
  EXPECT_EQ(r.body, "hello world\n");
  r = Send("/hello", {{"X-Forwarded-For", "10.9.8.7"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "{\"message\":\"Your IP address is not allowed\"}\n");
  EXPECT_FALSE(r.HasHeader("X-Backend-Id"));
  EXPECT_EQ(Send("/hello", {{"X-Forwarded-For", "2001:db8::1"}}).status, 403);
  EXPECT_EQ(Send("/hello", {{"X-Forwarded-For", "11.0.0.1"}}).status, 200);

  r = Send("/echo");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "{\"message\":\"go away\"}\n");
  EXPECT_EQ(Send("/echo", {{"X-Forwarded-For", "192.168.1.20"}}).status, 200);
}

TEST_F(BuiltinPluginsTest, ResponseRewriteStatusHeadersAndBody) {
  Start(R"(
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      response-rewrite:
        filters: [{regex: "world", replace: "turnpike", scope: global}]
        headers: {set: {X-Client: "$remote_addr:$remote_port", X-Backend-Id: "hidden"}}
  - uri: /status/500
    upstream: {A}
    plugins:
      response-rewrite:
        vars: [["status", "==", 200]]
        body: "never\n"
  - uri: /status/201
    upstream: {A}
    plugins:
      response-rewrite:
        status_code: 302
        body: "moved\n"
        headers: {Location: "https://example.com/"}
  - uri: /bytes/*
    upstream: {A}
    plugins:
      response-rewrite:
        filters: [{regex: "abc", replace: "-", scope: global}]
  - uri: /bytes/0
    upstream: {A}
    plugins:
      response-rewrite: {body: "replaced\n"}
#END
)");
  HttpResponse r = Send("/hello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello turnpike\n");
  EXPECT_FALSE(r.HasHeader("Content-Length"));
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.Header("X-Backend-Id").value_or(""), "hidden");
  EXPECT_EQ(r.Header("X-Client").value_or("").rfind("127.0.0.1:", 0), 0u);

  r = Send("/status/500");  // vars do not match: untouched
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "status 500\n");
  EXPECT_EQ(r.Header("Content-Length").value_or(""), "11");

  r = Send("/status/201");
  EXPECT_EQ(r.status, 302);
  EXPECT_EQ(r.reason, "Found");
  EXPECT_EQ(r.body, "moved\n");
  EXPECT_EQ(r.Header("Location").value_or(""), "https://example.com/");

  // A body of many chunks is held back and substituted whole: "abc" at every 26 bytes,
  // including across the node's 16 KiB chunk boundaries.
  r = Send("/bytes/100000?chunked=1");
  ASSERT_EQ(r.status, 200);
  std::string expected;
  for (size_t i = 0; i < 100000; ++i) expected.push_back(static_cast<char>('a' + i % 26));
  for (size_t pos = 0; (pos = expected.find("abc", pos)) != std::string::npos; ++pos) {
    expected.replace(pos, 3, "-");
  }
  EXPECT_EQ(r.body.size(), expected.size());
  EXPECT_TRUE(r.body == expected);

  // A body that ends with the node's close, and an empty one, still reach the filters'
  // last call: the held-back body is substituted and sent, not lost.
  r = Send("/bytes/100?close=1");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 100u - 4 * 2);  // "abc" 4 times in 100 bytes, each 2 shorter
  EXPECT_EQ(r.body.substr(0, 4), "-def");
  r = Send("/bytes/0");  // Content-Length: 0 from the node
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "replaced\n");
  EXPECT_TRUE(r.chunked);
}

// Every phase with real plugins on one route: request-id (rewrite, header_filter),
// ip-restriction (access), response-rewrite (header_filter, body_filter), file-logger (log).
TEST_F(BuiltinPluginsTest, AllPhasesOnOneRouteWithAGlobalRule) {
  TurnpikeOptions options;
  options.http_extra = "    real_ip_header: X-Forwarded-For\n    real_ip_from: [127.0.0.1]\n";
  Start(R"(
global_rules:
  - id: 1
    plugins:
      response-rewrite:
        headers: {add: ["X-Global: $request_method $uri"]}
routes:
  - uri: /echo
    upstream: {A}
    plugins:
      request-id: {header_name: X-Req}
      ip-restriction: {whitelist: [127.0.0.1, 10.0.0.0/8]}
      response-rewrite:
        vars: [["status", "==", 200]]
        filters: [{regex: '"uri":"/echo"', replace: '"uri":"/rewritten"'}]
        headers: {set: {X-Rewritten: "yes"}}
      file-logger:
        path: "{LOG}"
        log_format: {id: "$http_x_req", status: "$status", route: "$route_id"}
#END
)",
        options);
  HttpResponse r = Send("/echo");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  // rewrite: the node saw a generated id, and header_filter echoed the same one.
  std::string id = r.Header("X-Req").value_or("");
  EXPECT_TRUE(IsUuidV4(id)) << r.DebugString();
  EchoedRequest e = Echo(r);
  EXPECT_EQ(e.Header("X-Req").value_or(""), id);
  // body_filter rewrote the node's body, so its length is gone.
  EXPECT_EQ(e.uri, "/rewritten");
  EXPECT_FALSE(r.HasHeader("Content-Length"));
  EXPECT_EQ(r.Header("X-Rewritten").value_or(""), "yes");
  EXPECT_EQ(r.Header("X-Global").value_or(""), "GET /echo");

  // access: a client outside the whitelist is turned away before the node; the global
  // rule's and request-id's header filters still run, the route's vars do not match 403.
  r = Send("/echo", {{"X-Forwarded-For", "8.8.8.8"}, {"X-Req", "mine"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "{\"message\":\"Your IP address is not allowed\"}\n");
  EXPECT_EQ(r.Header("X-Req").value_or(""), "mine");
  EXPECT_EQ(r.Header("X-Global").value_or(""), "GET /echo");
  EXPECT_FALSE(r.HasHeader("X-Rewritten"));
  EXPECT_FALSE(r.HasHeader("X-Backend-Id"));

  EXPECT_EQ(Send("/echo", {{"X-Forwarded-For", "10.1.1.1"}, {"X-Req", "third"}}).status, 200);
  // No route: the global rule still runs.
  r = Send("/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.Header("X-Global").value_or(""), "GET /nothing");

  // log: one line per request on the route, with the id request-id set (on the request, so
  // `$http_x_req` reads the generated one, as in nginx) and the final status, the 403 too.
  // Two workers may write in either order.
  std::string all;
  for (const std::string& line : LogLines(3)) all += line + "\n";
  EXPECT_NE(all.find("{\"id\":\"" + id + "\",\"route\":\"arr_1\",\"status\":\"200\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("{\"id\":\"mine\",\"route\":\"arr_1\",\"status\":\"403\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("{\"id\":\"third\",\"route\":\"arr_1\",\"status\":\"200\""),
            std::string::npos)
      << all;
}

TEST_F(BuiltinPluginsTest, InvalidConfigsAreRejectedWithApisixMessages) {
  Start(R"(
routes:
  - uri: /bad
    upstream: {A}
    plugins:
      response-rewrite: {status_code: 599}
  - uri: /hello
    upstream: {A}
#END
)");
  // The bad route is skipped, the rest serves.
  EXPECT_EQ(Send("/bad").status, 404);
  EXPECT_EQ(Send("/hello").status, 200);
  EXPECT_NE(gw_.Stderr().find("property \"status_code\" validation failed: expected 599 to be at "
                              "most 598"),
            std::string::npos)
      << gw_.Stderr();
}

}  // namespace
}  // namespace turnpike::itest
