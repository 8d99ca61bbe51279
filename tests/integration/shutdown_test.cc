// Graceful shutdown on SIGTERM: in-flight requests finish, the listener closes, idle
// keep-alive connections are closed, and the process exits 0 within turnpike.drain_timeout.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

TEST(ShutdownTest, SigtermDrainsInFlightRequestAndExitsZero) {
  std::unique_ptr<Backend> backend = StartBackend(kBackendBin, "S");
  ASSERT_NE(backend, nullptr);
  Turnpike gw(kTurnpikeBin);
  TurnpikeOptions options;
  options.drain_timeout = "5s";
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw,
                                       Fill(R"(
routes:
  - uri: /*
    upstream: {nodes: [{NODE}]}
#END
)",
                                            {{"NODE", Node(backend->port())}}),
                                       options));
  const int port = gw.port();

  HttpConnection idle(port);
  ASSERT_EQ(idle.RoundTrip(HttpRequest{"GET", "/hello", {}, ""}.Serialize(port)).status, 200);

  HttpConnection inflight(port);
  ASSERT_TRUE(inflight.Send(HttpRequest{"GET", "/delay/1500", {}, ""}.Serialize(port)));
  // Only signal once the request has reached the backend, so it is truly in flight.
  ASSERT_TRUE(PollUntil([&] { return Get(backend->port(), "/inflight").body == "1"; }, seconds(5)))
      << "the delayed request never reached the backend";

  auto signalled = steady_clock::now();
  ASSERT_TRUE(gw.process()->Signal(SIGTERM));

  bool refused = PollUntil(
      [&] {
        int fd = ConnectLoopback(port, milliseconds(200));
        if (fd < 0) return true;
        ::close(fd);
        return false;
      },
      seconds(2));
  EXPECT_TRUE(refused) << "still accepting connections 2 s after SIGTERM";
  EXPECT_LT(steady_clock::now() - signalled, milliseconds(1500))
      << "the listener stayed open until the in-flight request finished";

  HttpResponse r = inflight.ReadResponse();
  EXPECT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.body, "delayed 1500\n");
  inflight.Close();  // done with it; the gateway need not wait for our FIN

  EXPECT_TRUE(idle.WaitForClose(seconds(6))) << "idle keep-alive connection left open";

  auto left =
      std::chrono::duration_cast<milliseconds>(seconds(6) - (steady_clock::now() - signalled));
  std::optional<ExitStatus> st = gw.process()->Wait(left);
  ASSERT_TRUE(st.has_value()) << "still running 6 s after SIGTERM (drain_timeout is 5 s)";
  EXPECT_TRUE(st->Success()) << st->ToString();
}

// An idle daemon that has been serving: an idle keep-alive client, an idle pooled upstream
// connection, the status port, the access log and a file-logger writer, the file watch and
// the periodic stat. Nothing is in flight, so SIGTERM -> exit takes a few ms; 1 s is a
// generous bound for a loaded machine (and the ASan build).
TEST(ShutdownTest, SigtermWhenIdleAfterServingExitsWithinOneSecond) {
  std::unique_ptr<Backend> backend = StartBackend(kBackendBin, "S");
  ASSERT_NE(backend, nullptr);
  TempDir logs;
  ASSERT_TRUE(logs.ok());
  Turnpike gw(kTurnpikeBin);
  TurnpikeOptions options;
  options.drain_timeout = "10s";
  int status_port = FreePort();
  ASSERT_NE(status_port, 0);
  options.apisix_extra =
      "  status:\n    ip: 127.0.0.1\n    port: " + std::to_string(status_port) + "\n";
  options.http_extra =
      "    enable_access_log: true\n    access_log: " + logs.File("access.log") + "\n";
  ASSERT_NO_FATAL_FAILURE(
      StartGateway(gw,
                   Fill(R"(
routes:
  - uri: /*
    upstream: {nodes: [{NODE}]}
    plugins:
      file-logger: {path: "{LOG}"}
#END
)",
                        {{"NODE", Node(backend->port())}, {"LOG", logs.File("file-logger.log")}}),
                   options));
  const int port = gw.port();
  HttpConnection idle(port);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(idle.RoundTrip(HttpRequest{"GET", "/hello", {}, ""}.Serialize(port)).status, 200);
  }
  ASSERT_EQ(Get(port, "/hello").status, 200);  // Connection: close; the client closes too
  ASSERT_EQ(Get(status_port, "/status").status, 200);

  auto signalled = steady_clock::now();
  ASSERT_TRUE(gw.process()->Signal(SIGTERM));
  std::optional<ExitStatus> st = gw.process()->Wait(seconds(10));
  auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - signalled);
  ASSERT_TRUE(st.has_value()) << "still running 10 s after SIGTERM";
  EXPECT_TRUE(st->Success()) << st->ToString();
  EXPECT_LT(took, seconds(1)) << "an idle daemon took " << took.count() << " ms to exit";
  RecordProperty("sigterm_to_exit_ms", std::to_string(took.count()));
}

// A client that asked for `Connection: close`, read its response and keeps its end open: the
// response is complete, and the gateway only lingers (discarding input for up to 2 s) so a
// late byte from the client cannot turn into a RST that destroys the response. A graceful
// stop should not wait that long for such a connection.
//
// Draining shortens a linger in progress to 0.2 s (DownstreamConnection::Drain).
TEST(ShutdownTest, SigtermWithLingeringConnectionExitsWithinOneSecond) {
  Turnpike gw(kTurnpikeBin);
  TurnpikeOptions options;
  options.drain_timeout = "10s";
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw, "routes: []\n#END\n", options));
  const int port = gw.port();
  HttpConnection lingering(port);
  HttpResponse r = lingering.RoundTrip(
      HttpRequest{"GET", "/nothing", {{"Connection", "close"}}, ""}.Serialize(port));
  ASSERT_EQ(r.status, 404) << r.DebugString();

  auto signalled = steady_clock::now();
  ASSERT_TRUE(gw.process()->Signal(SIGTERM));
  std::optional<ExitStatus> st = gw.process()->Wait(seconds(10));
  auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - signalled);
  ASSERT_TRUE(st.has_value()) << "still running 10 s after SIGTERM";
  EXPECT_TRUE(st->Success()) << st->ToString();
  EXPECT_LT(took, seconds(1)) << "exit waited " << took.count()
                              << " ms for a connection whose response was complete";
}

TEST(ShutdownTest, SigtermWhenIdleExitsPromptly) {
  Turnpike gw(kTurnpikeBin);
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw, "routes: []\n#END\n"));
  auto start = steady_clock::now();
  std::optional<ExitStatus> st = gw.Stop(seconds(6));
  ASSERT_TRUE(st.has_value()) << "did not exit within 6 s of SIGTERM";
  EXPECT_TRUE(st->Success()) << st->ToString();
  EXPECT_LT(steady_clock::now() - start, seconds(2))
      << "idle shutdown waited for the drain timeout";
}

}  // namespace
}  // namespace turnpike::itest
