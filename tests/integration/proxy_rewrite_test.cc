// proxy-rewrite through the real daemon (reference §4.2, §3.2): what the upstream really
// received — request line, Host, headers, X-Forwarded-*, the query — and that no variable a
// client controls can add a line to the upstream request; $uri and $upstream_uri in the access
// log.

#include <chrono>
#include <string>
#include <thread>

#include "integration/itest.h"
#include "support/files.h"

namespace turnpike::itest {
namespace {

class ProxyRewriteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "R"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override { ASSERT_NE(backend_, nullptr); }

  void StartProxy() {
    std::string routes = Fill(R"y(
routes:
  - uri: /tpl
    plugins:
      proxy-rewrite:
        uri: "/echo/$arg_who/${http_x_tenant ?? public}"
        method: PUT
        host: rewritten.example:8080
    upstream: {nodes: [{NODE}]}
  - uri: /api/*
    plugins:
      proxy-rewrite:
        regex_uri: ["^/api/v(\\d+)/(.*)", "/echo/v$1/$2", "^/api/(.*)", "/echo/plain/$1"]
        headers:
          add: {X-Multi: ["a", "$remote_addr"], X-Keep: "added"}
          set: {X-Version: "v$1", X-Gone: ""}
          remove: [X-Drop]
    upstream: {nodes: [{NODE}]}
  - uri: /query
    plugins:
      proxy-rewrite: {uri: "/echo/q?fixed=1"}
    upstream: {nodes: [{NODE}]}
  - uri: /fwd
    plugins:
      proxy-rewrite:
        uri: /echo/fwd
        headers:
          X-Forwarded-Proto: https
          X-Forwarded-Host: fwd.example
          X-Forwarded-Port: "8443"
          X-Forwarded-For: 22.22.22.22
    upstream: {nodes: [{NODE}]}
  - uri: /rmfwd
    plugins:
      proxy-rewrite:
        uri: /echo/rmfwd
        headers: {remove: [X-Forwarded-Host]}
    upstream: {nodes: [{NODE}]}
  - uri: /framing
    plugins:
      proxy-rewrite:
        uri: /echo/framing
        headers:
          set:
            Content-Length: "1"
            Transfer-Encoding: chunked
            Connection: close
            Host: evil.example
            X-Real-IP: 6.6.6.6
            Upgrade: h2c
    upstream: {nodes: [{NODE}]}
  - uri: /inject/*
    plugins:
      proxy-rewrite:
        use_real_request_uri_unsafe: true
        uri: "/echo$uri"
        headers: {set: {X-Uri: "$uri", X-Arg: "$arg_v"}}
    upstream: {nodes: [{NODE}]}
  - uri: /echo/raw*
    plugins:
      proxy-rewrite: {host: test.xxxx.com}
    upstream: {nodes: [{NODE}]}
  - uri: /node
    plugins:
      proxy-rewrite: {uri: /echo/node, host: ignored.example}
    upstream: {nodes: [{NODE}], pass_host: node}
  - uri: /rewrite-host
    plugins:
      proxy-rewrite: {uri: /echo/rh, host: ignored.example}
    upstream: {nodes: [{NODE}], pass_host: rewrite, upstream_host: upstream.example}
#END
)y",
                              {{"NODE", Node(backend_->port())}});
    TurnpikeOptions options;
    options.http_extra = "    enable_access_log: true\n    access_log: " + dir_.File("access.log") +
                         "\n    access_log_format: '$request_uri|$uri|$upstream_uri'\n";
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }

  EchoedRequest Upstream(const HttpRequest& req) {
    HttpResponse r = Fetch(gw_.port(), req);
    EXPECT_EQ(r.status, 200) << r.DebugString();
    return Echo(r);
  }
  EchoedRequest UpstreamGet(const std::string& target, const Headers& headers = {}) {
    return Upstream(HttpRequest{"GET", target, headers, ""});
  }

  // The access log's lines once it has at least `n` (written every 50 ms; waits up to 5 s).
  std::vector<std::string> LogLines(size_t n) {
    std::vector<std::string> out;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      out.clear();
      std::string text = ReadFile(dir_.File("access.log"));
      for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
        out.push_back(text.substr(pos, nl - pos));
      }
      if (out.size() >= n || std::chrono::steady_clock::now() > deadline) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  static inline std::unique_ptr<Backend> backend_;
  TempDir dir_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(ProxyRewriteTest, TemplateMethodAndHost) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/tpl?who=jo&x=1", {{"X-Tenant", "acme"}});
  EXPECT_EQ(e.method, "PUT");
  EXPECT_EQ(e.uri, "/echo/jo/acme?who=jo&x=1");
  EXPECT_EQ(e.Header("Host"), "rewritten.example:8080");
  EXPECT_EQ(e.version, "1.1");
  e = UpstreamGet("/tpl");
  EXPECT_EQ(e.uri, "/echo//public");  // a missing arg renders "", a missing header its default
}

TEST_F(ProxyRewriteTest, RegexUriCapturesAndHeaders) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e =
      UpstreamGet("/api/v2/users/7?page=3",
                  {{"X-Drop", "1"}, {"X-Keep", "client"}, {"X-Gone", "g"}, {"X-Version", "old"}});
  EXPECT_EQ(e.uri, "/echo/v2/users/7?page=3");
  EXPECT_EQ(e.HeaderValues("X-Version"), std::vector<std::string>{"v2"});
  EXPECT_EQ(e.HeaderValues("X-Multi"), (std::vector<std::string>{"a", "127.0.0.1"}));
  EXPECT_EQ(e.HeaderValues("X-Keep"), (std::vector<std::string>{"client", "added"}));
  EXPECT_FALSE(e.HasHeader("X-Drop"));
  EXPECT_FALSE(e.HasHeader("X-Gone"));
  // The second pair; its own (different) groups.
  e = UpstreamGet("/api/other");
  EXPECT_EQ(e.uri, "/echo/plain/other");
  EXPECT_EQ(e.HeaderValues("X-Version"), std::vector<std::string>{"vother"});
}

TEST_F(ProxyRewriteTest, QueryAndEncoding) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EXPECT_EQ(UpstreamGet("/query?a=1&b=2").uri, "/echo/q?fixed=1&a=1&b=2");
  EXPECT_EQ(UpstreamGet("/query").uri, "/echo/q?fixed=1");
  // APISIX's proxy-rewrite3.t TEST 22: no uri / regex_uri, still the normalized $uri, encoded.
  EchoedRequest e =
      UpstreamGet("/echo/raw%3f0z=700%26a=c%20HTTP/1.1%0D%0AHost:google.com%0d%0a%0d%0a");
  EXPECT_EQ(e.Header("Host"), "test.xxxx.com");
  EXPECT_EQ(e.uri, "/echo/raw%3F0z=700&a=c%20HTTP/1.1%0D%0AHost:google.com%0D%0A%0D%0A");
  // Dot segments resolved, '%' encoded.
  EXPECT_EQ(UpstreamGet("/echo/raw/../raw%25x").uri, "/echo/raw%25x");
}

TEST_F(ProxyRewriteTest, ForwardedHeadersFromThePlugin) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/fwd", {{"X-Forwarded-For", "1.1.1.1"},
                                         {"X-Forwarded-Proto", "grpc"},
                                         {"X-Forwarded-Host", "client.example"}});
  EXPECT_EQ(e.HeaderValues("X-Forwarded-Proto"), std::vector<std::string>{"https"});
  EXPECT_EQ(e.HeaderValues("X-Forwarded-Host"), std::vector<std::string>{"fwd.example"});
  EXPECT_EQ(e.HeaderValues("X-Forwarded-Port"), std::vector<std::string>{"8443"});
  // APISIX's proxy-rewrite3.t TEST 36: the plugin's chain, then the client.
  EXPECT_EQ(e.HeaderValues("X-Forwarded-For"), std::vector<std::string>{"22.22.22.22, 127.0.0.1"});
  EXPECT_EQ(e.HeaderValues("X-Real-IP"), std::vector<std::string>{"127.0.0.1"});
  // proxy-rewrite2.t TEST 9/10: a removed X-Forwarded-Host is not sent.
  e = UpstreamGet("/rmfwd", {{"X-Forwarded-Host", "client.example"}});
  EXPECT_FALSE(e.HasHeader("X-Forwarded-Host"));
  EXPECT_EQ(e.HeaderValues("X-Forwarded-Proto"), std::vector<std::string>{"http"});
}

TEST_F(ProxyRewriteTest, PluginCannotReframeOrReplaceHopByHop) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = Upstream(HttpRequest{"POST", "/framing", {}, "hello body"});
  EXPECT_EQ(e.body_length, 10u);
  EXPECT_EQ(e.body, "hello body");
  EXPECT_EQ(e.HeaderValues("Content-Length"), std::vector<std::string>{"10"});
  EXPECT_FALSE(e.HasHeader("Transfer-Encoding"));
  EXPECT_FALSE(e.chunked);
  EXPECT_FALSE(e.HasHeader("Upgrade"));
  for (const std::string& v : e.HeaderValues("Connection")) EXPECT_NE(v, "close");
  EXPECT_EQ(e.HeaderValues("Host").size(), 1u);
  EXPECT_NE(e.Header("Host"), "evil.example");
  EXPECT_EQ(e.HeaderValues("X-Real-IP"), std::vector<std::string>{"127.0.0.1"});
}

// CR/LF a client smuggles into a variable reach the node %-escaped, as part of one line.
TEST_F(ProxyRewriteTest, NoInjectionFromVariables) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  // $uri decodes %0D%0A; the unsafe mode puts it in the target unencoded, a header gets it too.
  EchoedRequest e = UpstreamGet("/inject/a%0D%0AX-Injected:%201?v=ok");
  EXPECT_FALSE(e.HasHeader("X-Injected")) << e.uri;
  EXPECT_EQ(e.uri, "/echo/inject/a%0D%0AX-Injected:%201?v=ok");
  EXPECT_EQ(e.Header("X-Uri"), "/inject/a%0D%0AX-Injected: 1");
  EXPECT_EQ(e.Header("X-Arg"), "ok");
  // The connection to the node is still usable: the next request is answered normally.
  e = UpstreamGet("/inject/b?v=2");
  EXPECT_EQ(e.uri, "/echo/inject/b?v=2");
}

// §3.2: the plugin's host survives only with pass_host `pass`.
TEST_F(ProxyRewriteTest, HostFollowsPassHost) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EXPECT_EQ(UpstreamGet("/node").Header("Host"), "127.0.0.1:" + std::to_string(backend_->port()));
  EXPECT_EQ(UpstreamGet("/rewrite-host").Header("Host"), "upstream.example");
}

TEST_F(ProxyRewriteTest, AccessLogSeesTheNewUri) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  UpstreamGet("/api/v3/x?k=1");
  // Each request waits for its line: two workers may otherwise write in either order.
  ASSERT_EQ(LogLines(1).size(), 1u);
  UpstreamGet("/tpl?who=a");
  std::vector<std::string> lines = LogLines(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "/echo/v3/x?k=1|/echo/v3/x|/echo/v3/x?k=1");
  EXPECT_EQ(lines[1], "/echo/a/public?who=a|/echo/a/public|/echo/a/public?who=a");
}

TEST_F(ProxyRewriteTest, BadConfigIsRejectedNamingTheField) {
  TurnpikeOptions options;
  Turnpike gw{kTurnpikeBin};
  std::string routes = Fill(R"y(
routes:
  - uri: /bad
    plugins:
      proxy-rewrite: {method: GETS}
    upstream: {nodes: [{NODE}]}
  - uri: /good
    plugins:
      proxy-rewrite: {uri: /echo/good}
    upstream: {nodes: [{NODE}]}
#END
)y",
                            {{"NODE", Node(backend_->port())}});
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw, routes, options));
  EXPECT_EQ(Echo(Get(gw.port(), "/good")).uri, "/echo/good");
  EXPECT_EQ(Get(gw.port(), "/bad").status, 404);
  EXPECT_NE(gw.Stderr().find("proxy-rewrite"), std::string::npos) << gw.Stderr();
  EXPECT_NE(gw.Stderr().find("property \"method\" validation failed: matches none of the enum "
                             "values"),
            std::string::npos)
      << gw.Stderr();
}

}  // namespace
}  // namespace turnpike::itest
