// What the upstream receives: hop-by-hop headers removed, X-Forwarded-* / X-Real-IP added,
// Host chosen by pass_host, request target forwarded raw. See apisix-behaviour.md §3.2.

#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

class HeadersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "H"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override { ASSERT_NE(backend_, nullptr); }

  void StartProxy() {
    std::string routes = Fill(R"(
routes:
  - uri: /echo/node
    upstream: {nodes: [{NODE}], pass_host: node}
  - uri: /echo/rewrite
    upstream: {nodes: [{NODE}], pass_host: rewrite, upstream_host: rewritten.test}
  - uri: /echo/*
    upstream: {nodes: [{NODE}], pass_host: pass}
  - uri: /echo
    upstream: {nodes: [{NODE}]}
#END
)",
                              {{"NODE", Node(backend_->port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  }

  // Sends `req` through the gateway and returns what the backend saw.
  EchoedRequest Upstream(const HttpRequest& req) {
    HttpResponse r = Fetch(gw_.port(), req);
    EXPECT_EQ(r.status, 200) << r.DebugString();
    return Echo(r);
  }
  EchoedRequest UpstreamGet(const std::string& target, const Headers& headers) {
    return Upstream(HttpRequest{"GET", target, headers, ""});
  }

  static inline std::unique_ptr<Backend> backend_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(HeadersTest, HopByHopHeadersAreNotForwarded) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/echo", {{"Connection", "keep-alive, X-Drop-Me"},
                                          {"X-Drop-Me", "1"},
                                          {"Keep-Alive", "timeout=5"},
                                          {"TE", "trailers"},
                                          {"Trailer", "X-Foo"},
                                          {"Upgrade", "foo/1"},
                                          {"Proxy-Connection", "keep-alive"},
                                          {"X-Keep-Me", "kept"}});
  for (const char* name :
       {"X-Drop-Me", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Connection"}) {
    EXPECT_FALSE(e.HasHeader(name)) << name << " was forwarded: " << *e.Header(name);
  }
  EXPECT_EQ(e.Header("X-Keep-Me"), "kept");
  // The proxy may send its own Connection header, but never the client's tokens.
  for (const std::string& v : e.HeaderValues("Connection")) {
    EXPECT_EQ(v.find("X-Drop-Me"), std::string::npos) << v;
  }
}

TEST_F(HeadersTest, EndToEndHeadersArePreservedInOrder) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet(
      "/echo", {{"X-A", "1"}, {"X-B", "two"}, {"X-A", "3"}, {"Cookie", "a=b"}, {"Accept", "*/*"}});
  EXPECT_EQ(e.HeaderValues("X-A"), (std::vector<std::string>{"1", "3"}));
  EXPECT_EQ(e.Header("X-B"), "two");
  EXPECT_EQ(e.Header("Cookie"), "a=b");
  EXPECT_EQ(e.Header("Accept"), "*/*");
}

TEST_F(HeadersTest, XForwardedForIsAppendedAndRealIpSet) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest with = UpstreamGet("/echo", {{"X-Forwarded-For", "1.2.3.4"}});
  EXPECT_EQ(with.Header("X-Forwarded-For"), "1.2.3.4, 127.0.0.1");
  EXPECT_EQ(with.Header("X-Real-IP"), "127.0.0.1");
  EchoedRequest without = UpstreamGet("/echo", {});
  EXPECT_EQ(without.Header("X-Forwarded-For"), "127.0.0.1");
  EXPECT_EQ(without.Header("X-Real-IP"), "127.0.0.1");
}

TEST_F(HeadersTest, XForwardedProtoHostAndPortFromHostHeader) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/echo", {{"Host", "example.test:1234"}});
  EXPECT_EQ(e.Header("X-Forwarded-Proto"), "http");
  EXPECT_EQ(e.Header("X-Forwarded-Host"), "example.test:1234");
  EXPECT_EQ(e.Header("X-Forwarded-Port"), "1234");
  EXPECT_EQ(e.HeaderValues("X-Forwarded-Proto").size(), 1u);
}

TEST_F(HeadersTest, XForwardedPortFallsBackToListenerPort) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/echo", {{"Host", "example.test"}});
  EXPECT_EQ(e.Header("X-Forwarded-Host"), "example.test");
  EXPECT_EQ(e.Header("X-Forwarded-Port"), std::to_string(gw_.port()));
}

TEST_F(HeadersTest, PassHostPassForwardsClientHost) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/echo/pass", {{"Host", "Client.Test:9999"}});
  EXPECT_EQ(e.HeaderValues("Host"), (std::vector<std::string>{"Client.Test:9999"}));
  EchoedRequest by_default = UpstreamGet("/echo", {{"Host", "default.test"}});
  EXPECT_EQ(by_default.Header("Host"), "default.test");
}

TEST_F(HeadersTest, PassHostNodeUsesNodeAddress) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/echo/node", {{"Host", "client.test"}});
  EXPECT_EQ(e.HeaderValues("Host"),
            (std::vector<std::string>{"127.0.0.1:" + std::to_string(backend_->port())}));
  EXPECT_EQ(e.Header("X-Forwarded-Host"), "client.test");
}

TEST_F(HeadersTest, PassHostRewriteUsesUpstreamHost) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = UpstreamGet("/echo/rewrite", {{"Host", "client.test"}});
  EXPECT_EQ(e.HeaderValues("Host"), (std::vector<std::string>{"rewritten.test"}));
}

TEST_F(HeadersTest, RequestTargetMethodAndBodyAreForwardedUnchanged) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  EchoedRequest e = Upstream(HttpRequest{"PATCH", "/echo/a%20b/./c?x=1&y=%2F&z", {}, "data"});
  EXPECT_EQ(e.method, "PATCH");
  EXPECT_EQ(e.uri, "/echo/a%20b/./c?x=1&y=%2F&z");
  EXPECT_EQ(e.version, "1.1");
  EXPECT_EQ(e.body, "data");
  EXPECT_EQ(e.Header("Content-Length"), "4");
}

}  // namespace
}  // namespace turnpike::itest
