// The control API through the daemon (apisix-behaviour.md §1.5; APISIX's apisix/control/v1.lua
// and t/control/*.t): `apisix.control` on its own port, served by the control thread; routes,
// services and upstreams of the loaded apisix.yaml in APISIX's shapes (checked field by
// field), a reload (file change or PUT /v1/plugins/reload) visible there, health-checked items,
// the dns provider's dump against a real dnsmasq, and the listener's config rules: disabled,
// port conflicts (a config error naming the field), a configured port in use (the daemon does
// not start), the default port in use (logged, the daemon serves).

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "integration/itest.h"
#include "support/dnsmasq.h"
#include "support/fake_consul.h"

namespace turnpike::itest {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

constexpr char kRoutes[] = R"(
routes:
  - id: 1
    uris: [/hello]
    hosts: [Example.COM]
    upstream:
      nodes:
        "127.0.0.1:{A}": 1
      type: roundrobin
      checks:
        active:
          http_path: /status
  - id: via-service
    uri: /svc
    service_id: s1
  - id: broken
    uri: /broken
    plugins:
      no-such-plugin: {}
    upstream_id: u1
services:
  - id: s1
    desc: a service
    plugins:
      proxy-rewrite: {uri: /hello}
    upstream_id: u1
upstreams:
  - id: u1
    nodes:
      - {host: 127.0.0.1, port: {A}, weight: 1}
#END
)";

// The mtime of `path` in seconds: APISIX's modifiedIndex of a standalone file's items.
int64_t MtimeOf(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return st.st_mtim.tv_sec;
}

Json JsonBody(const HttpResponse& r) {
  EXPECT_EQ(r.Header("Content-Type").value_or(""), "application/json") << r.DebugString();
  EXPECT_TRUE(!r.body.empty() && r.body.back() == '\n') << "APISIX ends JSON with a newline";
  Json j = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r.DebugString();
  return j;
}

class ControlApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "A"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override { ASSERT_NE(backend_, nullptr); }

  static std::string Routes(const char* yaml = kRoutes) {
    return Fill(yaml, {{"A", std::to_string(backend_->port())}});
  }

  // Starts the gateway with the control API on a free port and waits for it.
  void Start(const std::string& routes, TurnpikeOptions options = {}) {
    control_port_ = FreePort();
    ASSERT_NE(control_port_, 0);
    options.control_port = control_port_;
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
    ASSERT_TRUE(WaitForPort(control_port_, seconds(5))) << "control port not listening";
    ASSERT_TRUE(PollUntil([&] { return Control("/v1/routes").body != "{}\n"; }, seconds(10)))
        << "the first config never showed";
  }
  HttpResponse Control(std::string_view path) { return Get(control_port_, path); }

  static inline std::unique_ptr<Backend> backend_;
  Turnpike gw_{kTurnpikeBin};
  int control_port_ = 0;
};

TEST_F(ControlApiTest, RoutesServicesAndUpstreamsAsApisixShowsThem) {
  ASSERT_NO_FATAL_FAILURE(Start(Routes()));
  int64_t mtime = MtimeOf(gw_.routes_path());
  std::string a = std::to_string(backend_->port());

  Json routes = JsonBody(Control("/v1/routes"));
  ASSERT_TRUE(routes.is_array()) << routes;
  ASSERT_EQ(routes.size(), 2u) << "the route with an unknown plugin was skipped: " << routes;
  EXPECT_EQ(routes[0]["value"]["id"], "1");
  EXPECT_EQ(routes[1]["value"]["id"], "via-service");

  HttpResponse one = Control("/v1/route/1");
  ASSERT_EQ(one.status, 200) << one.DebugString();
  Json route = JsonBody(one);
  EXPECT_EQ(route["key"], "/routes/1");
  EXPECT_EQ(route["modifiedIndex"], mtime);
  EXPECT_EQ(route["orig_modifiedIndex"], mtime);
  EXPECT_EQ(route["has_domain"], false);
  const Json& v = route["value"];
  EXPECT_EQ(v["uris"], Json::parse(R"(["/hello"])"));
  EXPECT_EQ(v["hosts"], Json::parse(R"(["example.com"])"));
  EXPECT_EQ(v["priority"], 0);
  EXPECT_EQ(v["status"], 1);
  const Json& up = v["upstream"];
  EXPECT_EQ(up["nodes"], Json::parse(R"([{"host":"127.0.0.1","port":)" + a + R"(,"weight":1}])"));
  EXPECT_EQ(up["type"], "roundrobin");
  EXPECT_EQ(up["hash_on"], "vars");
  EXPECT_EQ(up["pass_host"], "pass");
  EXPECT_EQ(up["scheme"], "http");
  EXPECT_EQ(up["resource_key"], "/routes/1");
  EXPECT_EQ(up["resource_version"], mtime);
  EXPECT_EQ(up["resource_id"], "1");
  EXPECT_EQ(up["checks"]["active"]["http_path"], "/status");
  EXPECT_EQ(up["checks"]["active"]["type"], "http");
  EXPECT_EQ(up["checks"]["active"]["concurrency"], 10);

  Json service = JsonBody(Control("/v1/service/s1"));
  EXPECT_EQ(service["key"], "/services/s1");
  EXPECT_EQ(service["modifiedIndex"], mtime);
  EXPECT_EQ(service["value"]["desc"], "a service");
  EXPECT_EQ(service["value"]["upstream_id"], "u1");
  EXPECT_EQ(service["value"]["plugins"]["proxy-rewrite"],
            Json::parse(R"({"uri":"/hello","_meta":{}})"));
  EXPECT_EQ(JsonBody(Control("/v1/services")).size(), 1u);

  Json upstream = JsonBody(Control("/v1/upstream/u1"));
  EXPECT_EQ(upstream["key"], "/upstreams/u1");
  EXPECT_EQ(upstream["value"]["nodes"],
            Json::parse(R"([{"host":"127.0.0.1","port":)" + a + R"(,"weight":1,"priority":0}])"));
  EXPECT_EQ(upstream["value"]["resource_key"], "/upstreams/u1");
  EXPECT_EQ(JsonBody(Control("/v1/upstreams")).size(), 1u);

  // 404s as v1.lua words them; the skipped route is not there.
  HttpResponse missing = Control("/v1/route/broken");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "{\"error_msg\":\"route[broken] not found\"}\n");
  EXPECT_EQ(Control("/v1/upstream/nope").body, "{\"error_msg\":\"upstream[nope] not found\"}\n");
  EXPECT_EQ(Control("/v1/service/nope").body, "{\"error_msg\":\"service[nope] not found\"}\n");
  HttpResponse unknown = Control("/v1/nothing?x=1");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, "{\"error_msg\":\"404 Not Found\"}\n");

  // Health checks: the checked route, without nodes while no checker runs.
  EXPECT_EQ(JsonBody(Control("/v1/healthcheck")),
            Json::parse(R"([{"name":"/routes/1","type":"http"}])"));
  EXPECT_EQ(Control("/v1/healthcheck/upstreams/u1").body,
            "{\"error_msg\":\"no checker for upstreams[u1]\"}\n");
  EXPECT_EQ(Control("/v1/healthcheck/route/1").status, 400);
  // Once a request used the route, its checker runs and its targets show (get_target_list).
  EXPECT_EQ(Get(gw_.port(), "/hello", {{"Host", "example.com"}}).status, 200);
  Json nodes;
  ASSERT_TRUE(PollUntil(
      [&] {
        nodes = JsonBody(Control("/v1/healthcheck/routes/1"))["nodes"];
        return nodes.is_array() && !nodes.empty();
      },
      seconds(10)))
      << Control("/v1/healthcheck/routes/1").body;
  EXPECT_EQ(nodes[0]["ip"], "127.0.0.1");
  EXPECT_EQ(nodes[0]["port"], backend_->port());
  EXPECT_TRUE(nodes[0]["counter"].contains("success")) << nodes;
  EXPECT_EQ(JsonBody(Control("/v1/healthcheck"))[0]["nodes"], nodes);

  // The control API is not on the proxy port, and the proxy still serves.
  EXPECT_EQ(Get(gw_.port(), "/v1/routes").body, kNotFoundBody);
  EXPECT_EQ(BackendOf(Get(gw_.port(), "/svc")), "A");
}

TEST_F(ControlApiTest, AReloadIsVisible) {
  ASSERT_NO_FATAL_FAILURE(Start(Routes()));
  int64_t first = JsonBody(Control("/v1/route/1"))["modifiedIndex"].get<int64_t>();
  // Another second, so the new file's mtime (the items' modifiedIndex) differs.
  ASSERT_TRUE(PollUntil([&] { return time(nullptr) > first; }, seconds(3)));
  std::string changed = Routes();
  changed.replace(changed.find("  - id: via-service"), 0,
                  "  - id: added\n    uri: /added\n    upstream_id: u1\n");
  changed.replace(changed.find("id: 1\n"), 5, "id: 2");
  ASSERT_TRUE(gw_.RewriteRoutes(changed));
  ASSERT_TRUE(PollUntil([&] { return Control("/v1/route/added").status == 200; }, seconds(10)))
      << Control("/v1/routes").body;
  EXPECT_EQ(Control("/v1/route/1").status, 404) << "renamed away";
  Json added = JsonBody(Control("/v1/route/added"));
  EXPECT_EQ(added["modifiedIndex"], MtimeOf(gw_.routes_path()));
  EXPECT_GT(added["modifiedIndex"].get<int64_t>(), first);
  Json list = JsonBody(Control("/v1/routes"));
  ASSERT_EQ(list.size(), 3u) << list;
  EXPECT_EQ(list[0]["value"]["id"], "2");
  EXPECT_EQ(list[1]["value"]["id"], "added");
  EXPECT_EQ(JsonBody(Control("/v1/healthcheck"))[0]["name"], "/routes/2");

  // PUT /v1/plugins/reload: APISIX answers `done`; here the config is read and built again.
  HttpRequest put;
  put.method = "PUT";
  put.target = "/v1/plugins/reload";
  HttpResponse done = Fetch(control_port_, put);
  EXPECT_EQ(done.status, 200) << done.DebugString();
  EXPECT_EQ(done.body, "done");
  ASSERT_TRUE(PollUntil(
      [&] { return gw_.Stderr().find("loaded (control API)") != std::string::npos; }, seconds(10)))
      << gw_.Stderr();
  EXPECT_EQ(Control("/v1/plugins/reload").status, 404) << "PUT only";
}

TEST_F(ControlApiTest, DnsDiscoveryDump) {
  if (!testing::DnsServer::Available()) GTEST_SKIP() << "dnsmasq is not installed";
  testing::DnsServer dns;
  ASSERT_TRUE(dns.Start("host-record=web.test,127.0.0.1\n")) << dns.error();
  TurnpikeOptions options;
  options.top_extra = "discovery:\n  dns:\n    servers: [\"" + dns.address() + "\"]\n";
  std::string routes = Routes(R"(
routes:
  - id: dns
    uri: /hello
    upstream: {discovery_type: dns, service_name: "web.test:{A}"}
#END
)");
  ASSERT_NO_FATAL_FAILURE(Start(routes, options));
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/hello").status == 200; }, seconds(10)));
  std::string name = "web.test:" + std::to_string(backend_->port());
  Json dump = JsonBody(Control("/v1/discovery/dns/dump"));
  EXPECT_EQ(dump["config"]["servers"], Json::array({dns.address()}));
  const Json& service = dump["services"][name];
  EXPECT_EQ(service["record_type"], "A") << dump;
  EXPECT_EQ(service["nodes"], Json::parse(R"([{"host":"127.0.0.1","weight":1,"port":)" +
                                          std::to_string(backend_->port()) + "}]"));
  EXPECT_EQ(Control("/v1/discovery/nacos/dump").status, 404) << "not configured";
  EXPECT_EQ(Control("/v1/discovery/dns/show_dump_file").status, 404) << "consul's only";
  Json route = JsonBody(Control("/v1/route/dns"));
  EXPECT_EQ(route["value"]["upstream"]["discovery_type"], "dns");
  EXPECT_FALSE(route["value"]["upstream"].contains("nodes"));
}

// Consul (against the fake agent of support/fake_consul.h): the provider's dump, and
// show_dump_file serving the file that discovery.consul.dump.path names.
TEST_F(ControlApiTest, ConsulDumpAndShowDumpFile) {
  testing::FakeConsul consul;
  ASSERT_TRUE(consul.Start());
  consul.Register(testing::FakeConsul::Make("web-a", "web", "127.0.0.1", backend_->port()));
  std::string dump_path =
      ::testing::TempDir() + "turnpike_control_consul_" + std::to_string(getpid()) + ".json";
  std::remove(dump_path.c_str());
  TurnpikeOptions options;
  options.top_extra = "discovery:\n  consul:\n    servers: [\"" + consul.url() +
                      "\"]\n    dump:\n      path: " + dump_path + "\n";
  std::string routes = R"(
routes:
  - id: web
    uri: /hello
    upstream: {discovery_type: consul, service_name: web}
#END
)";
  ASSERT_NO_FATAL_FAILURE(Start(routes, options));
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/hello").status == 200; }, seconds(10)));
  Json dump = JsonBody(Control("/v1/discovery/consul/dump"));
  ASSERT_TRUE(dump["services"]["web"].is_array()) << dump;
  ASSERT_EQ(dump["services"]["web"].size(), 1u) << dump;
  EXPECT_EQ(dump["services"]["web"][0]["host"], "127.0.0.1");
  EXPECT_EQ(dump["services"]["web"][0]["port"], backend_->port());
  EXPECT_TRUE(dump.contains("config"));
  // The file is written after a change settles (the provider's dump interval).
  HttpResponse file;
  ASSERT_TRUE(PollUntil(
      [&] {
        file = Control("/v1/discovery/consul/show_dump_file");
        return file.status == 200;
      },
      seconds(10)))
      << file.DebugString();
  EXPECT_EQ(file.Header("Content-Type").value_or(""), "text/plain");
  Json written = Json::parse(file.body, nullptr, false);
  ASSERT_FALSE(written.is_discarded()) << file.body;
  EXPECT_EQ(written["services"]["web"].size(), 1u) << file.body;
  std::remove(dump_path.c_str());
  HttpResponse gone = Control("/v1/discovery/consul/show_dump_file");
  EXPECT_EQ(gone.status, 503);
  EXPECT_NE(gone.body.find("No such file or directory"), std::string::npos) << gone.body;
}

// A listening socket on 127.0.0.1:`port` (0: any), or -1.
int Listen(int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 4) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound = ntohs(addr.sin_port);
  return fd;
}

TEST(ControlApiListenerTest, Disabled) {
  int port = FreePort();
  TurnpikeOptions options;
  options.control_port = -1;
  options.apisix_extra =
      "  enable_control: false\n  control:\n    port: " + std::to_string(port) + "\n";
  Turnpike gw(kTurnpikeBin);
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw, "routes: []\n#END\n", options));
  EXPECT_FALSE(WaitForPort(port, std::chrono::milliseconds(500))) << "nothing listens";
}

TEST(ControlApiListenerTest, APortConflictIsAConfigError) {
  int port = FreePort();
  TurnpikeOptions options;
  options.control_port = port;
  options.apisix_extra = "  status:\n    port: " + std::to_string(port) + "\n";
  Turnpike gw(kTurnpikeBin);
  EXPECT_FALSE(gw.Start("routes: []\n#END\n", options));
  EXPECT_NE(gw.Stderr().find("apisix.control.port: control port " + std::to_string(port) +
                             " conflicts with apisix.status"),
            std::string::npos)
      << gw.Stderr();
}

TEST(ControlApiListenerTest, AConfiguredPortInUseStopsTheDaemon) {
  int port = 0;
  int fd = Listen(0, &port);
  ASSERT_GE(fd, 0);
  TurnpikeOptions options;
  options.control_port = port;
  Turnpike gw(kTurnpikeBin);
  EXPECT_FALSE(gw.Start("routes: []\n#END\n", options));
  EXPECT_NE(gw.Stderr().find("apisix.control: "), std::string::npos) << gw.Stderr();
  close(fd);
}

TEST(ControlApiListenerTest, TheDefaultPortInUseIsLoggedAndTheDaemonServes) {
  // Hold 127.0.0.1:9090 (or find it held by someone else already).
  int port = 0;
  int fd = Listen(9090, &port);
  if (fd < 0 && !WaitForPort(9090, std::chrono::milliseconds(200))) {
    GTEST_SKIP() << "cannot hold port 9090";
  }
  TurnpikeOptions options;
  options.control_port = -1;  // the default 127.0.0.1:9090
  Turnpike gw(kTurnpikeBin);
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw, "routes: []\n#END\n", options));
  EXPECT_EQ(Get(gw.port(), "/x").body, kNotFoundBody) << "the proxy serves";
  ASSERT_TRUE(PollUntil(
      [&] { return gw.Stderr().find("control API (default 127.0.0.1:9090)") != std::string::npos; },
      seconds(5)))
      << gw.Stderr();
  if (fd >= 0) close(fd);
}

}  // namespace
}  // namespace turnpike::itest
