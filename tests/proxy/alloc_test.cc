// Counts heap allocations made while a warm worker proxies requests on a keep-alive
// connection: the steady state must not allocate at all — plain requests, requests through
// the built-in plugins (limit-count's local counters included, and its Redis policies, where
// the C heap is counted too), a plugin using its worker and request state, requests written
// to the access log and by file-logger, and form bodies read for post_arg_* routes (the body
// buffer comes from the worker's pool). Also what a warm answer costs in socket calls: a small
// one goes out as one buffer (WriteTest).

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "config/specs.h"
#include "core/listen_socket.h"
#include "discovery/directory.h"
#include "discovery/fakes.h"
#include "logging/log_writer.h"
#include "metrics/registry.h"
#include "plugins/file_logger/file_logger.h"
#include "plugins/ip_restriction/ip_restriction.h"
#include "plugins/limit_count/limit_count.h"
#include "plugins/prometheus/prometheus.h"
#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "plugins/request_id/request_id.h"
#include "plugins/response_rewrite/response_rewrite.h"
#include "proxy/access_log.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"
#include "support/alloc_counter.h"
#include "support/files.h"
#include "support/redis.h"
#include "support/redis_cluster.h"

// sendmsg(2) calls made by the process that carried more than one buffer, counted on the way
// to libc's (or the sanitizer's) sendmsg: a connection writes a head and a small body as one
// buffer with send(2) (core::TcpConnection::TrySend), so warm small answers make none.
namespace {
std::atomic<uint64_t> g_multi_buffer_sendmsgs{0};
}  // namespace

extern "C" ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  using Fn = ssize_t (*)(int, const struct msghdr*, int);
  static const Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "sendmsg"));
  if (msg != nullptr && msg->msg_iovlen > 1) {
    g_multi_buffer_sendmsgs.fetch_add(1, std::memory_order_relaxed);
  }
  return next(fd, msg, flags);
}

namespace turnpike::proxy {
namespace {

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

// A keep-alive origin answering every request (head, then a Content-Length or chunked body)
// with a fixed response. Stack buffers only, so it adds nothing to the allocation count.
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

// ServeFixed on its own thread for the life of a test.
class Origin {
 public:
  Origin() {
    StatusOr<int> listen = core::CreateListenSocket({.ip = "127.0.0.1", .port = 0});
    if (!listen.ok()) return;
    fd_ = listen.value();
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);  // blocking accept/read
    thread_ = std::thread(ServeFixed, fd_);
  }
  ~Origin() {
    if (fd_ < 0) return;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  Origin(const Origin&) = delete;
  Origin& operator=(const Origin&) = delete;

  bool ok() const { return fd_ >= 0; }
  int port() const { return core::LocalPort(fd_); }

 private:
  int fd_ = -1;
  std::thread thread_;
};

// Warm requests measured per case (after 200 more that warm the worker up).
constexpr int kRequests = 2000;

// Heap allocations made by `n` calls of `round_trip` (one exchange on the warm connection
// each) after 200 warm-up calls; nullopt, with the failure reported, when one failed.
template <typename RoundTripFn>
std::optional<uint64_t> WarmAllocations(int n, RoundTripFn round_trip) {
  for (int i = 0; i < 200; ++i) {
    if (!round_trip()) {
      ADD_FAILURE() << "warm-up " << i;
      return std::nullopt;
    }
  }
  uint64_t before = turnpike::testing::TotalAllocations();
  for (int i = 0; i < n; ++i) {
    if (!round_trip()) {
      ADD_FAILURE() << "request " << i;
      return std::nullopt;
    }
  }
  return turnpike::testing::TotalAllocations() - before;
}

// The gateway every case runs: one worker, and upstream connections never recycled (a
// recycle after `requests` allocates a new connection; the steady state between recycles is
// what is measured).
std::shared_ptr<config::GatewayConfig> OneWorkerGateway() {
  auto gateway = std::make_shared<config::GatewayConfig>();
  gateway->worker_processes = 1;
  gateway->upstream_keepalive.requests = 1000000;
  return gateway;
}

// Routes with upstream "1" on the origin at `port`, and route "r1" on /hello to it (taking
// `plugins`) unless `hello` is false.
config::RoutesConfig OriginRoutes(int port, std::vector<config::PluginSpec> plugins = {},
                                  bool hello = true) {
  config::RoutesConfig routes;
  config::UpstreamSpec up;
  up.id = "1";
  up.nodes.push_back({.host = "127.0.0.1", .port = port, .weight = 1});
  routes.upstreams.push_back(up);
  if (hello) {
    config::RouteSpec route;
    route.id = "r1";
    route.uris = {"/hello"};
    route.upstream_id = "1";
    route.plugins = std::move(plugins);
    routes.routes.push_back(std::move(route));
  }
  return routes;
}

// A worker of `gateway` listening on a loopback port (the test starts, drains and joins it).
struct ServingWorker {
  explicit ServingWorker(std::shared_ptr<const config::GatewayConfig> gateway)
      : listen_fd(Listen()),
        port(listen_fd >= 0 ? core::LocalPort(listen_fd) : 0),
        worker(0, std::move(gateway), {listen_fd}) {}
  static int Listen() {
    StatusOr<int> listen = core::CreateListenSocket({.ip = "127.0.0.1", .port = 0});
    return listen.ok() ? listen.value() : -1;
  }
  int listen_fd;
  int port;
  Worker worker;
};

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

constexpr std::string_view kHelloRequest =
    "GET /hello HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n";

// A started worker of OneWorkerGateway() whose route /hello goes to its own Origin, and a
// client connection to it (fd < 0 when something failed to start).
struct HelloWorker {
  HelloWorker() : serving(gateway) {
    if (!origin.ok() || serving.listen_fd < 0) return;
    config::RoutesConfig routes = OriginRoutes(origin.port());
    BuildReport report;
    serving.worker.Start(BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report));
    fd = ConnectTo(serving.port);
  }
  ~HelloWorker() {
    if (fd >= 0) close(fd);
    if (origin.ok() && serving.listen_fd >= 0) {
      serving.worker.Drain();
      serving.worker.Join();
    }
  }
  Origin origin;
  std::shared_ptr<config::GatewayConfig> gateway = OneWorkerGateway();
  ServingWorker serving;
  int fd = -1;
};

// A started worker of `gateway` serving `routes`, and a client connection to it (fd < 0 when
// something failed to start). Close() closes the connection, then drains and joins the worker,
// which can still be inspected after it; the destructor closes what is left.
struct RoutedWorker {
  RoutedWorker(const std::shared_ptr<config::GatewayConfig>& gateway,
               const config::RoutesConfig& routes)
      : serving(gateway) {
    if (serving.listen_fd < 0) return;
    BuildReport report;
    serving.worker.Start(BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report));
    started = true;
    fd = ConnectTo(serving.port);
  }
  ~RoutedWorker() { Close(); }
  void Close() {
    if (fd >= 0) close(std::exchange(fd, -1));
    if (std::exchange(started, false)) {
      serving.worker.Drain();
      serving.worker.Join();
    }
  }
  ServingWorker serving;
  bool started = false;
  int fd = -1;
};

TEST(AllocationTest, WarmKeepAliveRequestsDoNotAllocate) {
  HelloWorker hello;
  const int fd = hello.fd;
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  // The counter works: the first request allocates (connection, pool and picker state).
  uint64_t cold = turnpike::testing::TotalAllocations();
  ASSERT_TRUE(RoundTrip(fd, kHelloRequest, &response_len));
  EXPECT_GT(turnpike::testing::TotalAllocations() - cold, 0u);
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTrip(fd, kHelloRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";
}

// A small answer goes to the client as one buffer (one send(2), no sendmsg(2) of a head and a
// body), proxied or local, and its bytes are the same.
TEST(WriteTest, SmallAnswersGoOutAsOneBuffer) {
  HelloWorker hello;
  const int fd = hello.fd;
  ASSERT_GE(fd, 0);

  // The counter works: a write of two buffers counts.
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  char a[] = "a", b[] = "b";
  iovec iov[2] = {{a, 1}, {b, 1}};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  uint64_t before = g_multi_buffer_sendmsgs.load();
  ASSERT_EQ(sendmsg(pair[0], &m, 0), 2);
  EXPECT_EQ(g_multi_buffer_sendmsgs.load() - before, 1u);
  close(pair[0]);
  close(pair[1]);

  size_t response_len = 0;
  ASSERT_TRUE(RoundTrip(fd, kHelloRequest, &response_len));  // warm: the exchange's buffers
  before = g_multi_buffer_sendmsgs.load();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(RoundTrip(fd, kHelloRequest, &response_len));
  EXPECT_EQ(g_multi_buffer_sendmsgs.load() - before, 0u) << "proxied answers";

  // A local answer (no route: 404 with its JSON body), read whole by its Content-Length.
  constexpr std::string_view kMiss = "GET /missing HTTP/1.1\r\nHost: example.com\r\n\r\n";
  before = g_multi_buffer_sendmsgs.load();
  ASSERT_EQ(write(fd, kMiss.data(), kMiss.size()), static_cast<ssize_t>(kMiss.size()));
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
    size_t end = got.find("\r\n\r\n");
    size_t cl = got.find("Content-Length: ");
    if (end == std::string::npos || cl == std::string::npos) continue;
    if (got.size() >= end + 4 + std::stoul(got.substr(cl + 16))) break;
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 404 ", 0), 0u) << got;
  EXPECT_NE(got.find("\r\n\r\n{\"error_msg\":"), std::string::npos) << got;
  EXPECT_EQ(g_multi_buffer_sendmsgs.load() - before, 0u) << "local answer";
}

// The keep-alive pool forgets an address once its connections are gone (under node churn it
// kept an empty entry for every address ever used): two nodes pooled, then the worker drains
// and closes them.
TEST(WorkerPoolTest, ClosedConnectionsTakeTheirAddressesOutOfThePool) {
  Origin a;
  Origin b;
  ASSERT_TRUE(a.ok() && b.ok());
  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(a.port());
  routes.upstreams[0].nodes.push_back({.host = "127.0.0.1", .port = b.port(), .weight = 1});
  RoutedWorker routed(gateway, routes);
  ASSERT_GE(routed.fd, 0);
  size_t response_len = 0;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(RoundTrip(routed.fd, kHelloRequest, &response_len));
  routed.Close();
  EXPECT_EQ(routed.serving.worker.pooled_addresses(), 0u);
}

// Every balancer on the hot path, with two nodes so that the picker runs (one node bypasses
// it): chash computes each request's key (a header, a cookie, a rendered template) and finds
// its point; least_conn and ewma report each attempt. Keys change from request to request.
TEST(AllocationTest, WarmRequestsThroughEveryBalancerDoNotAllocate) {
  Origin a;
  Origin b;
  ASSERT_TRUE(a.ok() && b.ok());
  struct Case {
    const char* type;
    const char* hash_on;
    const char* key;
  };
  for (const Case& c :
       {Case{"chash", "header", "X-User"}, Case{"chash", "cookie", "sid"},
        Case{"chash", "vars_combinations", "$http_x_user-$arg_v"}, Case{"chash", "vars", "arg_v"},
        Case{"least_conn", "vars", ""}, Case{"ewma", "vars", ""}}) {
    SCOPED_TRACE(std::string(c.type) + " " + c.hash_on);
    auto gateway = OneWorkerGateway();
    config::RoutesConfig routes = OriginRoutes(a.port());
    routes.upstreams[0].nodes.push_back({.host = "127.0.0.1", .port = b.port(), .weight = 2});
    routes.upstreams[0].type = c.type;
    routes.upstreams[0].hash_on = c.hash_on;
    routes.upstreams[0].key = c.key;
    BuildReport report;
    SnapshotConstSharedPtr snap = BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report);
    ASSERT_EQ(snap->upstreams.at(0)->balancer == upstream::BalancerType::kRoundRobin,
              std::string(c.type) == "roundrobin");

    ServingWorker serving(gateway);
    ASSERT_GE(serving.listen_fd, 0);
    serving.worker.Start(snap);
    int fd = ConnectTo(serving.port);
    ASSERT_GE(fd, 0);
    std::vector<std::string> requests;
    for (int i = 0; i < 16; ++i) {
      const std::string n = std::to_string(i);
      requests.push_back("GET /hello?v=" + n + " HTTP/1.1\r\nHost: example.com\r\nX-User: u" + n +
                         "\r\nCookie: a=1; sid=s" + n + "\r\n\r\n");
    }
    size_t response_len = 0;
    int i = 0;
    std::optional<uint64_t> allocations = WarmAllocations(
        kRequests, [&] { return RoundTrip(fd, requests[i++ % requests.size()], &response_len); });
    ASSERT_TRUE(allocations.has_value());
    EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";
    close(fd);
    serving.worker.Drain();
    serving.worker.Join();
  }
}

// A round-robin upstream large enough (Worker::kPrefetchNodes nodes or more) that each pick
// prefetches the next picks' nodes, pool slots and idle connections: the pipeline peeks at the
// pool without changing it, so answers stay whole and nothing is allocated. The nodes
// alternate between two origins (each serves one connection at a time, which the pool
// keeps).
TEST(AllocationTest, WarmRequestsToALargeRoundRobinSetDoNotAllocate) {
  Origin a;
  Origin b;
  ASSERT_TRUE(a.ok() && b.ok());
  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(a.port());
  routes.upstreams[0].nodes.clear();
  constexpr size_t kNodes = Worker::kPrefetchNodes + 44;
  for (size_t i = 0; i < kNodes; ++i) {
    routes.upstreams[0].nodes.push_back(
        {.host = "127.0.0.1", .port = i % 2 == 0 ? a.port() : b.port(), .weight = 1});
  }
  RoutedWorker routed(gateway, routes);
  ASSERT_GE(routed.fd, 0);
  size_t response_len = 0;
  std::optional<uint64_t> allocations = WarmAllocations(
      kRequests, [&] { return RoundTrip(routed.fd, kHelloRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";
}

// An upstream with active and passive checks: every request checks its health slot (first use,
// health snapshot pointer), skips the node its checker marked down, and reports its status to
// the worker's passive ring (drained meanwhile, as the checker does).
TEST(AllocationTest, WarmRequestsWithHealthChecksDoNotAllocate) {
  Origin a;
  Origin b;
  ASSERT_TRUE(a.ok() && b.ok());
  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(a.port());
  routes.upstreams[0].nodes.push_back({.host = "127.0.0.1", .port = b.port(), .weight = 1});
  routes.upstreams[0].checks.emplace();
  routes.upstreams[0].checks->passive.emplace();
  BuildReport report;
  SnapshotConstSharedPtr snap = BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report);
  upstream::HealthSlotSharedPtr health = snap->upstreams.at(0)->health;
  ASSERT_NE(health, nullptr);
  ASSERT_TRUE(health->passive());
  auto down = std::make_shared<upstream::HealthSnapshot>();
  down->down.push_back({"127.0.0.1", static_cast<uint16_t>(b.port())});
  health->Store(down);

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  serving.worker.Start(snap);
  int fd = ConnectTo(serving.port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  uint64_t reports = 0;
  uint64_t at_b = 0;
  std::optional<uint64_t> allocations = WarmAllocations(kRequests, [&] {
    health->Drain([&](const upstream::PassiveReport& r) {
      ++reports;
      if (ntohs(reinterpret_cast<const sockaddr_in&>(r.addr).sin_port) == b.port()) ++at_b;
    });
    return RoundTrip(fd, kHelloRequest, &response_len);
  });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";
  EXPECT_TRUE(health->used());
  EXPECT_GE(reports, uint64_t{kRequests} - 2) << "every attempt reported a 200";
  EXPECT_EQ(at_b, 0u) << "the node marked down got no request";
  close(fd);
  serving.worker.Drain();
  serving.worker.Join();
}

// The access log on the hot path: APISIX's default format (every variable it names, values
// escaped nginx's way) rendered through the request context in the log phase, and queued in
// the real log writer, whose thread writes the file meanwhile (its allocations count too).
TEST(AllocationTest, WarmRequestsWithAnAccessLogDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());
  turnpike::testing::TempDir dir;
  logging::LogWriter writer(std::chrono::milliseconds(1));
  StatusOr<std::shared_ptr<LogFile>> file = writer.Open(dir.File("access.log"));
  ASSERT_TRUE(file.ok()) << file.status().message();

  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(origin.port());
  BuildReport report;
  SnapshotConstSharedPtr snap = BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report);

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  const int port = serving.port;
  worker.set_access_log(std::make_shared<AccessLog>(gateway->access_log_template, file.value()));
  worker.Start(snap);

  constexpr std::string_view kRequest =
      "GET /hello?a=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t \"q\"\r\n"
      "Referer: http://r.example/\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n";
  int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTrip(fd, kRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
  writer.FlushNow();
  EXPECT_EQ(file.value()->dropped(), 0u);
  std::string text = turnpike::testing::ReadFile(dir.File("access.log"));
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 200u + kRequests);
  std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  std::string node = "127.0.0.1:" + std::to_string(origin.port());
  EXPECT_NE(last.find("127.0.0.1 - user ["), std::string::npos) << last;
  EXPECT_NE(last.find("] example.com \"GET /hello?a=1 HTTP/1.1\" 200 5 0.0"), std::string::npos)
      << last;
  EXPECT_NE(last.find(" \"http://r.example/\" \"t \\x22q\\x22\" " + node + " 200 0.0"),
            std::string::npos)
      << last;
  EXPECT_NE(last.find(" \"http://example.com/hello?a=1\"\n"), std::string::npos) << last;
}

// Sends one request and reads one chunked response (up to its last chunk).
bool RoundTripChunked(int fd) {
  static const char kRequest[] =
      "GET /hello HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n";
  if (write(fd, kRequest, sizeof(kRequest) - 1) < 0) return false;
  char buf[4096];
  size_t have = 0;
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof(buf) - have);
    if (n <= 0) return false;
    have += static_cast<size_t>(n);
    if (have >= 7 && std::memcmp(buf + have - 7, "\r\n0\r\n\r\n", 7) == 0) return true;
    if (have == sizeof(buf)) return false;
  }
}

config::PluginSpec Spec(const std::string& name, const char* conf) {
  config::PluginSpec p;
  p.name = name;
  p.conf = nlohmann::json::parse(conf);
  p.path = "routes[0].plugins." + name;
  return p;
}

// file-logger's default entry (request and response headers, query arguments decoded into the
// worker's scratch buffers, the url built in one), written through the real log writer.
TEST(AllocationTest, WarmRequestsThroughFileLoggerDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());
  turnpike::testing::TempDir dir;
  auto writer = std::make_shared<logging::LogWriter>(std::chrono::milliseconds(1));
  PluginRegistry registry;
  registry.Register(std::make_unique<plugins::file_logger::FileLoggerFactory>(writer));

  auto gateway = OneWorkerGateway();
  std::string conf = R"({"path": ")" + dir.File("entries.log") + R"("})";
  config::RoutesConfig routes = OriginRoutes(origin.port(), {Spec("file-logger", conf.c_str())});
  BuildReport report;
  SnapshotConstSharedPtr snap =
      BuildSnapshot({gateway.get(), &routes, nullptr, 1, &registry}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  const int port = serving.port;
  worker.Start(snap);

  constexpr std::string_view kRequest =
      "GET /hello?a=1&b=x%20y&a=2&flag HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n"
      "X-Twice: 1\r\nX-Twice: 2\r\n\r\n";
  int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTrip(fd, kRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
  writer->FlushNow();
  std::string text = turnpike::testing::ReadFile(dir.File("entries.log"));
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 200u + kRequests);
  std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  EXPECT_NE(last.find(R"("querystring":{"a":["1","2"],"b":"x y","flag":true})"), std::string::npos)
      << last;
  EXPECT_NE(last.find(R"("url":"http://example.com:)"), std::string::npos) << last;
  EXPECT_NE(last.find(R"("x-twice":["1","2"])"), std::string::npos) << last;
}

// The built-in plugins on the hot path: request-id (rewrite + header_filter), ip-restriction
// (access), response-rewrite with a $var header and a body filter (header_filter +
// body_filter, body held back and substituted, chunked reply), and a global rule.
TEST(AllocationTest, WarmRequestsThroughBuiltinPluginsDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());

  PluginRegistry registry;
  registry.Register(std::make_unique<plugins::request_id::RequestIdFactory>());
  registry.Register(std::make_unique<plugins::ip_restriction::IpRestrictionFactory>());
  registry.Register(std::make_unique<plugins::response_rewrite::ResponseRewriteFactory>());
  registry.Register(std::make_unique<plugins::limit_count::LimitCountFactory>());

  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(
      origin.port(), {Spec("request-id", "{}"),
                      // A template key here, a variable key in the global rule.
                      Spec("limit-count", R"({"rules": [{"count": 1000000000, "time_window": 60,
          "key": "$remote_addr-$http_host"}]})"),
                      Spec("ip-restriction", R"({"whitelist": ["127.0.0.0/8", "::1"]})"),
                      Spec("response-rewrite", R"({"vars": [["status", "==", 200]],
          "filters": [{"regex": "hel+", "replace": "HEL", "scope": "global"}],
          "headers": {"set": {"X-Client": "$remote_addr:$remote_port"}}})")});
  config::GlobalRuleSpec g;
  g.id = "g";
  g.plugins = {Spec("response-rewrite", R"({"headers": {"add": ["X-Global: $uri"]}})"),
               Spec("limit-count", R"({"count": 1000000000, "time_window": 60})")};
  routes.global_rules.push_back(g);
  BuildReport report;
  SnapshotConstSharedPtr snap =
      BuildSnapshot({gateway.get(), &routes, nullptr, 1, &registry}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  const int port = serving.port;
  worker.Start(snap);

  int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTripChunked(fd); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
}

// proxy-rewrite on a global rule (regex_uri with captures, a set header from a capture) and
// on the route (a uri template with a default, headers added, set and removed, method and
// host), on a request with a query: the worker's buffers and the request's edit buffers are
// reused, the regex matches into the worker's match data, nothing allocates.
TEST(AllocationTest, WarmRequestsThroughProxyRewriteDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());

  PluginRegistry registry;
  registry.Register(std::make_unique<plugins::proxy_rewrite::ProxyRewriteFactory>());
  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(
      origin.port(), {Spec("proxy-rewrite", R"j({"uri": "/v2$uri/${http_x_none ?? dflt}/$arg_a",
          "method": "POST", "host": "rewritten.example:8080",
          "headers": {"add": {"X-Multi": ["$remote_addr", "two"]},
                      "set": {"X-Uri": "$uri", "X-Empty": ""},
                      "remove": ["User-Agent"]}})j")});
  config::GlobalRuleSpec g;
  g.id = "g";
  g.plugins = {Spec("proxy-rewrite", R"j({"regex_uri": ["^/(hel)(lo)", "/$2/$1"],
      "headers": {"set": {"X-Capture": "${1}-$2-$request_uri"}}})j")};
  routes.global_rules.push_back(g);
  BuildReport report;
  SnapshotConstSharedPtr snap =
      BuildSnapshot({gateway.get(), &routes, nullptr, 1, &registry}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  worker.Start(snap);

  int fd = ConnectTo(serving.port);
  ASSERT_GE(fd, 0);
  constexpr std::string_view kRequest =
      "GET /hello?a=1&b=2 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n";
  size_t response_len = 0;
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTrip(fd, kRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
}

// A plugin that keeps both kinds of state: per worker, a count of the requests it saw and a
// buffer; per request, a rendered line with a heap-sized buffer (Clear() keeps it). The count
// reaches the test when the worker destroys the state at shutdown.
struct Tally final : WorkerState {
  explicit Tally(std::atomic<uint64_t>* out) : out(out) {}
  ~Tally() override { out->store(requests); }
  std::atomic<uint64_t>* out;
  uint64_t requests = 0;
  std::string scratch;
};

struct Line {
  std::string text;
  int phases_seen = 0;
  void Clear() {
    text.clear();
    phases_seen = 0;
  }
};

class TallyPlugin final : public Plugin {
 public:
  explicit TallyPlugin(std::atomic<uint64_t>* out) : out_(out) {}
  uint32_t phases() const override { return kPhaseAccess | kPhaseLog; }
  bool has_worker_state() const override { return true; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment&) const override {
    return std::make_unique<Tally>(out_);
  }
  PhaseResult Access(PluginContext& ctx) const override {
    Line& line = ctx.RequestState<Line>(this);
    line.text.assign("access phase of a request that needs more than the SSO buffer");
    ++line.phases_seen;
    return PhaseResult::kContinue;
  }
  void Log(PluginContext& ctx) const override {
    Line& line = ctx.RequestState<Line>(this);
    if (line.phases_seen != 1) return;  // the same object as in access
    Tally& tally = ctx.worker_state<Tally>(*this);
    tally.scratch.assign(line.text).append(" and its log phase");
    ++tally.requests;
  }

 private:
  std::atomic<uint64_t>* out_;
};

class TallyFactory final : public PluginFactory {
 public:
  explicit TallyFactory(std::atomic<uint64_t>* out) : out_(out) {}
  std::string_view name() const override { return "tally"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&, FactoryContext&) const override {
    return PluginConstSharedPtr(std::make_shared<TallyPlugin>(out_));
  }

 private:
  std::atomic<uint64_t>* out_;
};

// prometheus on a route and a global rule (counted once), with an extra label from a variable:
// the warm log phase finds its bound cells in the worker's cache and allocates nothing.
TEST(AllocationTest, WarmRequestsCountedByPrometheusDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());
  PluginRegistry registry;
  registry.Register(std::make_unique<plugins::prometheus::PrometheusFactory>());
  metrics::Registry metrics(1);

  auto gateway = OneWorkerGateway();
  gateway->plugin_attr.emplace_back(
      "prometheus",
      nlohmann::json::parse(
          R"({"metrics": {"http_status": {"extra_labels": [{"method": "$request_method"}]}}})"));
  config::RoutesConfig routes =
      OriginRoutes(origin.port(), {Spec("prometheus", R"({"prefer_name": true})")});
  config::GlobalRuleSpec g;
  g.id = "g";
  g.plugins = {Spec("prometheus", "{}")};
  routes.global_rules.push_back(g);
  BuildReport report;
  SnapshotConstSharedPtr snap =
      BuildSnapshot({gateway.get(), &routes, nullptr, 1, &registry, &metrics}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  const int port = serving.port;
  worker.Start(snap);

  constexpr std::string_view kRequest = "GET /hello HTTP/1.1\r\nHost: example.com\r\n\r\n";
  int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTrip(fd, kRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
  std::string text = metrics.RenderPrometheus();
  EXPECT_NE(text.find("apisix_http_status{code=\"200\",route=\"r1\",matched_uri=\"/hello\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("response_source=\"upstream\",method=\"GET\"} 2200\n"), std::string::npos)
      << text;
}

// APISIX PR #14141's route: limit-count keyed on a request header, counted by prometheus, with
// a key never seen before on every measured request (the rotating-keys case at its worst: each
// request opens a counter). Neither a new key nor a known one allocates.
TEST(AllocationTest, WarmRequestsWithNewRateLimitKeysDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());
  PluginRegistry registry;
  registry.Register(std::make_unique<plugins::limit_count::LimitCountFactory>());
  registry.Register(std::make_unique<plugins::prometheus::PrometheusFactory>());
  metrics::Registry metrics(1);

  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes =
      OriginRoutes(origin.port(), {Spec("limit-count", R"({"count": 1000000000, "time_window": 60,
          "key_type": "var", "key": "http_x_client"})"),
                                   Spec("prometheus", "{}")});
  BuildReport report;
  SnapshotConstSharedPtr snap =
      BuildSnapshot({gateway.get(), &routes, nullptr, 1, &registry, &metrics}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  worker.Start(snap);

  // Every request text is made before counting starts.
  std::vector<std::string> requests;
  for (int i = 0; i < 200 + kRequests; ++i) {
    requests.push_back("GET /hello HTTP/1.1\r\nHost: example.com\r\nX-Client: client-" +
                       std::to_string(i) + "\r\n\r\n");
  }
  int fd = ConnectTo(serving.port);
  ASSERT_GE(fd, 0);
  size_t next = 0;
  // X-RateLimit-Reset's length varies once a window is under way: each response is measured.
  auto round_trip = [&] {
    size_t response_len = 0;
    return RoundTrip(fd, requests[next++], &response_len);
  };
  std::optional<uint64_t> allocations = WarmAllocations(kRequests, round_trip);
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests
                              << " warm requests, each with a new key";
  // The same keys again: each request now finds its counter.
  next = 200;
  allocations = WarmAllocations(kRequests - 200, round_trip);
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over warm requests with known keys";

  close(fd);
  worker.Drain();
  worker.Join();
}

// A worker serving /hello through limit-count in front of an Origin, and a client connection
// to it: the fields every case shares (a count never reached, keyed on the client address; no
// quota headers, whose values change length) and `conf_fields`. Start() asserts; the
// destructor closes the connection and drains the worker.
class LimitCountServing {
 public:
  ~LimitCountServing() {
    if (fd_ >= 0) close(fd_);
    if (serving_ == nullptr) return;
    serving_->worker.Drain();
    serving_->worker.Join();
  }
  void Start(const std::string& conf_fields) {
    ASSERT_TRUE(origin_.ok());
    registry_.Register(std::make_unique<plugins::limit_count::LimitCountFactory>());
    std::string conf = R"({"count": 1000000000, "key": "$remote_addr",
      "key_type": "var_combination", "show_limit_quota_header": false, )" +
                       conf_fields + "}";
    config::RoutesConfig routes = OriginRoutes(origin_.port(), {Spec("limit-count", conf.c_str())});
    BuildReport report;
    SnapshotConstSharedPtr snap =
        BuildSnapshot({gateway_.get(), &routes, nullptr, 1, &registry_}, &report);
    ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();
    serving_ = std::make_unique<ServingWorker>(gateway_);
    ASSERT_GE(serving_->listen_fd, 0);
    serving_->worker.Start(snap);
    fd_ = ConnectTo(serving_->port);
    ASSERT_GE(fd_, 0);
  }
  bool RoundTrip() { return ::turnpike::proxy::RoundTrip(fd_, kHelloRequest, &response_len_); }

 private:
  Origin origin_;
  PluginRegistry registry_;
  std::shared_ptr<config::GatewayConfig> gateway_ = OneWorkerGateway();
  std::unique_ptr<ServingWorker> serving_;
  int fd_ = -1;
  size_t response_len_ = 0;
};

// limit-count with sync_interval: after the key's first request (which waits for Redis),
// every request is decided in the process-wide table and allocates nothing; Redis sees only
// that first call (the flush is 50 s away). No quota headers: their values change length.
// `window` is the plugin's time_window and window_type fields.
void ExpectDelayedSyncDecidesWithoutAllocating(const std::string& window) {
  if (!turnpike::testing::RedisServer::Available()) GTEST_SKIP() << "no redis-server";
  turnpike::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start()) << redis.error();
  LimitCountServing serving;
  ASSERT_NO_FATAL_FAILURE(serving.Start(R"("policy": "redis", "redis_host": "127.0.0.1",
      "sync_interval": 50, )" + window + R"(, "redis_port": )" +
                                        std::to_string(redis.port())));
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return serving.RoundTrip(); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";
  std::string info = redis.Command({"INFO", "commandstats"});
  EXPECT_NE(info.find("cmdstat_eval:calls=1,"), std::string::npos) << info;
  EXPECT_EQ(info.find("cmdstat_evalsha"), std::string::npos) << info;
}

TEST(AllocationTest, WarmRequestsDecidedByDelayedSyncDoNotAllocate) {
  ExpectDelayedSyncDecidesWithoutAllocating(R"("time_window": 60)");
}

// The same with a sliding window: each request renders its two counters' names into request
// scratch and decides on the key's view. A day's window, so that no window boundary (whose
// first request asks Redis) falls inside the measurement.
TEST(AllocationTest, WarmRequestsDecidedByDelayedSlidingSyncDoNotAllocate) {
  ExpectDelayedSyncDecidesWithoutAllocating(R"("time_window": 86400, "window_type": "sliding")");
}

// limit-count asking Redis on every request (`policy: redis` or `redis-cluster`, no
// sync_interval): the link formats each script call into its connection's reused output
// buffer, matches the answer in its ring of calls and builds the reply in its own storage,
// so a warm request allocates nothing, neither through operator new nor through the C heap
// (hiredis). `conf_fields` are the plugin's Redis and window fields; `redis` the servers
// whose EVALSHA calls (INFO commandstats) must add up to one per measured request at least.
// No quota headers: their values change length.
void ExpectRedisPolicyDoesNotAllocate(const std::string& conf_fields,
                                      const std::vector<turnpike::testing::RedisServer*>& redis) {
  LimitCountServing serving;
  ASSERT_NO_FATAL_FAILURE(serving.Start(conf_fields));
  // The counter works: the warm-up connects to Redis (hiredis's context is malloc'd).
  uint64_t cold = turnpike::testing::MallocCalls();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(serving.RoundTrip()) << i;
  EXPECT_GT(turnpike::testing::MallocCalls() - cold, 0u);
  uint64_t news = turnpike::testing::TotalAllocations();
  uint64_t mallocs = turnpike::testing::MallocCalls();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(serving.RoundTrip()) << "request " << i;
  }
  news = turnpike::testing::TotalAllocations() - news;
  mallocs = turnpike::testing::MallocCalls() - mallocs;
  EXPECT_EQ(news, 0u) << "operator new calls over " << kRequests << " warm requests";
  EXPECT_EQ(mallocs, 0u) << "malloc calls over " << kRequests << " warm requests";

  // Every request asked Redis (not a local decision): the script calls add up.
  uint64_t scripts = 0;
  for (turnpike::testing::RedisServer* server : redis) {
    std::string info = server->Command({"INFO", "commandstats"});
    size_t at = info.find("cmdstat_evalsha:calls=");
    if (at != std::string::npos) scripts += std::stoull(info.substr(at + 22));
  }
  EXPECT_GE(scripts, static_cast<uint64_t>(kRequests));
}

TEST(AllocationTest, WarmRequestsThroughRedisPolicyDoNotAllocate) {
  if (!turnpike::testing::RedisServer::Available()) GTEST_SKIP() << "no redis-server";
  turnpike::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start()) << redis.error();
  ExpectRedisPolicyDoesNotAllocate(R"("time_window": 60, "policy": "redis",
      "redis_host": "127.0.0.1", "redis_port": )" +
                                       std::to_string(redis.port()),
                                   {&redis});
}

// Two counters per request (the current and the previous window's): one script call with
// both keys. A day's window: no boundary inside the measurement.
TEST(AllocationTest, WarmRequestsThroughRedisSlidingPolicyDoNotAllocate) {
  if (!turnpike::testing::RedisServer::Available()) GTEST_SKIP() << "no redis-server";
  turnpike::testing::RedisServer redis;
  ASSERT_TRUE(redis.Start()) << redis.error();
  ExpectRedisPolicyDoesNotAllocate(R"("time_window": 86400, "window_type": "sliding",
      "policy": "redis", "redis_host": "127.0.0.1", "redis_port": )" +
                                       std::to_string(redis.port()),
                                   {&redis});
}

// Three masters: CRC16 of the key, the slot table, the master's link (the cluster layer's
// call slots are reused).
TEST(AllocationTest, WarmRequestsThroughRedisClusterPolicyDoNotAllocate) {
  if (!turnpike::testing::RedisServer::Available()) GTEST_SKIP() << "no redis-server";
  turnpike::testing::RedisCluster cluster;
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  std::string nodes;
  std::vector<turnpike::testing::RedisServer*> servers;
  for (int i = 0; i < cluster.size(); ++i) {
    nodes += (i == 0 ? "\"" : ", \"") + std::string("127.0.0.1:") +
             std::to_string(cluster.port(i)) + "\"";
    servers.push_back(&cluster.node(i));
  }
  ExpectRedisPolicyDoesNotAllocate(R"("time_window": 60, "policy": "redis-cluster",
      "redis_cluster_name": "test", "redis_cluster_nodes": [)" +
                                       nodes + "]",
                                   servers);
}

// Worker and request state used on every request: found by the hooks, no allocation.
TEST(AllocationTest, WarmRequestsUsingPluginStateDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());

  std::atomic<uint64_t> tallied{0};
  PluginRegistry registry;
  registry.Register(std::make_unique<TallyFactory>(&tallied));

  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(origin.port(), {Spec("tally", "{}")});
  BuildReport report;
  SnapshotConstSharedPtr snap =
      BuildSnapshot({gateway.get(), &routes, nullptr, 1, &registry}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();
  ASSERT_EQ(snap->worker_state_plugins.size(), 1u);

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  const int port = serving.port;
  worker.Start(snap);

  int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  std::optional<uint64_t> allocations =
      WarmAllocations(kRequests, [&] { return RoundTrip(fd, kHelloRequest, &response_len); });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << kRequests << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
  EXPECT_EQ(tallied.load(), 200u + kRequests);  // every request found both states
}

// A discovered upstream of 100 nodes (two origins behind them) fed by the real Directory from a
// provider that republishes the same list between requests, as a polling provider (nacos every
// fetch_interval) does: the Directory drops the equal list, the slot keeps its set, the picker is
// not rebuilt, and the worker's requests allocate nothing. The test thread plays the control
// thread; its own allocations (the republished lists) are left out of the count.
TEST(AllocationTest, WarmRequestsToADiscoveredUpstreamRepublishedUnchangedDoNotAllocate) {
  Origin a;
  Origin b;
  ASSERT_TRUE(a.ok() && b.ok());
  auto gateway = OneWorkerGateway();
  gateway->discovery = {{"fake", nlohmann::json::object()}};
  config::RoutesConfig routes = OriginRoutes(a.port());
  routes.upstreams[0].nodes.clear();
  routes.upstreams[0].discovery_type = "fake";
  routes.upstreams[0].service_name = "web";
  BuildReport report;
  SnapshotConstSharedPtr snap = BuildSnapshot({gateway.get(), &routes, nullptr, 1}, &report);
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].ToString();

  uv_loop_t loop;
  uv_loop_init(&loop);
  discovery::FakeResolver resolver;
  discovery::Directory directory(&loop, &resolver);
  auto provider = std::make_unique<discovery::FakeProvider>();
  discovery::FakeProvider* fake = provider.get();
  directory.AddProvider("fake", std::move(provider));
  ASSERT_TRUE(directory.Start().ok());
  directory.Apply(NodeBindings(*snap));
  DiscoveredNodes list;
  for (int i = 0; i < 100; ++i) list.push_back({"127.0.0.1", i % 2 ? a.port() : b.port(), 1, 0});
  fake->Publish("web", list);
  uv_run(&loop, UV_RUN_NOWAIT);
  ASSERT_EQ(snap->upstreams.at(0)->nodes->Load()->nodes.size(), 100u);

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  serving.worker.Start(snap);
  int fd = ConnectTo(serving.port);
  ASSERT_GE(fd, 0);
  size_t response_len = 0;
  int i = 0;
  auto round_trip = [&] {
    if (++i % 10 == 0) {  // the provider's next poll: same content, a new list
      fake->Publish("web", list);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    return RoundTrip(fd, kHelloRequest, &response_len);
  };
  for (int w = 0; w < 200; ++w) ASSERT_TRUE(round_trip()) << "warm-up " << w;
  uint64_t total = turnpike::testing::TotalAllocations();
  uint64_t mine = turnpike::testing::ThreadAllocations();
  for (int r = 0; r < kRequests; ++r) ASSERT_TRUE(round_trip()) << "request " << r;
  uint64_t others = (turnpike::testing::TotalAllocations() - total) -
                    (turnpike::testing::ThreadAllocations() - mine);
  EXPECT_EQ(others, 0u) << "heap allocations over " << kRequests << " warm requests";
  EXPECT_GE(directory.stats().deduped, static_cast<uint64_t>(kRequests / 10));
  EXPECT_EQ(directory.stats().stored, 1u);

  close(fd);
  serving.worker.Drain();
  serving.worker.Join();
  directory.Stop();
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(PostArgAllocationTest, WarmFormRequestsDoNotAllocate) {
  Origin origin;
  ASSERT_TRUE(origin.ok());

  auto gateway = OneWorkerGateway();
  config::RoutesConfig routes = OriginRoutes(origin.port(), {}, /*hello=*/false);
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

  ServingWorker serving(gateway);
  ASSERT_GE(serving.listen_fd, 0);
  Worker& worker = serving.worker;
  const int port = serving.port;
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
  constexpr int kPairs = 1000;  // a Content-Length body and a chunked one each
  std::optional<uint64_t> allocations = WarmAllocations(kPairs, [&] {
    return RoundTrip(fd, kRequest, &response_len) && RoundTrip(fd, kChunked, &response_len);
  });
  ASSERT_TRUE(allocations.has_value());
  EXPECT_EQ(*allocations, 0u) << "heap allocations over " << 2 * kPairs << " warm requests";

  close(fd);
  worker.Drain();
  worker.Join();
}

}  // namespace
}  // namespace turnpike::proxy
