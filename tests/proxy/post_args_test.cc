// post_arg_NAME: which snapshots ask for form bodies to be read before routing, how the
// request context answers from a buffered body, and that warm form requests through a
// post_arg route allocate nothing (the body buffer comes from the worker's pool).

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "config/specs.h"
#include "core/listen_socket.h"
#include "http/parser.h"
#include "proxy/plugin_registry.h"
#include "proxy/request_context.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"
#include "support/alloc_counter.h"

namespace turnpike::proxy {
namespace {

// ---------------------------------------------------------------- the request context

class PostArgContextTest : public ::testing::Test {
 protected:
  void Parse(std::string raw) {
    raw_ = std::move(raw);
    ASSERT_EQ(parser_.ParseHead(raw_.data(), raw_.size(), &head_), 0);
    conn_ = {"10.0.0.9", "50000", "127.0.0.1", "9080"};
    ctx_.Begin(&conn_, &head_, head_.path, "example.com", "1.2.3.4");
  }
  std::optional<std::string_view> Var(std::string_view name) {
    StatusOr<VarRef> ref = CompileVar(name);
    EXPECT_TRUE(ref.ok()) << name;
    return ctx_.Get(ref.value());
  }

  std::string raw_;
  http::RequestParser parser_;
  http::RequestHead head_;
  ConnectionInfo conn_;
  RequestContext ctx_;
};

TEST_F(PostArgContextTest, FieldsOfABufferedFormBody) {
  Parse("POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 30\r\n\r\n");
  EXPECT_FALSE(Var("post_arg_name"));  // not read (streaming): no fields
  std::string body = "name=a+b&x=%31&x=2&flag&e=";
  ctx_.SetBufferedBody(body);
  EXPECT_EQ(Var("post_arg_name"), "a b");
  EXPECT_EQ(Var("post_arg_x"), "1");
  EXPECT_EQ(Var("post_arg_flag"), "");
  EXPECT_EQ(Var("post_arg_e"), "");
  EXPECT_FALSE(Var("post_arg_missing"));
  // Parsed once: later changes of the bytes are not looked at again within the request.
  body.assign(body.size(), 'z');
  EXPECT_EQ(Var("post_arg_name"), "a b");
  // A new request starts without a body.
  Parse("POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 6\r\n\r\n");
  EXPECT_FALSE(Var("post_arg_name"));
  std::string next = "name=n";
  ctx_.SetBufferedBody(next);
  EXPECT_EQ(Var("post_arg_name"), "n");
}

TEST_F(PostArgContextTest, OnlyFormContentTypesHaveFields) {
  std::string body = "name=x";
  for (const char* type : {"application/x-www-form-urlencoded",
                           "application/x-www-form-urlencoded; charset=UTF-8"}) {
    Parse(std::string("POST / HTTP/1.1\r\nHost: h\r\nContent-Type: ") + type +
          "\r\nContent-Length: 6\r\n\r\n");
    ctx_.SetBufferedBody(body);
    EXPECT_EQ(Var("post_arg_name"), "x") << type;
  }
  for (const char* type : {"text/plain", "multipart/form-data", "Application/X-Www-Form-Urlencoded",
                           "application/json"}) {
    Parse(std::string("POST / HTTP/1.1\r\nHost: h\r\nContent-Type: ") + type +
          "\r\nContent-Length: 6\r\n\r\n");
    ctx_.SetBufferedBody(body);
    EXPECT_FALSE(Var("post_arg_name")) << type;
  }
  Parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\n");
  ctx_.SetBufferedBody(body);
  EXPECT_FALSE(Var("post_arg_name"));
}

// ---------------------------------------------------------------- the snapshot flag

// A plugin that does nothing; its configuration is whatever the test writes.
class NopPlugin final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseAccess; }
};
class NopFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "nop"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&) const override {
    return PluginConstSharedPtr(std::make_shared<NopPlugin>());
  }
};

class PostArgSnapshotTest : public ::testing::Test {
 protected:
  PostArgSnapshotTest() { registry_.Register(std::make_unique<NopFactory>()); }

  config::RouteSpec& AddRoute(const std::string& id) {
    config::RouteSpec r;
    r.id = id;
    r.uris = {"/" + id};
    r.upstream_id = "u";
    routes_.routes.push_back(r);
    return routes_.routes.back();
  }
  SnapshotConstSharedPtr Build() {
    if (routes_.upstreams.empty()) {
      config::UpstreamSpec up;
      up.id = "u";
      up.nodes.push_back({.host = "127.0.0.1", .port = 9, .weight = 1});
      routes_.upstreams.push_back(up);
    }
    BuildReport report;
    SnapshotConstSharedPtr snap =
        BuildSnapshot({&gateway_, &routes_, nullptr, 1, &registry_}, &report);
    EXPECT_TRUE(report.errors.empty()) << report.errors.front().message;
    return snap;
  }
  static config::PluginSpec Nop(const char* conf) {
    return {"nop", nlohmann::json::parse(conf), {}, "plugins.nop"};
  }

  config::GatewayConfig gateway_;
  config::RoutesConfig routes_;
  PluginRegistry registry_;
};

TEST_F(PostArgSnapshotTest, OrdinaryRoutesReadNoBody) {
  AddRoute("plain");
  AddRoute("vars").vars = config::VarsSpec{nlohmann::json::parse(
      R"([["arg_name", "==", "x"], ["http_content_type", "~~", "form"]])"), {}, "vars"};
  AddRoute("plugin").plugins = {Nop(R"({"note": "post args are fine to mention"})")};
  SnapshotConstSharedPtr snap = Build();
  EXPECT_FALSE(snap->needs_post_args);
  for (const Route& r : snap->routes) EXPECT_FALSE(r.needs_post_args) << r.id;
}

TEST_F(PostArgSnapshotTest, RouteVarsReadingPostArgs) {
  AddRoute("plain");
  AddRoute("form").vars = config::VarsSpec{
      nlohmann::json::parse(R"(["OR", ["arg_a", "==", "1"], ["post_arg_name", "==", "x"]])"),
      {},
      "vars"};
  SnapshotConstSharedPtr snap = Build();
  EXPECT_TRUE(snap->needs_post_args);
  EXPECT_FALSE(snap->routes[0].needs_post_args);
  EXPECT_TRUE(snap->routes[1].needs_post_args);
}

TEST_F(PostArgSnapshotTest, PluginsMentioningPostArgs) {
  AddRoute("template").plugins = {Nop(R"({"key": "$post_arg_user"})")};
  AddRoute("nested").plugins = {Nop(R"({"rules": [{"vars": [["post_arg_a", "==", "1"]]}]})")};
  SnapshotConstSharedPtr snap = Build();
  EXPECT_TRUE(snap->needs_post_args);
  EXPECT_TRUE(snap->routes[0].needs_post_args);
  EXPECT_TRUE(snap->routes[1].needs_post_args);
}

TEST_F(PostArgSnapshotTest, GlobalRulesMentioningPostArgs) {
  AddRoute("plain");
  routes_.global_rules.push_back({"g1", {Nop(R"({"key": "${post_arg_user}"})")}, {}, "g"});
  SnapshotConstSharedPtr snap = Build();
  EXPECT_TRUE(snap->needs_post_args);
  EXPECT_FALSE(snap->routes[0].needs_post_args);
}

// ---------------------------------------------------------------- no allocation once warm

int ConnectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Answers every request (head + Content-Length or chunked body) with a fixed response; stack buffers
// only, so it adds nothing to the allocation count.
void ServeFixed(int listen_fd) {
  static const char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  for (;;) {
    int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    char buf[8192];
    size_t have = 0;
    for (;;) {
      ssize_t n = read(fd, buf + have, sizeof(buf) - have);
      if (n <= 0) break;
      have += static_cast<size_t>(n);
      for (;;) {
        char* end = static_cast<char*>(memmem(buf, have, "\r\n\r\n", 4));
        if (end == nullptr) break;
        size_t head = static_cast<size_t>(end + 4 - buf);
        size_t body = 0;
        if (char* cl = static_cast<char*>(memmem(buf, head, "Content-Length: ", 16))) {
          body = static_cast<size_t>(atoi(cl + 16));
        } else if (memmem(buf, head, "chunked", 7) != nullptr) {
          char* last = static_cast<char*>(memmem(buf + head, have - head, "0\r\n\r\n", 5));
          if (last == nullptr) break;
          body = static_cast<size_t>(last + 5 - (buf + head));
        }
        if (have < head + body) break;
        if (write(fd, kResponse, sizeof(kResponse) - 1) < 0) break;
        std::memmove(buf, buf + head + body, have - head - body);
        have -= head + body;
      }
    }
    close(fd);
  }
}

// One request, one whole response of known length (learned on the first call).
bool RoundTrip(int fd, std::string_view request, size_t* response_len) {
  if (write(fd, request.data(), request.size()) < 0) return false;
  char buf[4096];
  size_t have = 0;
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof(buf) - have);
    if (n <= 0) return false;
    have += static_cast<size_t>(n);
    if (*response_len == 0) {
      char* end = static_cast<char*>(memmem(buf, have, "\r\n\r\n", 4));
      if (end == nullptr) continue;
      *response_len = static_cast<size_t>(end + 4 - buf) + 5;  // body is "hello"
    }
    if (have >= *response_len) return have == *response_len;
  }
}

TEST(PostArgAllocationTest, WarmFormRequestsDoNotAllocate) {
  StatusOr<int> origin = core::CreateListenSocket({.ip = "127.0.0.1", .port = 0});
  ASSERT_TRUE(origin.ok()) << origin.status().message();
  int origin_fd = origin.value();
  fcntl(origin_fd, F_SETFL, fcntl(origin_fd, F_GETFL) & ~O_NONBLOCK);
  std::thread origin_thread(ServeFixed, origin_fd);

  auto gateway = std::make_shared<config::GatewayConfig>();
  gateway->worker_processes = 1;
  gateway->upstream_keepalive.requests = 1000000;
  config::RoutesConfig routes;
  config::UpstreamSpec up;
  up.id = "1";
  up.nodes.push_back({.host = "127.0.0.1", .port = core::LocalPort(origin_fd), .weight = 1});
  routes.upstreams.push_back(up);
  config::RouteSpec route;
  route.id = "form";
  route.uris = {"/form"};
  route.upstream_id = "1";
  route.vars = config::VarsSpec{
      nlohmann::json::parse(R"([["post_arg_name", "==", "x"], ["post_arg_n", "~~", "^[0-9]+$"]])"),
      {},
      "vars"};
  routes.routes.push_back(route);
  BuildReport report;
  SnapshotConstSharedPtr snap = BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report);
  ASSERT_TRUE(snap->needs_post_args);

  StatusOr<int> listen = core::CreateListenSocket({.ip = "127.0.0.1", .port = 0});
  ASSERT_TRUE(listen.ok());
  int port = core::LocalPort(listen.value());
  Worker worker(0, gateway, {listen.value()});
  worker.Start(snap);

  static const char kRequest[] =
      "POST /form HTTP/1.1\r\nHost: example.com\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\n"
      "a=1&name=x&n=123&";
  static const char kChunked[] =
      "POST /form HTTP/1.1\r\nHost: example.com\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
      "6\r\nname=x\r\n6\r\n&n=42&\r\n0\r\n\r\n";
  int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(RoundTrip(fd, kRequest, &response_len)) << "warm-up " << i;
    ASSERT_TRUE(RoundTrip(fd, kChunked, &response_len)) << "warm-up " << i;
  }
  constexpr int kRequests = 1000;
  uint64_t before = turnpike::testing::TotalAllocations();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(RoundTrip(fd, kRequest, &response_len)) << i;
    ASSERT_TRUE(RoundTrip(fd, kChunked, &response_len)) << i;
  }
  uint64_t allocations = turnpike::testing::TotalAllocations() - before;
  EXPECT_EQ(allocations, 0u) << "heap allocations over " << 2 * kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
  shutdown(origin_fd, SHUT_RDWR);
  close(origin_fd);
  origin_thread.join();
}

}  // namespace
}  // namespace turnpike::proxy
