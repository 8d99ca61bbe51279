// Changing apisix.yaml while running: SIGHUP reload, a file without `#END` (or with a
// collection that is not a list) being ignored, and reloads under continuous keep-alive load
// losing no request (apisix-behaviour.md §1.2-1.3).

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ReloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 2u) << "backends did not start"; }

  // {A} / {B} = inline upstreams for those backends.
  static std::string Routes(const std::string& yaml) {
    return Fill(yaml, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"},
                       {"B", "{nodes: [" + Node(backends_[1]->port()) + "]}"}});
  }

  std::string BackendFor(const std::string& path) { return BackendOf(Get(gw_.port(), path)); }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(ReloadTest, SighupAppliesNewRoutes) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - uri: /hello
    upstream: {A}
  - uri: /echo/old
    upstream: {A}
#END
)")));
  EXPECT_EQ(BackendFor("/hello"), "A");
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(R"(
routes:
  - uri: /hello
    upstream: {B}
  - uri: /echo/new
    upstream: {B}
#END
)")));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(PollUntil([&] { return BackendFor("/hello") == "B"; }, seconds(5)))
      << "new routes not live 5 s after SIGHUP";
  EXPECT_EQ(BackendFor("/echo/new"), "B");
  HttpResponse gone = Get(gw_.port(), "/echo/old");
  EXPECT_EQ(gone.status, 404) << gone.DebugString();
  EXPECT_TRUE(gw_.process()->Running());
}

TEST_F(ReloadTest, RoutesFileWithoutEndMarkerKeepsPreviousRoutes) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - uri: /hello
    upstream: {A}
#END
)")));
  std::string next = Routes(R"(
routes:
  - uri: /hello
    upstream: {B}
  - uri: /echo/new
    upstream: {B}
)");
  size_t log_size = gw_.Stderr().size();
  ASSERT_TRUE(gw_.RewriteRoutes(next));
  ASSERT_TRUE(gw_.Reload());
  // The rejection cannot be observed through the data plane; give the daemon until it logs
  // something (it should complain about the file), at most 3 s.
  PollUntil([&] { return gw_.Stderr().size() > log_size; }, seconds(3), milliseconds(20));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(BackendFor("/hello"), "A") << "routes from a file without #END were applied";
  }
  EXPECT_EQ(Get(gw_.port(), "/echo/new").status, 404);
  EXPECT_TRUE(gw_.process()->Running());

  // The same content with the marker is accepted.
  ASSERT_TRUE(gw_.RewriteRoutes(next + "#END\n"));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(PollUntil([&] { return BackendFor("/echo/new") == "B"; }, seconds(5)));
  EXPECT_EQ(BackendFor("/hello"), "B");
}

TEST_F(ReloadTest, InvalidYamlKeepsPreviousRoutes) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - uri: /hello
    upstream: {A}
#END
)")));
  size_t log_size = gw_.Stderr().size();
  ASSERT_TRUE(gw_.RewriteRoutes("routes: [ {uri: /hello,\n#END\n"));
  ASSERT_TRUE(gw_.Reload());
  PollUntil([&] { return gw_.Stderr().size() > log_size; }, seconds(3), milliseconds(20));
  EXPECT_EQ(BackendFor("/hello"), "A");
  EXPECT_TRUE(gw_.process()->Running());
}

// A reload keeps the plugin instances whose configuration is unchanged and says so in its
// log line; a changed one is compiled anew and takes effect.
TEST_F(ReloadTest, UnchangedPluginsAreKeptAndCounted) {
  const std::string routes = R"(
routes:
  - id: kept
    uri: /kept
    upstream: {A}
    plugins:
      request-id: {header_name: X-Kept}
  - id: changed
    uri: /changed
    upstream: {A}
    plugins:
      request-id: {header_name: X-Before}
#END
)";
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(routes)));
  EXPECT_TRUE(Get(gw_.port(), "/changed").HasHeader("X-Before"));
  std::string next = routes;
  next.replace(next.find("X-Before"), 8, "X-After");
  ASSERT_TRUE(gw_.RewriteRoutes(Routes(next)));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(
      PollUntil([&] { return Get(gw_.port(), "/changed").HasHeader("X-After"); }, seconds(5)));
  EXPECT_TRUE(Get(gw_.port(), "/kept").HasHeader("X-Kept"));
  std::string log = gw_.Stderr();
  size_t at = log.find("config version 2 loaded");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_NE(log.find("2 plugin instances (1 unchanged)", at), std::string::npos) << log;
}

// `routes` that is not a list (a typo such as a missing `-`) rejects the whole file, like a
// missing `#END`: the previous routes keep serving instead of all of them going away.
TEST_F(ReloadTest, CollectionThatIsNotAListKeepsPreviousRoutes) {
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, Routes(R"(
routes:
  - uri: /hello
    upstream: {A}
#END
)")));
  ASSERT_EQ(BackendFor("/hello"), "A");
  auto rejections = [&] {
    std::string log = gw_.Stderr();
    size_t n = 0;
    for (size_t at = log.find(" rejected; keeping"); at != std::string::npos;
         at = log.find(" rejected; keeping", at + 1)) {
      ++n;
    }
    return n;
  };
  for (const char* value : {"{uri: /hello, upstream: {B}}", "5", "\"abc\""}) {
    SCOPED_TRACE(value);
    size_t before = rejections();
    ASSERT_TRUE(
        gw_.RewriteRoutes(Routes("upstreams: []\nroutes: " + std::string(value) + "\n#END\n")));
    ASSERT_TRUE(gw_.Reload());
    EXPECT_TRUE(PollUntil([&] { return rejections() > before; }, seconds(5), milliseconds(20)))
        << "no rejection logged:\n"
        << gw_.Stderr();
    EXPECT_NE(gw_.Stderr().find("apisix.yaml:2:9: routes: wrong type: expected list"),
              std::string::npos)
        << gw_.Stderr();
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(BackendFor("/hello"), "A") << "a file whose routes is not a list was applied";
    }
  }
  EXPECT_TRUE(gw_.process()->Running());

  // A null `routes:` (every item commented out) is a valid file with no routes.
  ASSERT_TRUE(gw_.RewriteRoutes("routes:\n#  - uri: /hello\n#END\n"));
  ASSERT_TRUE(gw_.Reload());
  EXPECT_TRUE(PollUntil([&] { return Get(gw_.port(), "/hello").status == 404; }, seconds(5)));
}

// Client threads sending GET /hello in a loop on keep-alive connections (reconnecting only
// when the server announces a close) until Stop() or destruction.
class HelloLoad {
 public:
  HelloLoad(int port, int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this, port] { Run(port); });
  }
  ~HelloLoad() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }
  std::string Failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string all;
    for (const std::string& f : failures_) all += "----\n" + f + "\n";
    return all;
  }

 private:
  void Fail(std::string what) {
    ++failed_;
    std::lock_guard<std::mutex> lock(mu_);
    if (failures_.size() < 10) failures_.push_back(std::move(what));
  }

  void Run(int port) {
    HttpConnection conn;
    const std::string request = HttpRequest{"GET", "/hello", {}, ""}.Serialize(port);
    while (!stop_.load()) {
      if (!conn.connected() && !conn.Connect(port)) {
        Fail(conn.error());
        std::this_thread::sleep_for(milliseconds(10));  // do not spin on a dead gateway
        continue;
      }
      HttpResponse r = conn.RoundTrip(request);
      if (r.status == 200 && r.body == "hello world\n") {
        ++ok_;
      } else {
        Fail(r.DebugString());
      }
      if (!r.ok() || r.ConnectionClosing()) conn.Close();
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  mutable std::mutex mu_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

// Client threads keep sending on keep-alive connections while the routes file is replaced 20
// times; every version keeps /hello (alternating between two upstream ids and backends) and
// adds /echo/version/<i>, which tells when version i is live.
TEST_F(ReloadTest, ReloadUnderLoadLosesNoRequests) {
  auto version = [&](int i) {
    return Fill(R"(
routes:
  - uri: /hello
    upstream_id: up-{I}
  - uri: /echo/version/{I}
    upstream_id: up-{I}
upstreams:
  - id: up-{I}
    nodes: [{NODE}]
#END
)",
                {{"I", std::to_string(i)}, {"NODE", Node(backends_[i % 2]->port())}});
  };
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, version(0)));

  HelloLoad load(gw_.port(), 4);
  const int port = gw_.port();
  bool all_live = true;
  for (int i = 1; i <= 20 && all_live; ++i) {
    int before = load.ok();
    // Let some requests through on the current version before replacing it.
    PollUntil([&] { return load.ok() > before + 10 || load.failed() > 0; }, seconds(5),
              milliseconds(1));
    ASSERT_TRUE(gw_.RewriteRoutes(version(i)));
    ASSERT_TRUE(gw_.Reload());
    all_live = PollUntil(
        [&] { return Get(port, "/echo/version/" + std::to_string(i)).status == 200; }, seconds(5));
    EXPECT_TRUE(all_live) << "version " << i << " not live 5 s after SIGHUP";
  }
  load.Stop();

  EXPECT_GT(load.ok(), 100);
  EXPECT_EQ(load.failed(), 0) << load.Failures();
  // The last version (20, backend A) is what serves now.
  EXPECT_TRUE(PollUntil([&] { return BackendFor("/hello") == "A"; }, seconds(5)));
  EXPECT_EQ(Get(port, "/echo/version/20").status, 200);
  EXPECT_EQ(Get(port, "/echo/version/19").status, 404);
  EXPECT_TRUE(gw_.process()->Running());
}

}  // namespace
}  // namespace turnpike::itest
