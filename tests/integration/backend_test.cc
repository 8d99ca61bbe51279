// The test backend on its own, without Turnpike: the other integration tests rely on every
// endpoint behaving as documented in tests/backend/test_backend.cc.

#include <signal.h>

#include <chrono>
#include <string>

#include "integration/itest.h"
#include "support/pattern.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;

class BackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "solo"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    port_ = backend_->port();
  }

  static inline std::unique_ptr<Backend> backend_;
  int port_ = 0;
};

TEST_F(BackendTest, HelloCarriesBackendId) {
  HttpResponse r = Get(port_, "/hello");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_EQ(r.Header("X-Backend-Id"), "solo");
  EXPECT_EQ(r.Header("Content-Type"), "text/plain");
}

TEST_F(BackendTest, EchoDescribesTheRequest) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/echo/sub?a=1&b=%20";
  req.headers = {{"Host", "h.test:81"}, {"X-One", "1"}, {"x-two", " two "}, {"X-One", "again"}};
  req.body = "hello \"body\"\n\x01\xff";
  HttpResponse r = Fetch(port_, req);
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EchoedRequest e = Echo(r);
  EXPECT_EQ(e.method, "POST");
  EXPECT_EQ(e.uri, "/echo/sub?a=1&b=%20");
  EXPECT_EQ(e.version, "1.1");
  ASSERT_GE(e.headers.size(), 5u);
  EXPECT_EQ(e.headers[0], (std::pair<std::string, std::string>("Host", "h.test:81")));
  EXPECT_EQ(e.headers[1].second, "1");
  EXPECT_EQ(e.headers[2], (std::pair<std::string, std::string>("x-two", "two")));
  EXPECT_EQ(e.HeaderValues("x-one"), (std::vector<std::string>{"1", "again"}));
  EXPECT_EQ(e.body_length, req.body.size());
  EXPECT_EQ(e.body_fnv1a, Fnv1aHex(Fnv1a(req.body)));
  EXPECT_EQ(e.body, req.body);
  EXPECT_FALSE(e.chunked);
}

TEST_F(BackendTest, EchoDecodesChunkedBody) {
  std::string body = PatternBytes(0, 100000);
  HttpRequest req;
  req.method = "PUT";
  req.target = "/echo";
  req.headers = {{"Transfer-Encoding", "chunked"}};
  req.body = ChunkedEncode(body, 7000);
  EchoedRequest e = Echo(Fetch(port_, req));
  EXPECT_TRUE(e.chunked);
  EXPECT_EQ(e.body_length, body.size());
  EXPECT_EQ(e.body_fnv1a, Fnv1aHex(Fnv1a(body)));
  EXPECT_EQ(e.body, body.substr(0, 1024));
}

TEST_F(BackendTest, KeepAliveReusesConnectionAndConnNumbersIt) {
  HttpConnection a(port_);
  ASSERT_TRUE(a.connected()) << a.error();
  std::string req = HttpRequest{"GET", "/conn", {}, ""}.Serialize(port_);
  HttpResponse first = a.RoundTrip(req);
  HttpResponse second = a.RoundTrip(req);
  ASSERT_EQ(first.status, 200) << first.DebugString();
  ASSERT_EQ(second.status, 200) << second.DebugString();
  EXPECT_EQ(first.body, second.body);
  HttpConnection b(port_);
  HttpResponse other = b.RoundTrip(req);
  ASSERT_EQ(other.status, 200) << other.DebugString();
  EXPECT_NE(other.body, first.body);
}

TEST_F(BackendTest, PipelinedRequestsAnsweredInOrder) {
  HttpConnection c(port_);
  std::string reqs = HttpRequest{"GET", "/echo/1", {}, ""}.Serialize(port_) +
                     HttpRequest{"POST", "/echo/2", {}, "xyz"}.Serialize(port_) +
                     HttpRequest{"GET", "/hello", {}, ""}.Serialize(port_);
  ASSERT_TRUE(c.Send(reqs)) << c.error();
  EXPECT_EQ(Echo(c.ReadResponse()).uri, "/echo/1");
  EchoedRequest second = Echo(c.ReadResponse());
  EXPECT_EQ(second.uri, "/echo/2");
  EXPECT_EQ(second.body, "xyz");
  EXPECT_EQ(c.ReadResponse().body, "hello world\n");
}

TEST_F(BackendTest, StatusEndpoint) {
  HttpConnection c(port_);
  HttpResponse r = c.RoundTrip(HttpRequest{"GET", "/status/503", {}, ""}.Serialize(port_));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "status 503\n");
  for (int code : {204, 304}) {
    r = c.RoundTrip(HttpRequest{"GET", "/status/" + std::to_string(code), {}, ""}.Serialize(port_));
    EXPECT_EQ(r.status, code);
    EXPECT_FALSE(r.HasHeader("Content-Length"));
    EXPECT_EQ(r.body, "");
  }
  // The connection is still in sync: no stray body bytes were sent.
  r = c.RoundTrip(HttpRequest{"GET", "/hello", {}, ""}.Serialize(port_));
  EXPECT_EQ(r.body, "hello world\n") << r.DebugString();
}

TEST_F(BackendTest, BytesWithLengthChunkedAndClose) {
  HttpResponse r = Get(port_, "/bytes/100000");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("Content-Length"), "100000");
  EXPECT_EQ(r.body, PatternBytes(0, 100000));

  r = Get(port_, "/bytes/40000?chunked=1");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.body, PatternBytes(0, 40000));

  r = Get(port_, "/bytes/40000?close=1");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_TRUE(r.until_close);
  EXPECT_EQ(r.body, PatternBytes(0, 40000));
}

TEST_F(BackendTest, HeadSendsHeadersOnly) {
  HttpConnection c(port_);
  HttpResponse r =
      c.RoundTrip(HttpRequest{"HEAD", "/bytes/1000", {}, ""}.Serialize(port_), ReadOptions::Head());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Length"), "1000");
  r = c.RoundTrip(HttpRequest{"HEAD", "/echo", {}, ""}.Serialize(port_), ReadOptions::Head());
  EXPECT_EQ(r.status, 200);
  r = c.RoundTrip(HttpRequest{"GET", "/hello", {}, ""}.Serialize(port_));
  EXPECT_EQ(r.body, "hello world\n") << r.DebugString();
}

TEST_F(BackendTest, CloseEndpointClosesTheConnection) {
  HttpConnection c(port_);
  HttpResponse r = c.RoundTrip(HttpRequest{"GET", "/close", {}, ""}.Serialize(port_));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.ConnectionClosing());
  EXPECT_TRUE(c.WaitForClose(milliseconds(5000)));
}

TEST_F(BackendTest, ResetEndpointSendsNoResponse) {
  HttpConnection c(port_);
  HttpResponse r = c.RoundTrip(HttpRequest{"GET", "/reset", {}, ""}.Serialize(port_));
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("reset"), std::string::npos) << r.error;
}

TEST_F(BackendTest, HangNeverResponds) {
  HttpConnection c(port_);
  ASSERT_TRUE(c.Send(HttpRequest{"GET", "/hang", {}, ""}.Serialize(port_)));
  EXPECT_FALSE(c.WaitForClose(milliseconds(200)));
}

TEST_F(BackendTest, DelayAndInflight) {
  auto start = std::chrono::steady_clock::now();
  HttpConnection slow(port_);
  ASSERT_TRUE(slow.Send(HttpRequest{"GET", "/delay/300", {}, ""}.Serialize(port_)));
  EXPECT_TRUE(PollUntil([&] { return Get(port_, "/inflight").body == "1"; }, milliseconds(2000)));
  HttpResponse r = slow.ReadResponse();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "delayed 300\n");
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
}

TEST_F(BackendTest, UnknownPathIs404AndGarbageIs400) {
  EXPECT_EQ(Get(port_, "/nope").status, 404);
  HttpConnection c(port_);
  HttpResponse r = c.RoundTrip("this is not http\r\n\r\n");
  EXPECT_EQ(r.status, 400);
}

TEST_F(BackendTest, Http10ClosesUnlessKeepAlive) {
  HttpConnection c(port_);
  HttpResponse r = c.RoundTrip("GET /hello HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(c.WaitForClose(milliseconds(5000)));
  HttpConnection k(port_);
  r = k.RoundTrip("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(r.Header("Connection"), "keep-alive");
  r = k.RoundTrip("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(r.status, 200) << r.DebugString();
}

TEST_F(BackendTest, ExpectContinue) {
  HttpConnection c(port_);
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "Expect: 100-continue\r\n\r\n"));
  HttpResponse interim = c.ReadResponse();
  EXPECT_EQ(interim.status, 100) << interim.DebugString();
  ASSERT_TRUE(c.Send("12345"));
  EchoedRequest e = Echo(c.ReadResponse());
  EXPECT_EQ(e.body, "12345");
}

TEST(BackendProcessTest, ExitsWithZeroOnSigterm) {
  std::unique_ptr<Backend> b = StartBackend(kBackendBin, "term");
  ASSERT_NE(b, nullptr);
  HttpConnection idle(b->port());  // an open connection must not keep it alive
  ASSERT_TRUE(idle.connected());
  ASSERT_TRUE(b->process().Signal(SIGTERM));
  std::optional<ExitStatus> st = b->process().Wait(milliseconds(5000));
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->Success()) << st->ToString();
}

}  // namespace
}  // namespace turnpike::itest
