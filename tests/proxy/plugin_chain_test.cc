// The plugin chain end to end in a real worker: every phase runs, in priority order, global
// rules first; rewrite edits reach the upstream; access may answer; header and body filters
// see upstream and local answers; log runs last.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/specs.h"
#include "core/listen_socket.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"
#include "support/http_client.h"
#include "support/net.h"

namespace turnpike::proxy {
namespace {

std::mutex g_mu;
std::vector<std::string> g_trace;  // "<phase>:<plugin>"

void Trace(const std::string& entry) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_trace.push_back(entry);
}

std::vector<std::string> TakeTrace() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> t;
  t.swap(g_trace);
  return t;
}

// A plugin implementing every phase; `deny: true` answers 403 in access; `pass: true` leaves
// the body as it is.
class Recorder final : public Plugin {
 public:
  Recorder(std::string name, bool deny, bool pass)
      : name_(std::move(name)), deny_(deny), pass_(pass) {}
  uint32_t phases() const override {
    return kPhaseRewrite | kPhaseAccess | kPhaseHeaderFilter | kPhaseBodyFilter | kPhaseLog;
  }
  PhaseResult Rewrite(PluginContext& ctx) const override {
    Trace("rewrite:" + name_);
    ctx.SetRequestHeader("X-Rewritten-By", name_);
    return PhaseResult::kContinue;
  }
  PhaseResult Access(PluginContext& ctx) const override {
    Trace("access:" + name_);
    if (!deny_) return PhaseResult::kContinue;
    ctx.Respond(403, "denied by " + name_ + "\n");
    return PhaseResult::kRespond;
  }
  void HeaderFilter(PluginContext& ctx) const override {
    Trace("header_filter:" + name_);
    ctx.SetResponseHeader("X-Status-Seen-By-" + name_, std::to_string(ctx.response_status()));
    ctx.MarkBodyModified();
  }
  void BodyFilter(PluginContext&, BodyPiece& piece) const override {
    if (piece.first) Trace("body_filter:" + name_);
    if (!piece.last || pass_) return;
    // Written like echo: clear the scratch, then build the output from the input.
    std::string_view in = piece.data;
    std::string& out = *piece.out;
    out.clear();
    out.append(in);
    out.append("[" + name_ + "]");
    piece.data = out;
  }
  void Log(PluginContext& ctx) const override {
    std::optional<std::string_view> route = ctx.Get(CompileVar("route_id").value());
    Trace("log:" + name_ + ":" + std::string(route.value_or("-")));
  }

 private:
  std::string name_;
  bool deny_;
  bool pass_;
};

class RecorderFactory final : public PluginFactory {
 public:
  RecorderFactory(std::string name, int priority) : name_(std::move(name)), priority_(priority) {}
  std::string_view name() const override { return name_; }
  int priority() const override { return priority_; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext&) const override {
    if (!conf.is_object()) return Status::Error("expected object");
    return PluginConstSharedPtr(
        std::make_shared<Recorder>(name_, conf.value("deny", false), conf.value("pass", false)));
  }

 private:
  std::string name_;
  int priority_;
};

// Pause and resume across requests on one worker (plugins run on the worker thread only, so
// the handles need no lock). `mode`:
//   pause   access pauses the request and parks its handle
//   inline  access pauses and resumes at once, inside the hook
//   resume  resumes every parked request; X-Resumed: how many were still there
//   reject  answers every parked request 429 through its handle, then resumes it
//   probe   X-Alive: how many parked requests are still paused
std::vector<PausedRequest> g_parked;  // worker thread only

class Pauser final : public Plugin {
 public:
  explicit Pauser(std::string mode) : mode_(std::move(mode)) {}
  uint32_t phases() const override { return kPhaseAccess; }
  PhaseResult Access(PluginContext& ctx) const override {
    if (mode_ == "pause") {
      g_parked.push_back(ctx.Pause());
      return PhaseResult::kPause;
    }
    if (mode_ == "inline") {
      ctx.Pause().Resume();
      return PhaseResult::kPause;
    }
    int n = 0;
    for (const PausedRequest& h : g_parked) {
      PluginContext* parked = h.context();
      if (parked == nullptr) continue;
      ++n;
      if (mode_ == "reject") parked->Respond(429, "limited\n");
      if (mode_ != "probe") h.Resume();
    }
    if (mode_ != "probe") g_parked.clear();
    ctx.SetResponseHeader(mode_ == "probe" ? "X-Alive" : "X-Resumed", std::to_string(n));
    return PhaseResult::kContinue;
  }

 private:
  std::string mode_;
};

class PauserFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "pauser"; }
  int priority() const override { return 1000; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext&) const override {
    return PluginConstSharedPtr(std::make_shared<Pauser>(conf.value("mode", "pause")));
  }
};

// Rewrites what goes upstream with the setters proxy-rewrite uses; reports $upstream_uri and
// $upstream_host in the response.
class UpstreamSetter final : public Plugin {
 public:
  explicit UpstreamSetter(nlohmann::json conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return kPhaseRewrite | kPhaseHeaderFilter; }
  PhaseResult Rewrite(PluginContext& ctx) const override {
    if (conf_.contains("uri")) ctx.SetUpstreamUri(conf_["uri"].get<std::string>());
    if (conf_.contains("method")) ctx.SetUpstreamMethod(conf_["method"].get<std::string>());
    if (conf_.contains("host")) ctx.SetUpstreamHost(conf_["host"].get<std::string>());
    return PhaseResult::kContinue;
  }
  void HeaderFilter(PluginContext& ctx) const override {
    for (const char* var : {"upstream_uri", "upstream_host", "uri", "request_method"}) {
      ctx.SetResponseHeader(std::string("X-Var-") + var,
                            std::string(ctx.Get(CompileVar(var).value()).value_or("-")));
    }
  }

 private:
  nlohmann::json conf_;
};

class UpstreamSetterFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "setter"; }
  int priority() const override { return 900; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext&) const override {
    return PluginConstSharedPtr(std::make_shared<UpstreamSetter>(conf));
  }
};

// Origin: answers each request with its head as the body (so the test sees what was sent).
// One thread per connection: a paused request and the one resuming it are in flight at once.
void ServeConnection(int fd) {
  std::string buf;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t end;
    while ((end = buf.find("\r\n\r\n")) != std::string::npos) {
      std::string head = buf.substr(0, end + 4);
      buf.erase(0, end + 4);
      std::string resp =
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(head.size()) + "\r\n\r\n" + head;
      if (write(fd, resp.data(), resp.size()) < 0) break;
    }
  }
  close(fd);
}

void ServeHeads(int listen_fd) {
  std::vector<std::thread> conns;
  for (;;) {
    int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) break;
    conns.emplace_back(ServeConnection, fd);
  }
  for (std::thread& t : conns) t.join();  // each ends when the worker closes its connection
}

config::PluginSpec Spec(const std::string& name, nlohmann::json conf = nlohmann::json::object()) {
  config::PluginSpec p;
  p.name = name;
  p.conf = std::move(conf);
  p.path = "routes.plugins." + name;
  return p;
}

class PluginChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<int> origin = core::CreateListenSocket({.ip = "127.0.0.1", .port = 0});
    ASSERT_TRUE(origin.ok());
    origin_fd_ = origin.value();
    fcntl(origin_fd_, F_SETFL, fcntl(origin_fd_, F_GETFL) & ~O_NONBLOCK);
    origin_thread_ = std::thread(ServeHeads, origin_fd_);

    registry_.Register(std::make_unique<RecorderFactory>("high", 2000));
    registry_.Register(std::make_unique<RecorderFactory>("low", 10));
    registry_.Register(std::make_unique<RecorderFactory>("global", 500));
    registry_.Register(std::make_unique<RecorderFactory>("mid", 100));
    registry_.Register(std::make_unique<PauserFactory>());
    registry_.Register(std::make_unique<UpstreamSetterFactory>());

    config::RoutesConfig routes;
    config::UpstreamSpec up;
    up.nodes.push_back({.host = "127.0.0.1", .port = core::LocalPort(origin_fd_), .weight = 1});
    config::RouteSpec ok;
    ok.id = "ok";
    ok.uris = {"/ok"};
    ok.upstream = up;
    ok.plugins = {Spec("low"), Spec("high")};  // config order is not run order
    routes.routes.push_back(ok);
    config::RouteSpec deny = ok;
    deny.id = "deny";
    deny.uris = {"/deny"};
    deny.plugins = {Spec("high", {{"deny", true}}), Spec("low")};
    routes.routes.push_back(deny);
    config::RouteSpec relay = ok;
    relay.id = "relay";
    relay.uris = {"/relay"};
    relay.plugins = {Spec("high"), Spec("mid", {{"pass", true}}), Spec("low")};
    routes.routes.push_back(relay);
    for (const char* mode : {"pause", "inline", "resume", "reject", "probe"}) {
      config::RouteSpec r = ok;
      r.id = mode;
      r.uris = {std::string("/") + mode};
      r.plugins = {Spec("pauser", {{"mode", mode}}), Spec("low")};
      routes.routes.push_back(r);
    }
    config::RouteSpec setter = ok;
    setter.id = "setter";
    setter.uris = {"/setter"};
    setter.plugins = {
        Spec("setter", {{"uri", "/elsewhere/x?a=1"}, {"method", "PUT"}, {"host", "up.example"}})};
    routes.routes.push_back(setter);
    config::GlobalRuleSpec g;
    g.id = "g";
    g.plugins = {Spec("global")};
    routes.global_rules.push_back(g);

    BuildReport report;
    SnapshotConstSharedPtr snap =
        BuildSnapshot({&gateway_, &routes, nullptr, 1, &registry_}, &report);
    ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();
    StatusOr<int> listen = core::CreateListenSocket({.ip = "127.0.0.1", .port = 0});
    ASSERT_TRUE(listen.ok());
    port_ = core::LocalPort(listen.value());
    worker_ = std::make_unique<Worker>(0, std::make_shared<config::GatewayConfig>(gateway_),
                                       std::vector<int>{listen.value()});
    worker_->Start(snap);
    TakeTrace();
  }
  void TearDown() override {
    if (worker_) {
      worker_->Drain();
      worker_->Join();
    }
    shutdown(origin_fd_, SHUT_RDWR);
    close(origin_fd_);
    if (origin_thread_.joinable()) origin_thread_.join();
  }
  // The trace once `n` entries arrived (log runs after the response was written).
  std::vector<std::string> WaitTrace(size_t n) {
    std::vector<std::string> all;
    for (int i = 0; i < 200 && all.size() < n; ++i) {
      for (std::string& e : TakeTrace()) all.push_back(std::move(e));
      if (all.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return all;
  }

  // X-Alive of /probe: how many parked requests are paused.
  int Alive() { return std::stoi(testing::Get(port_, "/probe").Header("X-Alive").value_or("-1")); }
  bool WaitAlive(int n) {
    return testing::PollUntil([&] { return Alive() == n; }, std::chrono::seconds(5));
  }

  config::GatewayConfig gateway_;
  PluginRegistry registry_;
  int origin_fd_ = -1;
  std::thread origin_thread_;
  int port_ = 0;
  std::unique_ptr<Worker> worker_;
};

TEST_F(PluginChainTest, EveryPhaseRunsInPriorityOrderGlobalRulesFirst) {
  testing::HttpResponse r = testing::Get(port_, "/ok");
  EXPECT_EQ(r.status, 200);
  // rewrite edits reached the upstream (the last writer wins: global, high, then low)
  EXPECT_NE(r.body.find("X-Rewritten-By: low\r\n"), std::string::npos) << r.body;
  EXPECT_EQ(r.Header("X-Status-Seen-By-high").value_or(""), "200");
  EXPECT_EQ(r.Header("X-Status-Seen-By-global").value_or(""), "200");
  // body filters ran global, high, low on the last piece
  EXPECT_EQ(r.body.substr(r.body.size() - 19), "[global][high][low]");
  EXPECT_FALSE(r.HasHeader("Content-Length"));  // body modified
  std::vector<std::string> expected = {
      "rewrite:global",       "rewrite:high",       "rewrite:low",
      "access:global",        "access:high",        "access:low",
      "header_filter:global", "header_filter:high", "header_filter:low",
      "body_filter:global",   "body_filter:high",   "body_filter:low",
      "log:global:ok",        "log:high:ok",        "log:low:ok"};
  EXPECT_EQ(WaitTrace(expected.size()), expected);
}

TEST_F(PluginChainTest, AccessMayAnswerAndFiltersStillRun) {
  testing::HttpResponse r = testing::Get(port_, "/deny");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "denied by high\n[global][high][low]");
  EXPECT_EQ(r.Header("X-Status-Seen-By-low").value_or(""), "403");
  std::vector<std::string> expected = {
      "rewrite:global",     "rewrite:high",         "rewrite:low",        "access:global",
      "access:high",        "header_filter:global", "header_filter:high", "header_filter:low",
      "body_filter:global", "body_filter:high",     "body_filter:low",    "log:global:deny",
      "log:high:deny",      "log:low:deny"};
  EXPECT_EQ(WaitTrace(expected.size()), expected);
}

TEST_F(PluginChainTest, AFilterAfterAPassThroughStillSeesItsInput) {
  // global and high rewrite the last piece, mid passes it on untouched, low rewrites it
  // again: low must not be handed the buffer its input lives in as its scratch.
  testing::HttpResponse r = testing::Get(port_, "/relay");
  EXPECT_EQ(r.status, 200);
  ASSERT_GT(r.body.size(), 19u);
  EXPECT_EQ(r.body.substr(r.body.size() - 19), "[global][high][low]");
  EXPECT_EQ(r.body.find("GET /relay"), 0u) << r.body;
}

TEST_F(PluginChainTest, GlobalRulesRunForUnmatchedRequests) {
  testing::HttpResponse r = testing::Get(port_, "/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.Header("X-Status-Seen-By-global").value_or(""), "404");
  EXPECT_FALSE(r.HasHeader("X-Status-Seen-By-high"));
  std::vector<std::string> expected = {"rewrite:global", "access:global", "header_filter:global",
                                       "body_filter:global", "log:global:-"};
  EXPECT_EQ(WaitTrace(expected.size()), expected);
}

TEST_F(PluginChainTest, APausedRequestGoesOnWithTheNextPluginWhenResumed) {
  testing::HttpResponse paused;
  std::thread client([&] { paused = testing::Get(port_, "/pause"); });
  ASSERT_TRUE(WaitAlive(1));
  // Other requests go on meanwhile, on the same worker.
  testing::HttpResponse resumer = testing::Get(port_, "/resume");
  EXPECT_EQ(resumer.status, 200);
  EXPECT_EQ(resumer.Header("X-Resumed").value_or(""), "1");
  client.join();
  EXPECT_EQ(paused.status, 200);
  // The chain went on after the pauser (low's rewrite edit reached the origin).
  EXPECT_NE(paused.body.find("GET /pause HTTP/1.1"), std::string::npos) << paused.body;
  EXPECT_EQ(Alive(), 0);
}

TEST_F(PluginChainTest, APausedRequestCanBeAnsweredThroughItsHandle) {
  testing::HttpResponse paused;
  std::thread client([&] { paused = testing::Get(port_, "/pause"); });
  ASSERT_TRUE(WaitAlive(1));
  EXPECT_EQ(testing::Get(port_, "/reject").Header("X-Resumed").value_or(""), "1");
  client.join();
  EXPECT_EQ(paused.status, 429);
  EXPECT_EQ(paused.body, "limited\n[global][low]");  // body filters still see the answer
}

TEST_F(PluginChainTest, AResumeInsideTheHookThatPausedGoesOnAtOnce) {
  testing::HttpResponse r = testing::Get(port_, "/inline");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("GET /inline HTTP/1.1"), std::string::npos) << r.body;
  EXPECT_EQ(Alive(), 0);
}

TEST_F(PluginChainTest, AClientThatLeavesWhilePausedCancelsThePause) {
  int fd = testing::ConnectLoopback(port_, std::chrono::seconds(2));
  ASSERT_GE(fd, 0);
  std::string req = "GET /pause HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  ASSERT_TRUE(WaitAlive(1));
  close(fd);
  ASSERT_TRUE(WaitAlive(0));  // the worker saw the close: the handle is stale
  // A late resume of the stale handle does nothing, and the worker goes on serving.
  EXPECT_EQ(testing::Get(port_, "/resume").Header("X-Resumed").value_or(""), "0");
  EXPECT_EQ(testing::Get(port_, "/ok").status, 200);
}

TEST_F(PluginChainTest, APausedRequestKeepsPipelinedInputForLater) {
  int fd = testing::ConnectLoopback(port_, std::chrono::seconds(2));
  ASSERT_GE(fd, 0);
  timeval tv{1, 0};  // a read that gets nothing fails instead of hanging the test
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string reqs = "GET /pause HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, reqs.data(), reqs.size()), static_cast<ssize_t>(reqs.size()));
  ASSERT_TRUE(WaitAlive(1));  // the pipelined /ok waits behind the paused request
  EXPECT_EQ(testing::Get(port_, "/resume").Header("X-Resumed").value_or(""), "1");
  std::string got;
  char buf[8192];
  ASSERT_TRUE(testing::PollUntil(
      [&] {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) got.append(buf, static_cast<size_t>(n));
        return got.find("GET /ok HTTP/1.1") != std::string::npos;
      },
      std::chrono::seconds(5)));
  size_t first = got.find("GET /pause HTTP/1.1");
  ASSERT_NE(first, std::string::npos) << got;
  EXPECT_LT(first, got.find("GET /ok HTTP/1.1"));  // answers in request order
  close(fd);
}

TEST_F(PluginChainTest, SettersChangeTheRequestLineAndHostSentUpstreamOnly) {
  testing::HttpResponse r = testing::Get(port_, "/setter?q=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.rfind("PUT /elsewhere/x?a=1 HTTP/1.1\r\nHost: up.example\r\n", 0), 0u) << r.body;
  EXPECT_EQ(r.Header("X-Var-upstream_uri").value_or(""), "/elsewhere/x?a=1");
  EXPECT_EQ(r.Header("X-Var-upstream_host").value_or(""), "up.example");
  // The client's request as the variables see it is unchanged.
  EXPECT_EQ(r.Header("X-Var-uri").value_or(""), "/setter");
  EXPECT_EQ(r.Header("X-Var-request_method").value_or(""), "GET");
}

}  // namespace
}  // namespace turnpike::proxy
