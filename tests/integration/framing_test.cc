// The framing suite: raw byte sequences through the real daemon to a backend that records
// every byte it receives (support/recording_backend.h). For each input it asserts the
// client's answer and what the backend got: nothing reaches the backend framed differently
// from what the client sent, and nothing the gateway refuses reaches it at all.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"
#include "support/recording_backend.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;

class FramingTest : public ::testing::Test {
 protected:
  void Start(RecordingBackend::Responder responder = {}, TurnpikeOptions options = {}) {
    backend_ = std::make_unique<RecordingBackend>(std::move(responder));
    ASSERT_NE(backend_->port(), 0);
    options.worker_processes = 1;  // one pool: reuse of upstream connections is observable
    std::string routes = Fill(R"(
routes:
  - uri: /admin
    plugins:
      ip-restriction: {blacklist: [127.0.0.1]}
    upstream: {nodes: [{NODE}]}
  - uri: /*
    upstream: {nodes: [{NODE}]}
#END
)",
                              {{"NODE", Node(backend_->port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }

  // Sends `bytes` on a fresh connection; the first response.
  HttpResponse Raw(const std::string& bytes) {
    HttpConnection c(gw_.port());
    return c.RoundTrip(bytes);
  }

  // Sends `bytes`, expects `status` and the connection closed after it, and nothing at the
  // backend.
  void ExpectRefused(const std::string& bytes, int status) {
    SCOPED_TRACE(::testing::PrintToString(bytes));
    HttpConnection c(gw_.port());
    HttpResponse r = c.RoundTrip(bytes);
    EXPECT_EQ(r.status, status) << r.DebugString();
    EXPECT_TRUE(r.ConnectionClosing()) << r.DebugString();
    EXPECT_TRUE(c.WaitForClose(milliseconds(3000)));
    EXPECT_FALSE(r.HasHeader("X-APISIX-Upstream-Status")) << r.DebugString();
    EXPECT_EQ(backend_->raw(), "") << "refused input reached the backend";
  }

  std::unique_ptr<RecordingBackend> backend_;
  Turnpike gw_{kTurnpikeBin};
};

// ---------------------------------------------------------------- refused requests

TEST_F(FramingTest, LooseHeadTerminatorIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ExpectRefused(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 30\r\n\rXGET /admin HTTP/1.1\r\nHost: "
      "a\r\n\r\n",
      400);
  ExpectRefused("GET /x HTTP/1.1\r\nHost: a\rX-A: b\r\n\r\n", 400);
  ExpectRefused("GET /x HTTP/1.1\nHost: a\n\n", 400);
}

TEST_F(FramingTest, SpoofedHeaderNamesAreRefused) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ExpectRefused("GET /x HTTP/1.1\r\nHost: a\r\nX-Real-IP : 6.6.6.6\r\n\r\n", 400);
  ExpectRefused("GET /x HTTP/1.1\r\nHost: a\r\nX-Forwarded-For\t: 6.6.6.6\r\n\r\n", 400);
  ExpectRefused("GET /x HTTP/1.1\r\nHost: a\r\nX Real-IP: 6.6.6.6\r\n\r\n", 400);
  ExpectRefused("GET /x HTTP/1.1\r\nHost: a\r\n: 6.6.6.6\r\n\r\n", 400);
  ExpectRefused("GET /x HTTP/1.1\r\nHost: a\r\nForwarded: x\r\n for=6.6.6.6\r\n\r\n", 400);
}

TEST_F(FramingTest, AmbiguousBodyFramingIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ExpectRefused(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\n",
      400);
  ExpectRefused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
                400);
  ExpectRefused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", 400);
  ExpectRefused("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
  ExpectRefused("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                501);
  ExpectRefused(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
      "chunked\r\n\r\n0\r\n\r\n",
      400);
}

TEST_F(FramingTest, InvalidHostsAreRefused) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* host : {"a b", "a/b", "evil@a", "a:80:80", "a:x"}) {
    ExpectRefused("GET /x HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n", 400);
  }
  ExpectRefused("GET http://user@a/x HTTP/1.1\r\nHost: a\r\n\r\n", 400);
  ExpectRefused("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

TEST_F(FramingTest, HiddenRequestAfterChunkWithoutCrlfNeverRuns) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpConnection c(gw_.port());
  HttpResponse r = c.RoundTrip(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabcGET /admin HTTP/1.1\r\nHost: a\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 400) << r.DebugString();
  EXPECT_TRUE(c.WaitForClose(milliseconds(3000)));
  for (const RecordedRequest& req : backend_->requests()) {
    EXPECT_EQ(req.RequestLine().find("/admin"), std::string::npos) << req.head;
  }
}

TEST_F(FramingTest, HugeChunkSizeIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpConnection c(gw_.port());
  HttpResponse r = c.RoundTrip(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc");
  EXPECT_EQ(r.status, 400) << r.DebugString();
  EXPECT_FALSE(r.HasHeader("X-APISIX-Upstream-Status")) << r.DebugString();
  EXPECT_TRUE(c.WaitForClose(milliseconds(3000)));
  EXPECT_TRUE(backend_->requests().empty());
}

// ---------------------------------------------------------------- routing sees nginx's $uri

TEST_F(FramingTest, FragmentDoesNotBypassTheRoute) {
  ASSERT_NO_FATAL_FAILURE(Start());
  for (const char* target : {"/admin#x", "/admin#/../other", "/admin#?a=1"}) {
    HttpResponse r = Raw("GET " + std::string(target) + " HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(r.status, 403) << target << "\n" << r.DebugString();
  }
  EXPECT_TRUE(backend_->requests().empty());
  // Elsewhere the fragment is simply not forwarded.
  HttpResponse r = Raw("GET /p?q=1#frag HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(r.status, 200) << r.DebugString();
  std::vector<RecordedRequest> got = backend_->requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].RequestLine(), "GET /p?q=1 HTTP/1.1");
}

// ---------------------------------------------------------------- accepted requests

TEST_F(FramingTest, BodiesArriveAsSent) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpConnection c(gw_.port());
  // Content-Length, chunked with extensions and trailers, a leading CRLF between requests,
  // and an uncommon method, pipelined on one connection.
  std::string bytes =
      "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
      "\r\n"
      "PUT /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"
      "PROPFIND /c HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(c.Send(bytes));
  for (int i = 0; i < 3; ++i) {
    HttpResponse r = c.ReadResponse();
    EXPECT_EQ(r.status, 200) << i << "\n" << r.DebugString();
  }
  std::vector<RecordedRequest> got = backend_->requests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].RequestLine(), "POST /a HTTP/1.1");
  EXPECT_EQ(got[0].body, "hello");
  EXPECT_EQ(got[0].HeaderValues("content-length"), std::vector<std::string>{"5"});
  EXPECT_EQ(got[1].RequestLine(), "PUT /b HTTP/1.1");
  EXPECT_TRUE(got[1].chunked);
  EXPECT_EQ(got[1].body, "abcde");
  EXPECT_TRUE(got[1].HeaderValues("x-trailer").empty());
  EXPECT_EQ(got[2].RequestLine(), "PROPFIND /c HTTP/1.1");
  EXPECT_EQ(got[2].body, "");
  // The backend's bytes are exactly these three requests, nothing before, between or after.
  std::string expected;
  for (const RecordedRequest& r : got) {
    expected += r.head;
    if (r.chunked) {
      expected += "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    } else {
      expected += r.body;
    }
  }
  EXPECT_EQ(backend_->raw(), expected);
}

TEST_F(FramingTest, ProxyOwnHeadersCannotBeSpoofed) {
  TurnpikeOptions options;
  options.http_extra = "    real_ip_from: [192.0.2.1]\n";  // the test client is not trusted
  ASSERT_NO_FATAL_FAILURE(Start({}, options));
  HttpResponse r =
      Raw("GET /x HTTP/1.1\r\nHost: a:81\r\nX-Real-IP: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n"
          "X-Forwarded-Proto: https\r\nX-Forwarded-Port: 1\r\n\r\n");
  ASSERT_EQ(r.status, 200) << r.DebugString();
  std::vector<RecordedRequest> got = backend_->requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].HeaderValues("x-real-ip"), std::vector<std::string>{"127.0.0.1"});
  EXPECT_TRUE(got[0].HeaderValues("forwarded").empty());
  EXPECT_EQ(got[0].HeaderValues("x-forwarded-proto"), std::vector<std::string>{"http"});
  EXPECT_EQ(got[0].HeaderValues("x-forwarded-port"), std::vector<std::string>{"81"});
  EXPECT_EQ(got[0].HeaderValues("host"), std::vector<std::string>{"a:81"});
}

// ---------------------------------------------------------------- upstream responses

TEST_F(FramingTest, MalformedResponsesAre502AndTheConnectionIsNotReused) {
  const std::vector<std::string> bad = {
      "HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\n: b\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\rXContent-Length: 0\r\n\r\nok",
      "HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n"
      "0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokHTTP/1.1 200 OK\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
      "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
  };
  // Requests alternate: a malformed answer, then a good one.
  ASSERT_NO_FATAL_FAILURE(Start([bad](const RecordedRequest&, int index) {
    if (index % 2 == 0) return ScriptedResponse{bad[static_cast<size_t>(index / 2) % bad.size()]};
    return ScriptedResponse{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
  }));
  for (size_t k = 0; k < bad.size(); ++k) {
    SCOPED_TRACE(::testing::PrintToString(bad[k]));
    HttpResponse r = Raw("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(r.status, 502) << r.DebugString();
    HttpResponse next = Raw("GET /y HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(next.status, 200) << next.DebugString();
    EXPECT_EQ(next.body, "ok");
    // Each malformed answer ends its connection: the good answer after it needs a new one
    // (which is then pooled and carries the next malformed answer).
    EXPECT_EQ(backend_->connections(), static_cast<int>(k) + 2);
    EXPECT_EQ(backend_->requests().size(), 2 * (k + 1)) << "a malformed answer was retried";
  }
}

// ---------------------------------------------------------------- timeouts and limits

TEST_F(FramingTest, HeaderTimeoutRunsFromTheFirstByte) {
  TurnpikeOptions options;
  options.http_extra = "    client_header_timeout: 1s\n";
  ASSERT_NO_FATAL_FAILURE(Start({}, options));
  HttpConnection c(gw_.port());
  // Trickle a head one byte every 200 ms: each read would re-arm a per-read timeout.
  const std::string head = "GET /x HTTP/1.1\r\nHost: a\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaa\r\n";
  auto start = std::chrono::steady_clock::now();
  bool closed = false;
  for (char ch : head) {
    if (!c.Send(std::string(1, ch))) {
      closed = true;
      break;
    }
    if (c.WaitForClose(milliseconds(200))) {
      closed = true;
      break;
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed) << "a trickled head was never timed out";
  EXPECT_LT(elapsed, std::chrono::seconds(6));
  EXPECT_TRUE(backend_->requests().empty());
}

TEST_F(FramingTest, WorkerConnectionsBoundsClientsPerWorker) {
  TurnpikeOptions options;
  options.nginx_extra = "  event:\n    worker_connections: 2\n";
  ASSERT_NO_FATAL_FAILURE(Start({}, options));
  // The start-up probe's connection may not be closed on the gateway's side yet, so the
  // second client retries until it gets in.
  HttpConnection a(gw_.port());
  ASSERT_EQ(a.RoundTrip("GET /a HTTP/1.1\r\nHost: a\r\n\r\n").status, 200);
  HttpConnection b;
  ASSERT_TRUE(PollUntil(
      [&] {
        b = HttpConnection(gw_.port());
        return b.RoundTrip("GET /b HTTP/1.1\r\nHost: a\r\n\r\n").status == 200;
      },
      milliseconds(5000), milliseconds(50)));
  HttpConnection over(gw_.port());
  EXPECT_TRUE(over.WaitForClose(milliseconds(3000))) << "a third connection was served";
  a.Close();
  // Once a slot is free, new connections are served again.
  EXPECT_TRUE(PollUntil(
      [&] {
        HttpConnection d(gw_.port());
        return d.RoundTrip("GET /d HTTP/1.1\r\nHost: a\r\n\r\n").status == 200;
      },
      milliseconds(5000), milliseconds(50)));
  EXPECT_EQ(b.RoundTrip("GET /b2 HTTP/1.1\r\nHost: a\r\n\r\n").status, 200);
}

}  // namespace
}  // namespace turnpike::itest
