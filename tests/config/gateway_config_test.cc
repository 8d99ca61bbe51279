// config.yaml parsing.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;

constexpr int kHardwareThreads = 6;

class GatewayConfigTest : public ::testing::Test {
 protected:
  LoadResult<GatewayConfig> Parse(const std::string& text) {
    return ParseGatewayConfig(text, "conf/config.yaml", "conf", kHardwareThreads);
  }

  // Rejects the config and returns its errors.
  Lines Errors(const std::string& text) {
    LoadResult<GatewayConfig> r = Parse(text);
    EXPECT_FALSE(r.value.has_value()) << text;
    return Strings(r.errors);
  }

  // Keeps tests independent of the environment the suite runs in.
  testing::ScopedEnv no_worker_env_{"APISIX_WORKER_PROCESSES", std::nullopt};
};

struct Addr {
  std::string ip;
  int port;
  bool operator==(const Addr&) const = default;
};

std::vector<Addr> Listen(const GatewayConfig& c) {
  std::vector<Addr> out;
  for (const ListenAddr& l : c.listen) out.push_back({l.ip, l.port});
  return out;
}

TEST_F(GatewayConfigTest, EmptyFileGivesDefaults) {
  for (const char* text : {"", "# comment only\n", "apisix:\nnginx_config:\n"}) {
    auto r = Parse(text);
    ASSERT_TRUE(r.value.has_value()) << text;
    EXPECT_TRUE(r.errors.empty());
    EXPECT_TRUE(r.warnings.empty());
    const GatewayConfig& c = *r.value;
    EXPECT_EQ(c.file, "conf/config.yaml");
    EXPECT_EQ(Listen(c), (std::vector<Addr>{{"0.0.0.0", 9080}}));
    EXPECT_TRUE(c.enable_ipv6);
    EXPECT_TRUE(c.enable_reuseport);
    EXPECT_TRUE(c.enable_server_tokens);
    EXPECT_FALSE(c.show_upstream_status_in_response_header);
    EXPECT_EQ(c.role, "traditional");
    EXPECT_EQ(c.config_provider, "");
    EXPECT_EQ(c.routes_file, "conf/apisix.yaml");
    EXPECT_EQ(c.worker_processes, kHardwareThreads);
    EXPECT_EQ(c.client_keepalive_timeout, 60);
    EXPECT_EQ(c.client_header_timeout, 60);
    EXPECT_EQ(c.client_body_timeout, 60);
    EXPECT_EQ(c.send_timeout, 10);
    EXPECT_EQ(c.worker_connections, 10620);
    EXPECT_EQ(c.client_max_body_size, 0u);
    EXPECT_EQ(c.upstream_keepalive.size, 320);
    EXPECT_EQ(c.error_log_level, "warn");
    EXPECT_FALSE(c.enable_access_log);
    EXPECT_EQ(c.access_log, "");
    EXPECT_EQ(c.drain_timeout, 10);
  }
}

TEST_F(GatewayConfigTest, FullDataPlaneConfig) {
  auto r = Parse(R"(apisix:
  node_listen: 9000
  enable_ipv6: false
  enable_reuseport: false
  enable_server_tokens: false
  show_upstream_status_in_response_header: true
deployment:
  role: data_plane
  role_data_plane:
    config_provider: yaml
nginx_config:
  worker_processes: 3
  error_log_level: info
  event:
    worker_connections: 512
  http:
    keepalive_timeout: 75s
    client_header_timeout: 500ms
    client_body_timeout: 7s
    send_timeout: 2m
    client_max_body_size: 8m
    enable_access_log: true
    access_log: logs/access.log
    upstream:
      keepalive: 64
      keepalive_requests: 100
      keepalive_timeout: 30
turnpike:
  routes_file: routes/apisix.yaml
  drain_timeout: 2.5
)");
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  const GatewayConfig& c = *r.value;
  EXPECT_EQ(Listen(c), (std::vector<Addr>{{"0.0.0.0", 9000}}));
  EXPECT_FALSE(c.enable_ipv6);
  EXPECT_FALSE(c.enable_reuseport);
  EXPECT_FALSE(c.enable_server_tokens);
  EXPECT_TRUE(c.show_upstream_status_in_response_header);
  EXPECT_EQ(c.role, "data_plane");
  EXPECT_EQ(c.config_provider, "yaml");
  EXPECT_EQ(c.worker_processes, 3);
  EXPECT_EQ(c.error_log_level, "info");
  EXPECT_EQ(c.client_keepalive_timeout, 75);
  EXPECT_EQ(c.client_header_timeout, 0.5);
  EXPECT_EQ(c.client_body_timeout, 7);
  EXPECT_EQ(c.send_timeout, 120);
  EXPECT_EQ(c.worker_connections, 512);
  EXPECT_EQ(c.client_max_body_size, 8u * 1024 * 1024);
  EXPECT_TRUE(c.enable_access_log);
  EXPECT_EQ(c.access_log, "logs/access.log");
  EXPECT_EQ(c.upstream_keepalive.size, 64);
  EXPECT_EQ(c.upstream_keepalive.requests, 100);
  EXPECT_EQ(c.upstream_keepalive.idle_timeout, 30);
  EXPECT_EQ(c.routes_file, "conf/routes/apisix.yaml");
  EXPECT_EQ(c.drain_timeout, 2.5);
}

// ------------------------------------------------------------------ node_listen

TEST_F(GatewayConfigTest, NodeListenForms) {
  auto list_of_ints = Parse("apisix:\n  node_listen: [9080, 9081]\n");
  EXPECT_EQ(Listen(*list_of_ints.value), (std::vector<Addr>{{"0.0.0.0", 9080}, {"0.0.0.0", 9081}}));

  auto list_of_maps = Parse(R"(apisix:
  node_listen:
    - ip: 127.0.0.1
      port: 9000
    - port: 9001
    - ip: "[::1]"
    - ip: "::"
      port: 9002
    - 9003
)");
  ASSERT_TRUE(list_of_maps.value.has_value())
      << ::testing::PrintToString(Strings(list_of_maps.errors));
  EXPECT_EQ(
      Listen(*list_of_maps.value),
      (std::vector<Addr>{
          {"127.0.0.1", 9000}, {"0.0.0.0", 9001}, {"::1", 9080}, {"::", 9002}, {"0.0.0.0", 9003}}));
}

TEST_F(GatewayConfigTest, NodeListenErrors) {
  EXPECT_EQ(Errors("apisix:\n  node_listen: 0\n"),
            (Lines{"conf/config.yaml:2:16: apisix.node_listen: must be between 1 and 65535"}));
  EXPECT_EQ(Errors("apisix:\n  node_listen: \"9080\"\n"),
            (Lines{"conf/config.yaml:2:16: apisix.node_listen: wrong type: expected integer or "
                   "list, got string"}));
  EXPECT_EQ(Errors("apisix:\n  node_listen: []\n"),
            (Lines{"conf/config.yaml:2:16: apisix.node_listen: must not be empty"}));
  EXPECT_EQ(Errors(R"(apisix:
  node_listen:
    - port: 9080
      enable_http2: true
    - ip: localhost
    - port: 70000
    - [1]
    - 9080
)"),
            (Lines{
                "conf/config.yaml:4:7: apisix.node_listen[0].enable_http2: per-listener "
                "enable_http2 is no longer supported (removed in APISIX 3.9); use "
                "apisix.enable_http2",
                "conf/config.yaml:5:11: apisix.node_listen[1].ip: invalid IP address "
                "\"localhost\"",
                "conf/config.yaml:6:13: apisix.node_listen[2].port: must be between 1 and 65535",
                "conf/config.yaml:7:7: apisix.node_listen[3]: wrong type: expected integer or "
                "map, got list",
            }));
  EXPECT_EQ(Errors("apisix:\n  node_listen: [9080, {port: 9080}]\n"),
            (Lines{"conf/config.yaml:2:23: apisix.node_listen[1]: duplicate listener 0.0.0.0 "
                   "port 9080"}));
}

// ------------------------------------------------------------------ deployment

TEST_F(GatewayConfigTest, DeploymentRoleAndProvider) {
  auto standalone = Parse("deployment:\n  role: standalone\n");
  ASSERT_TRUE(standalone.value.has_value());
  EXPECT_EQ(standalone.value->role, "standalone");

  EXPECT_EQ(Errors("deployment:\n  role: edge\n"),
            (Lines{"conf/config.yaml:2:9: deployment.role: invalid value \"edge\": must be one "
                   "of traditional, control_plane, data_plane, standalone"}));
  EXPECT_EQ(Errors("deployment:\n  role: data_plane\n"),
            (Lines{"conf/config.yaml:2:9: deployment.role_data_plane.config_provider: required "
                   "when deployment.role is data_plane (yaml or json)"}));
  EXPECT_EQ(Errors("deployment:\n  role: data_plane\n  role_data_plane:\n    config_provider: "
                   "etcd\n"),
            (Lines{"conf/config.yaml:4:22: deployment.role_data_plane.config_provider: "
                   "config_provider \"etcd\" is not supported yet (only yaml and json)"}));
  EXPECT_EQ(Errors("deployment:\n  role_data_plane:\n    config_provider: xds\n").size(), 1u);
  EXPECT_EQ(Errors("deployment:\n  role_data_plane:\n    config_provider: file\n").size(), 1u);
}

// ------------------------------------------------------------------ worker_processes

TEST_F(GatewayConfigTest, WorkerProcesses) {
  EXPECT_EQ(Parse("nginx_config:\n  worker_processes: auto\n").value->worker_processes,
            kHardwareThreads);
  EXPECT_EQ(Parse("nginx_config:\n  worker_processes: 2\n").value->worker_processes, 2);
  EXPECT_EQ(Parse("nginx_config:\n  worker_processes: \"4\"\n").value->worker_processes, 4);

  auto garbage = Parse("nginx_config:\n  worker_processes: lots\n");
  ASSERT_TRUE(garbage.value.has_value());
  EXPECT_EQ(garbage.value->worker_processes, kHardwareThreads);
  EXPECT_EQ(Strings(garbage.warnings),
            (Lines{"conf/config.yaml:2:21: nginx_config.worker_processes: not a number, treated "
                   "as auto"}));

  EXPECT_EQ(Errors("nginx_config:\n  worker_processes: 0\n"),
            (Lines{"conf/config.yaml:2:21: nginx_config.worker_processes: must be between 1 and "
                   "2147483647"}));
  EXPECT_EQ(Errors("nginx_config:\n  worker_processes: 1.5\n"),
            (Lines{"conf/config.yaml:2:21: nginx_config.worker_processes: must be a positive "
                   "integer or auto"}));

  // hardware_threads below 1 still yields one worker.
  EXPECT_EQ(ParseGatewayConfig("", "c.yaml", "", 0).value->worker_processes, 1);
}

TEST_F(GatewayConfigTest, WorkerProcessesEnvOverrides) {
  {
    testing::ScopedEnv env("APISIX_WORKER_PROCESSES", "3");
    EXPECT_EQ(Parse("nginx_config:\n  worker_processes: 8\n").value->worker_processes, 3);
  }
  {
    testing::ScopedEnv env("APISIX_WORKER_PROCESSES", "auto");
    EXPECT_EQ(Parse("nginx_config:\n  worker_processes: 8\n").value->worker_processes,
              kHardwareThreads);
  }
  {
    testing::ScopedEnv env("APISIX_WORKER_PROCESSES", "0");
    EXPECT_EQ(Errors(""), (Lines{"conf/config.yaml: environment variable "
                                 "APISIX_WORKER_PROCESSES=\"0\" must be a positive integer or "
                                 "auto"}));
  }
}

// ------------------------------------------------------------------ durations and sizes

TEST_F(GatewayConfigTest, DurationsAndSizes) {
  auto r = Parse(R"(nginx_config:
  http:
    keepalive_timeout: 0
    send_timeout: 1h
    client_header_timeout: "15s"
    client_max_body_size: 1g
)");
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_EQ(r.value->client_keepalive_timeout, 0);
  EXPECT_EQ(r.value->send_timeout, 3600);
  EXPECT_EQ(r.value->client_header_timeout, 15);
  EXPECT_EQ(r.value->client_max_body_size, 1024ull * 1024 * 1024);
  EXPECT_EQ(
      Parse("nginx_config:\n  http:\n    client_max_body_size: 1024\n").value->client_max_body_size,
      1024u);
  EXPECT_EQ(
      Parse("nginx_config:\n  http:\n    client_max_body_size: 512k\n").value->client_max_body_size,
      512u * 1024);

  EXPECT_EQ(Errors(R"(nginx_config:
  http:
    keepalive_timeout: soon
    send_timeout: -1
    client_header_timeout: [1]
    client_max_body_size: 8x
    upstream:
      keepalive: 0
      keepalive_timeout: 1w
)"),
            (Lines{
                "conf/config.yaml:3:24: nginx_config.http.keepalive_timeout: invalid duration "
                "\"soon\": expected e.g. 60, 60s, 500ms, 2m, 1h",
                "conf/config.yaml:4:19: nginx_config.http.send_timeout: must be >= 0",
                "conf/config.yaml:5:28: nginx_config.http.client_header_timeout: wrong type: "
                "expected duration, got list",
                "conf/config.yaml:6:27: nginx_config.http.client_max_body_size: invalid size "
                "\"8x\": expected e.g. 1024, 8k, 10m, 1g",
                "conf/config.yaml:8:18: nginx_config.http.upstream.keepalive: must be between 1 "
                "and 2147483647",
                "conf/config.yaml:9:26: nginx_config.http.upstream.keepalive_timeout: invalid "
                "duration \"1w\": expected e.g. 60, 60s, 500ms, 2m, 1h",
            }));
}

// ------------------------------------------------------------------ other keys

TEST_F(GatewayConfigTest, WrongTypesAreErrors) {
  EXPECT_EQ(Errors(R"(apisix:
  enable_ipv6: "false"
nginx_config:
  error_log_level: verbose
  http: 5
turnpike:
  routes_file: ""
)"),
            (Lines{
                "conf/config.yaml:2:16: apisix.enable_ipv6: wrong type: expected boolean, got "
                "string",
                "conf/config.yaml:4:20: nginx_config.error_log_level: invalid value \"verbose\": "
                "must be one of debug, info, notice, warn, error, crit, alert, emerg",
                "conf/config.yaml:5:9: nginx_config.http: wrong type: expected map, got integer",
                "conf/config.yaml:7:16: turnpike.routes_file: must not be empty",
            }));
  EXPECT_EQ(Errors("- apisix\n"),
            (Lines{"conf/config.yaml:1:1: top level must be a map, got list"}));
  EXPECT_EQ(Errors("apisix: [\n").size(), 1u);
}

TEST_F(GatewayConfigTest, UnknownKeysAreWarnings) {
  auto r = Parse(R"(apisix:
  node_listen: 9080
  enable_admin: false
  ssl:
    enable: true
nginx_config:
  event:
    worker_connections: 10620
    multi_accept: true
  http:
    real_ip_headr: X-Real-IP
stream_plugins:
  - limit-conn
plugin_attr:
  prometheus: {}
turnpike:
  routs_file: x
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(Strings(r.warnings),
            (Lines{
                "conf/config.yaml:3:3: apisix.enable_admin: unknown key, ignored",
                "conf/config.yaml:4:3: apisix.ssl: unknown key, ignored",
                "conf/config.yaml:9:5: nginx_config.event.multi_accept: unknown key, ignored",
                "conf/config.yaml:11:5: nginx_config.http.real_ip_headr: unknown key, ignored",
                "conf/config.yaml:12:1: stream_plugins: unknown key, ignored",
                "conf/config.yaml:17:3: turnpike.routs_file: unknown key, ignored",
            }));
}

TEST_F(GatewayConfigTest, NullValuesKeepDefaults) {
  auto r = Parse("apisix:\n  node_listen:\nnginx_config:\n  http:\n    access_log:\n");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(Listen(*r.value), (std::vector<Addr>{{"0.0.0.0", 9080}}));
  EXPECT_TRUE(r.errors.empty());
}

TEST_F(GatewayConfigTest, RoutesFileResolution) {
  auto abs = Parse("turnpike:\n  routes_file: /etc/turnpike/routes.yaml\n");
  EXPECT_EQ(abs.value->routes_file, "/etc/turnpike/routes.yaml");
  EXPECT_EQ(ParseGatewayConfig("", "config.yaml", "", 1).value->routes_file, "apisix.yaml");
  EXPECT_EQ(ParseGatewayConfig("", "c", "/etc/tp/", 1).value->routes_file, "/etc/tp/apisix.yaml");
}

TEST_F(GatewayConfigTest, EnvSubstitution) {
  testing::ScopedEnv port("TP_CFG_TEST_PORT", "9100");
  testing::ScopedEnv unset("TP_CFG_TEST_UNSET", std::nullopt);
  auto r = Parse(R"(apisix:
  node_listen:
    - port: ${{TP_CFG_TEST_PORT}}
    - port: ${{ TP_CFG_TEST_UNSET := 9200 }}
deployment:
  role: ${{TP_CFG_TEST_UNSET:=data_plane}}
  role_data_plane:
    config_provider: yaml
)");
  ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_EQ(Listen(*r.value), (std::vector<Addr>{{"0.0.0.0", 9100}, {"0.0.0.0", 9200}}));
  EXPECT_EQ(r.value->role, "data_plane");

  // Quoting decides the type: a quoted substitution is a string.
  EXPECT_EQ(Errors("apisix:\n  node_listen: \"${{TP_CFG_TEST_PORT}}\"\n").size(), 1u);
  EXPECT_EQ(Errors("apisix:\n  node_listen: ${{TP_CFG_TEST_UNSET}}\n"),
            (Lines{"conf/config.yaml:2:16: environment variable `TP_CFG_TEST_UNSET` is not set "
                   "and has no default (use ${{TP_CFG_TEST_UNSET:=value}})"}));
}

TEST_F(GatewayConfigTest, ClientBodyBufferSize) {
  EXPECT_EQ(Parse("apisix: {}\n").value->client_body_buffer_size, 16u * 1024);  // nginx's default
  EXPECT_EQ(Parse("nginx_config:\n  http:\n    client_body_buffer_size: 64k\n")
                .value->client_body_buffer_size,
            64u * 1024);
  EXPECT_EQ(Parse("nginx_config:\n  http:\n    client_body_buffer_size: 0\n")
                .value->client_body_buffer_size,
            0u);
  EXPECT_EQ(Errors("nginx_config:\n  http:\n    client_body_buffer_size: 2g\n"),
            (Lines{"conf/config.yaml:3:30: nginx_config.http.client_body_buffer_size: must be at "
                   "most 1g"}));
  EXPECT_EQ(Errors("nginx_config:\n  http:\n    client_body_buffer_size: lots\n"),
            (Lines{"conf/config.yaml:3:30: nginx_config.http.client_body_buffer_size: invalid "
                   "size \"lots\": expected e.g. 1024, 8k, 10m, 1g"}));
}

TEST_F(GatewayConfigTest, DiscoverySectionsAreMapsOrLists) {
  // kubernetes' multi-cluster form is a list; each provider's factory validates its section.
  auto r = Parse(
      "discovery:\n  dns:\n    servers: [\"127.0.0.1\"]\n  kubernetes:\n    - id: a\n"
      "  consul:\n");
  ASSERT_TRUE(r.value.has_value()) << Strings(r.errors)[0];
  ASSERT_EQ(r.value->discovery.size(), 3u);
  EXPECT_EQ(r.value->discovery[0].second, nlohmann::json::parse(R"({"servers":["127.0.0.1"]})"));
  EXPECT_EQ(r.value->discovery[1].second, nlohmann::json::parse(R"([{"id":"a"}])"));
  EXPECT_EQ(r.value->discovery[2].second, nlohmann::json::object());
  auto bad = Parse("discovery:\n  dns: 1\n");
  EXPECT_FALSE(bad.value.has_value());
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(Strings(bad.errors)[0].find("discovery.dns: wrong type: expected map"),
            std::string::npos)
      << Strings(bad.errors)[0];
}

}  // namespace
}  // namespace turnpike::config
