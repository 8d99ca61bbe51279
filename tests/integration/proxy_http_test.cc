// HTTP/1.1 mechanics through the proxy: keep-alive on both sides, pipelining, chunked bodies
// in both directions, bodiless responses and 100-continue.

#include <string>

#include "integration/itest.h"
#include "support/pattern.h"

namespace turnpike::itest {
namespace {

class ProxyHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "P"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override { ASSERT_NE(backend_, nullptr); }

  // Everything goes to the one backend.
  void StartProxy(const TurnpikeOptions& options = {}) {
    std::string routes = Fill(R"(
routes:
  - uri: /*
    upstream_id: p
upstreams:
  - id: p
    nodes: [{NODE}]
#END
)",
                              {{"NODE", Node(backend_->port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }

  std::string Request(const std::string& method, const std::string& target,
                      const std::string& body = "") {
    return HttpRequest{method, target, {}, body}.Serialize(gw_.port());
  }

  static inline std::unique_ptr<Backend> backend_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(ProxyHttpTest, ClientKeepAliveServesManyRequestsOnOneConnection) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  ASSERT_TRUE(c.connected()) << c.error();
  for (int i = 0; i < 5; ++i) {
    HttpResponse r = c.RoundTrip(Request("GET", "/hello"));
    ASSERT_EQ(r.status, 200) << "request " << i << "\n" << r.DebugString();
    EXPECT_EQ(r.body, "hello world\n");
    EXPECT_EQ(BackendOf(r), "P");
    ASSERT_FALSE(r.ConnectionClosing()) << r.DebugString();
  }
  EchoedRequest e = Echo(c.RoundTrip(Request("POST", "/echo", "payload")));
  EXPECT_EQ(e.body, "payload");
}

TEST_F(ProxyHttpTest, UpstreamConnectionIsReused) {
  TurnpikeOptions options;
  options.worker_processes = 1;  // one worker, so one upstream connection pool
  ASSERT_NO_FATAL_FAILURE(StartProxy(options));
  HttpConnection c(gw_.port());
  HttpResponse first = c.RoundTrip(Request("GET", "/conn"));
  HttpResponse second = c.RoundTrip(Request("GET", "/conn"));
  ASSERT_EQ(first.status, 200) << first.DebugString();
  ASSERT_EQ(second.status, 200) << second.DebugString();
  EXPECT_EQ(first.body, second.body) << "the proxy opened a new upstream connection";
  // A different client connection still gets the pooled upstream connection.
  HttpResponse third = Get(gw_.port(), "/conn");
  EXPECT_EQ(third.body, first.body);
}

TEST_F(ProxyHttpTest, PipelinedRequestsAreAnsweredInOrder) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  ASSERT_TRUE(c.Send(Request("GET", "/echo/1") + Request("POST", "/echo/2", "second body") +
                     Request("GET", "/hello")))
      << c.error();
  HttpResponse r1 = c.ReadResponse();
  HttpResponse r2 = c.ReadResponse();
  HttpResponse r3 = c.ReadResponse();
  EXPECT_EQ(Echo(r1).uri, "/echo/1");
  EchoedRequest e2 = Echo(r2);
  EXPECT_EQ(e2.uri, "/echo/2");
  EXPECT_EQ(e2.body, "second body");
  EXPECT_EQ(r3.status, 200) << r3.DebugString();
  EXPECT_EQ(r3.body, "hello world\n");
}

TEST_F(ProxyHttpTest, ChunkedRequestBodyReachesUpstreamIntact) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  std::string body;
  for (uint32_t i = 0; i < 300000; ++i) body.push_back(static_cast<char>((i * 7919u) >> 3));
  // Uneven chunks, a 1-byte chunk, a chunk extension and a trailer.
  std::string chunked =
      "1\r\n" + body.substr(0, 1) + "\r\n" + "ff;name=value\r\n" + body.substr(1, 255) + "\r\n";
  chunked += ChunkedEncode(std::string_view(body).substr(256), 65000);
  chunked.insert(chunked.size() - 2, "X-Trailer: t\r\n");
  HttpConnection c(gw_.port());
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: chunky.test\r\n"
             "Transfer-Encoding: chunked\r\n\r\n" +
             chunked))
      << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EchoedRequest e = Echo(r);
  EXPECT_EQ(e.body_length, body.size());
  EXPECT_EQ(e.body_fnv1a, Fnv1aHex(Fnv1a(body)));
  // The connection is still usable afterwards.
  EXPECT_EQ(c.RoundTrip(Request("GET", "/hello")).body, "hello world\n");
}

TEST_F(ProxyHttpTest, ChunkedResponseIsPassedThrough) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  HttpResponse r = c.RoundTrip(Request("GET", "/bytes/200000?chunked=1"));
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_TRUE(r.chunked) << r.DebugString();
  EXPECT_EQ(r.body.size(), 200000u);
  EXPECT_TRUE(r.body == PatternBytes(0, 200000)) << "body differs from the /bytes pattern";
  EXPECT_EQ(c.RoundTrip(Request("GET", "/hello")).body, "hello world\n");
}

TEST_F(ProxyHttpTest, ResponseDelimitedByUpstreamCloseIsDeliveredWhole) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpResponse r = Get(gw_.port(), "/bytes/100000?close=1");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.body.size(), 100000u);
  EXPECT_TRUE(r.body == PatternBytes(0, 100000));
}

TEST_F(ProxyHttpTest, ContentLengthResponseIsPassedThrough) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpResponse r = Get(gw_.port(), "/bytes/300000");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("Content-Length"), "300000");
  EXPECT_TRUE(r.body == PatternBytes(0, 300000));
}

TEST_F(ProxyHttpTest, HeadResponseHasNoBody) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  for (const char* target : {"/bytes/5000", "/bytes/5000?chunked=1", "/hello"}) {
    HttpResponse r = c.RoundTrip(Request("HEAD", target), ReadOptions::Head());
    EXPECT_EQ(r.status, 200) << target << "\n" << r.DebugString();
    EXPECT_EQ(r.body, "");
  }
  // Had the proxy sent body bytes after any HEAD response, this would read garbage.
  HttpResponse r = c.RoundTrip(Request("GET", "/hello"));
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.body, "hello world\n");
}

TEST_F(ProxyHttpTest, NoBodyFor204And304) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  for (int code : {204, 304}) {
    HttpResponse r = c.RoundTrip(Request("GET", "/status/" + std::to_string(code)));
    EXPECT_EQ(r.status, code) << r.DebugString();
    EXPECT_EQ(r.body, "");
    EXPECT_FALSE(r.HasHeader("Transfer-Encoding")) << r.DebugString();
  }
  HttpResponse r = c.RoundTrip(Request("GET", "/hello"));
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.body, "hello world\n");
}

TEST_F(ProxyHttpTest, ExpectContinueGets100BeforeTheFinalResponse) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: expect.test\r\nContent-Length: 11\r\n"
             "Expect: 100-continue\r\n\r\n"));
  HttpResponse interim = c.ReadResponse();
  ASSERT_EQ(interim.status, 100) << interim.DebugString();
  EXPECT_EQ(interim.version, "HTTP/1.1");
  ASSERT_TRUE(c.Send("hello world")) << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EchoedRequest e = Echo(r);
  EXPECT_EQ(e.body, "hello world");
  EXPECT_EQ(e.body_length, 11u);
}

TEST_F(ProxyHttpTest, UpstreamServerErrorIsPassedThrough) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpResponse r = Get(gw_.port(), "/status/503");
  EXPECT_EQ(r.status, 503) << r.DebugString();
  EXPECT_EQ(r.body, "status 503\n");  // the upstream's body, not a gateway error
  EXPECT_EQ(BackendOf(r), "P");
  // apisix-behaviour.md §3.6: an upstream 5xx is reported in X-APISIX-Upstream-Status.
  EXPECT_EQ(r.Header("X-APISIX-Upstream-Status"), "503");
  HttpResponse ok = Get(gw_.port(), "/status/201");
  EXPECT_EQ(ok.status, 201);
  EXPECT_FALSE(ok.HasHeader("X-APISIX-Upstream-Status"));
}

TEST_F(ProxyHttpTest, ClientConnectionCloseIsHonoured) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  HttpResponse r = c.RoundTrip(
      HttpRequest{"GET", "/hello", {{"Connection", "close"}}, ""}.Serialize(gw_.port()));
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_TRUE(c.WaitForClose(std::chrono::seconds(5)));
}

TEST_F(ProxyHttpTest, Http10ClientIsServed) {
  ASSERT_NO_FATAL_FAILURE(StartProxy());
  HttpConnection c(gw_.port());
  HttpResponse r = c.RoundTrip("GET /hello HTTP/1.0\r\nHost: old.test\r\n\r\n");
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_TRUE(c.WaitForClose(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace turnpike::itest
