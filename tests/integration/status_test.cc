// The status endpoints (`apisix.status`, apisix-behaviour.md §1.1): GET /status and
// GET /status/ready on their own port, served by the control thread, reporting the loaded
// config version; and, observed through that version, how the daemon notices a changed routes
// file without SIGHUP (directory watch, debouncing, content hash, ConfigMap symlink swaps).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string StatusYaml(int port) {
  return "  status:\n    ip: 127.0.0.1\n    port: " + std::to_string(port) + "\n";
}

// The parsed JSON body of a status answer; fails the test when it is not a JSON object.
JsonValue Body(const HttpResponse& r) {
  std::string error;
  std::optional<JsonValue> doc = ParseJson(r.body, &error);
  EXPECT_TRUE(doc.has_value()) << error << "\n" << r.DebugString();
  EXPECT_TRUE(doc && doc->type == JsonValue::Type::kObject) << r.DebugString();
  return doc.value_or(JsonValue{});
}

std::string StringField(const JsonValue& doc, std::string_view key) {
  const JsonValue* v = doc.Find(key);
  return v != nullptr && v->IsString() ? v->string : "<missing>";
}

// config_version of an answer, or -1.
long long ConfigVersion(const HttpResponse& r) {
  std::optional<JsonValue> doc = ParseJson(r.body);
  const JsonValue* v = doc ? doc->Find("config_version") : nullptr;
  return v != nullptr && v->type == JsonValue::Type::kNumber ? static_cast<long long>(v->number)
                                                             : -1;
}

// `n` routes (a third prefix routes, a fifth with hosts) to `node`, then /hello.
std::string ManyRoutes(int n, const std::string& node) {
  std::string y = "routes:\n";
  y.reserve(static_cast<size_t>(n) * 64);
  for (int i = 0; i < n; ++i) {
    std::string id = std::to_string(i);
    y += "  - id: r" + id + "\n";
    y += i % 3 == 0 ? "    uri: /p" + id + "/*\n" : "    uri: /api/svc" + id + "/items\n";
    if (i % 5 == 0) y += "    hosts: [h" + std::to_string(i % 100) + ".example.com]\n";
    y += "    upstream_id: u\n";
  }
  y += "  - {id: hello, uri: /hello, upstream_id: u}\n";
  y += "upstreams:\n  - id: u\n    nodes: [" + node + "]\n#END\n";
  return y;
}

class StatusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 2u) << "backends did not start"; }

  // {A} / {B} = inline upstreams for those backends.
  static std::string Routes(const std::string& yaml) {
    return Fill(yaml, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"},
                       {"B", "{nodes: [" + Node(backends_[1]->port()) + "]}"}});
  }

  // Starts the gateway with the status endpoints on a free port.
  void StartWithStatus(const std::string& routes_yaml) {
    status_port_ = FreePort();
    ASSERT_NE(status_port_, 0);
    TurnpikeOptions options;
    options.apisix_extra = StatusYaml(status_port_);
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes_yaml, options));
    ASSERT_TRUE(WaitForPort(status_port_, seconds(5))) << "status port not listening";
  }

  // StartWithStatus, then waits until every worker serves the first config.
  void StartReady(const std::string& routes_yaml) {
    ASSERT_NO_FATAL_FAILURE(StartWithStatus(routes_yaml));
    ASSERT_TRUE(PollUntil([&] { return Status("/status/ready").status == 200; }, seconds(10)))
        << Status("/status/ready").DebugString();
  }

  HttpResponse Status(std::string_view path = "/status") { return Get(status_port_, path); }
  long long Version() { return ConfigVersion(Status()); }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
  int status_port_ = 0;
};

constexpr char kHelloA[] = R"(
routes:
  - uri: /hello
    upstream: {A}
#END
)";

TEST_F(StatusTest, StatusIsOkAndReportsTheConfigVersion) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  HttpResponse r = Status();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(r.Header("Content-Type").value_or(""), "application/json");
  EXPECT_EQ(r.body.back(), '\n') << "APISIX ends JSON answers with a newline";
  JsonValue doc = Body(r);
  EXPECT_EQ(StringField(doc, "status"), "ok");
  EXPECT_EQ(ConfigVersion(r), 1);
  // The status port is not the proxy: the proxy port knows no /status route.
  EXPECT_EQ(Get(gw_.port(), "/status").status, 404);
}

TEST_F(StatusTest, ReadyIsOkOnceEveryWorkerHasLoadedConfig) {
  ASSERT_NO_FATAL_FAILURE(StartWithStatus(Routes(kHelloA)));
  HttpResponse r;
  EXPECT_TRUE(PollUntil([&] { return (r = Status("/status/ready")).status == 200; }, seconds(5)))
      << r.DebugString();
  JsonValue doc = Body(r);
  EXPECT_EQ(StringField(doc, "status"), "ok");
  EXPECT_EQ(ConfigVersion(r), 1);
  EXPECT_EQ(Status("/status/ready?probe=1").status, 200) << "the query string is ignored";
}

// The status port listens before the first load of apisix.yaml; while a large file loads, the
// process is up (/status 200) but not ready (/status/ready 503 in APISIX's words).
TEST_F(StatusTest, ReadyIs503WhileTheFirstConfigLoads) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  ASSERT_TRUE(
      WriteFile(dir.File("apisix.yaml"), ManyRoutes(40000, Node(backends_[0]->port())), &error))
      << error;
  int port = FreePort();
  status_port_ = FreePort();
  TurnpikeOptions options;
  options.apisix_extra = StatusYaml(status_port_);
  ASSERT_TRUE(WriteFile(dir.File("config.yaml"), GatewayConfigYaml(port, options), &error));
  ProcessOptions popts;
  popts.stderr_file = dir.File("stderr.log");
  std::unique_ptr<Process> daemon =
      Process::Start(kTurnpikeBin, {"-c", dir.File("config.yaml")}, popts, &error);
  ASSERT_TRUE(daemon) << error;
  ASSERT_TRUE(WaitForPort(status_port_, seconds(10), [&] { return daemon->Running(); }))
      << ReadFile(dir.File("stderr.log"));

  HttpResponse loading = Status("/status/ready");
  HttpResponse alive = Status("/status");
  EXPECT_EQ(loading.status, 503) << loading.DebugString();
  JsonValue doc = Body(loading);
  EXPECT_EQ(StringField(doc, "status"), "error");
  EXPECT_EQ(StringField(doc, "error"), "worker count: 2 but status report count: 0");
  EXPECT_EQ(ConfigVersion(loading), 0);
  EXPECT_EQ(alive.status, 200) << alive.DebugString();

  HttpResponse ready;
  EXPECT_TRUE(
      PollUntil([&] { return (ready = Status("/status/ready")).status == 200; }, seconds(30)))
      << ready.DebugString();
  EXPECT_EQ(ConfigVersion(ready), 1);
  EXPECT_EQ(BackendOf(Get(port, "/hello")), "A");
  EXPECT_EQ(BackendOf(Get(port, "/p3/x")), "A");
  daemon->Signal(SIGTERM);
  EXPECT_TRUE(daemon->Wait(seconds(15)).has_value());
}

TEST_F(StatusTest, OtherPathsAre404AndOtherMethods405) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  for (const char* path : {"/", "/status/", "/status/readyz", "/statusx", "/apisix/status"}) {
    HttpResponse r = Status(path);
    EXPECT_EQ(r.status, 404) << path << "\n" << r.DebugString();
    EXPECT_EQ(r.body, "{\"error_msg\":\"not found\"}\n") << path;
  }
  HttpResponse post = Fetch(status_port_, HttpRequest{"POST", "/status", {}, "x"});
  EXPECT_EQ(post.status, 405) << post.DebugString();
  HttpResponse head =
      Fetch(status_port_, HttpRequest{"HEAD", "/status", {}, ""}, ReadOptions::Head());
  EXPECT_EQ(head.status, 200) << head.DebugString();
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(head.Header("Content-Length").value_or(""), std::to_string(Status().body.size()));
}

TEST_F(StatusTest, KeepAliveAnswersPipelinedRequestsInOrder) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  HttpConnection conn(status_port_);
  ASSERT_TRUE(conn.connected()) << conn.error();
  std::string two = HttpRequest{"GET", "/status", {}, ""}.Serialize(status_port_) +
                    HttpRequest{"GET", "/nope", {}, ""}.Serialize(status_port_);
  ASSERT_TRUE(conn.Send(two));
  HttpResponse first = conn.ReadResponse();
  HttpResponse second = conn.ReadResponse();
  EXPECT_EQ(first.status, 200) << first.DebugString();
  EXPECT_EQ(second.status, 404) << second.DebugString();
  EXPECT_FALSE(second.ConnectionClosing());
  // The same connection serves a third request; `Connection: close` ends it.
  HttpResponse third = conn.RoundTrip(
      HttpRequest{"GET", "/status", {{"Connection", "close"}}, ""}.Serialize(status_port_));
  EXPECT_EQ(third.status, 200) << third.DebugString();
  EXPECT_TRUE(third.ConnectionClosing());
  EXPECT_TRUE(conn.WaitForClose(seconds(3)));
}

TEST_F(StatusTest, BadRequestsAre400AndClose) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  {
    HttpConnection conn(status_port_);
    ASSERT_TRUE(conn.Send("NOT HTTP AT ALL\r\n\r\n"));
    HttpResponse r = conn.ReadResponse();
    EXPECT_EQ(r.status, 400) << r.DebugString();
    EXPECT_TRUE(conn.WaitForClose(seconds(3)));
  }
  {
    // A head that never ends: cut off at 8 KiB.
    HttpConnection conn(status_port_);
    ASSERT_TRUE(conn.Send("GET /status HTTP/1.1\r\nX-Big: " + std::string(16 * 1024, 'a')));
    HttpResponse r = conn.ReadResponse();
    EXPECT_EQ(r.status, 400) << r.DebugString();
    EXPECT_TRUE(conn.WaitForClose(seconds(3)));
  }
  // Still serving.
  EXPECT_EQ(Status().status, 200);
  EXPECT_TRUE(gw_.process()->Running());
}

// ---- reload detection, observed through config_version ----

// Waits until nothing more happens after a change: longer than the debounce delay plus the
// fallback poll interval, so a second (duplicate) reload would have shown up.
void Settle() { std::this_thread::sleep_for(milliseconds(1400)); }

TEST_F(StatusTest, RewrittenFileIsReloadedOnceWithoutSighup) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(R"(
routes:
  - uri: /hello
    upstream: {B}
#END
)")));  // write + rename, as config management tools do; no signal
  EXPECT_TRUE(PollUntil([&] { return Version() == 2; }, seconds(5))) << gw_.Stderr();
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "B");
  Settle();
  EXPECT_EQ(Version(), 2) << gw_.Stderr();
  std::string log = gw_.Stderr();
  EXPECT_NE(log.find("config version 2 loaded (file watch)"), std::string::npos) << log;
}

TEST_F(StatusTest, SlowInPlaceWriteIsOneReload) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  std::string next = Routes(R"(
routes:
  - uri: /hello
    upstream: {B}
  - uri: /echo
    upstream: {B}
#END
)");
  // An editor writing in place, in three pieces: each write is an inotify event, and the
  // file is incomplete (no #END) until the last one.
  int fd = ::open(gw_.routes_path().c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  size_t third = next.size() / 3;
  for (size_t off = 0; off < next.size(); off += third) {
    size_t n = std::min(third, next.size() - off);
    ASSERT_EQ(::write(fd, next.data() + off, n), static_cast<ssize_t>(n));
    std::this_thread::sleep_for(milliseconds(30));
  }
  ::close(fd);
  EXPECT_TRUE(PollUntil([&] { return Version() == 2; }, seconds(5))) << gw_.Stderr();
  Settle();
  EXPECT_EQ(Version(), 2) << gw_.Stderr();
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/echo")), "B");
  EXPECT_EQ(gw_.Stderr().find("rejected"), std::string::npos) << "a partly written file was read:\n"
                                                              << gw_.Stderr();
}

TEST_F(StatusTest, UnchangedContentKeepsTheVersion) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(kHelloA)));  // same bytes, new file
  ASSERT_TRUE(gw_.Reload());
  ::utime(gw_.routes_path().c_str(), nullptr);  // and a new mtime
  Settle();
  EXPECT_EQ(Version(), 1) << gw_.Stderr();
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "A");
}

// A Kubernetes ConfigMap volume: apisix.yaml -> ..data/apisix.yaml, ..data -> ..<timestamp>.
// An update writes a new ..<timestamp> directory and renames a new `..data` symlink over the
// old one; apisix.yaml itself never changes, so only a watch on the directory sees it at once.
TEST_F(StatusTest, ConfigMapSymlinkSwapIsSeenByTheDirectoryWatch) {
  ASSERT_NO_FATAL_FAILURE(StartReady(Routes(kHelloA)));
  const TempDir& dir = gw_.dir();
  std::string error;
  auto publish = [&](const std::string& stamp, const std::string& yaml) {
    ASSERT_EQ(::mkdir(dir.File(stamp).c_str(), 0755), 0);
    ASSERT_TRUE(WriteFile(dir.File(stamp + "/apisix.yaml"), yaml, &error)) << error;
    ASSERT_EQ(::symlink(stamp.c_str(), dir.File("..data_tmp").c_str()), 0);
    ASSERT_EQ(::rename(dir.File("..data_tmp").c_str(), dir.File("..data").c_str()), 0);
  };
  // Turn the plain file into the ConfigMap layout, same content.
  ASSERT_NO_FATAL_FAILURE(publish("..2026_11_30_01", Routes(kHelloA)));
  ASSERT_EQ(::symlink("..data/apisix.yaml", dir.File("link.tmp").c_str()), 0);
  ASSERT_EQ(::rename(dir.File("link.tmp").c_str(), gw_.routes_path().c_str()), 0);
  Settle();
  ASSERT_EQ(Version(), 1) << gw_.Stderr();

  ASSERT_NO_FATAL_FAILURE(publish("..2026_11_30_02", Routes(R"(
routes:
  - uri: /hello
    upstream: {B}
#END
)")));
  EXPECT_TRUE(PollUntil([&] { return Version() == 2; }, seconds(5))) << gw_.Stderr();
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/hello")), "B");
  std::string log = gw_.Stderr();
  EXPECT_NE(log.find("config version 2 loaded (file watch)"), std::string::npos) << log;
}

}  // namespace
}  // namespace turnpike::itest
