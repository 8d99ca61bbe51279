// config.yaml: router, URI, trusted address, real IP, status and plugin settings.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;

class GatewayKeysTest : public ::testing::Test {
 protected:
  LoadResult<GatewayConfig> Parse(const std::string& text) {
    return ParseGatewayConfig(text, "conf/config.yaml", "conf", 4);
  }
  Lines Errors(const std::string& text) {
    LoadResult<GatewayConfig> r = Parse(text);
    EXPECT_FALSE(r.value.has_value()) << text;
    return Strings(r.errors);
  }
  // Parses and expects success without errors or warnings.
  GatewayConfig Ok(const std::string& text) {
    LoadResult<GatewayConfig> r = Parse(text);
    EXPECT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
    EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
    return r.value.value_or(GatewayConfig{});
  }

  testing::ScopedEnv no_worker_env_{"APISIX_WORKER_PROCESSES", std::nullopt};
};

TEST_F(GatewayKeysTest, Defaults) {
  GatewayConfig c = Ok("");
  EXPECT_EQ(c.router_mode, RouterMode::kHostUri);
  EXPECT_FALSE(c.delete_uri_tail_slash);
  EXPECT_TRUE(c.trusted_addresses.empty());
  EXPECT_EQ(c.real_ip_header, "X-Real-IP");
  EXPECT_EQ(c.real_ip_from, (Lines{"127.0.0.1", "unix:"}));
  EXPECT_FALSE(c.real_ip_recursive);
  EXPECT_FALSE(c.status_listen.has_value());
  EXPECT_FALSE(c.plugins.has_value());
}

TEST_F(GatewayKeysTest, RouterMode) {
  EXPECT_EQ(Ok("apisix:\n  router:\n    http: radixtree_uri\n").router_mode, RouterMode::kUri);
  EXPECT_EQ(Ok("apisix:\n  router:\n    http: radixtree_uri_with_parameter\n").router_mode,
            RouterMode::kUriWithParameter);
  EXPECT_EQ(Ok("apisix:\n  router:\n    http: radixtree_host_uri\n    ssl: radixtree_sni\n")
                .router_mode,
            RouterMode::kHostUri);
  EXPECT_EQ(Ok("apisix:\n  router:\n").router_mode, RouterMode::kHostUri);
  EXPECT_EQ(Errors("apisix:\n  router:\n    http: radixtree_host\n    ssl: other\n"),
            (Lines{
                "conf/config.yaml:3:11: apisix.router.http: invalid value \"radixtree_host\": "
                "must be one of radixtree_host_uri, radixtree_uri, radixtree_uri_with_parameter",
                "conf/config.yaml:4:10: apisix.router.ssl: invalid value \"other\": must be one "
                "of radixtree_sni",
            }));
  EXPECT_EQ(Errors("apisix:\n  router: radixtree_uri\n"),
            (Lines{"conf/config.yaml:2:11: apisix.router: wrong type: expected map, got "
                   "string"}));
}

TEST_F(GatewayKeysTest, DeleteUriTailSlash) {
  EXPECT_TRUE(Ok("apisix:\n  delete_uri_tail_slash: true\n").delete_uri_tail_slash);
  EXPECT_EQ(Errors("apisix:\n  delete_uri_tail_slash: 1\n"),
            (Lines{"conf/config.yaml:2:26: apisix.delete_uri_tail_slash: wrong type: expected "
                   "boolean, got integer"}));
}

TEST_F(GatewayKeysTest, TrustedAddresses) {
  GatewayConfig c = Ok(R"(apisix:
  trusted_addresses:
    - 127.0.0.1
    - 172.18.0.0/16
    - 0.0.0.0/0
    - "::1"
    - 2001:db8::/32
    - fe80::1/128
)");
  EXPECT_EQ(c.trusted_addresses,
            (Lines{"127.0.0.1", "172.18.0.0/16", "0.0.0.0/0", "::1", "2001:db8::/32",
                   "fe80::1/128"}));
  EXPECT_EQ(Errors(R"(apisix:
  trusted_addresses:
    - 10.0.0.256
    - 10.0.0.0/33
    - 10.0.0.0/
    - 10.0.0.0/08
    - ::1/129
    - localhost
    - 10.0.0.1
    - 10.0.0.1
    - 5
)"),
            (Lines{
                "conf/config.yaml:3:7: apisix.trusted_addresses[0]: invalid IP address or CIDR "
                "\"10.0.0.256\"",
                "conf/config.yaml:4:7: apisix.trusted_addresses[1]: invalid IP address or CIDR "
                "\"10.0.0.0/33\"",
                "conf/config.yaml:5:7: apisix.trusted_addresses[2]: invalid IP address or CIDR "
                "\"10.0.0.0/\"",
                "conf/config.yaml:6:7: apisix.trusted_addresses[3]: invalid IP address or CIDR "
                "\"10.0.0.0/08\"",
                "conf/config.yaml:7:7: apisix.trusted_addresses[4]: invalid IP address or CIDR "
                "\"::1/129\"",
                "conf/config.yaml:8:7: apisix.trusted_addresses[5]: invalid IP address or CIDR "
                "\"localhost\"",
                "conf/config.yaml:10:7: apisix.trusted_addresses[7]: duplicate item \"10.0.0.1\"",
                "conf/config.yaml:11:7: apisix.trusted_addresses[8]: wrong type: expected "
                "string, got integer",
            }));
  EXPECT_EQ(Errors("apisix:\n  trusted_addresses: []\n"),
            (Lines{"conf/config.yaml:2:22: apisix.trusted_addresses: must not be empty"}));
  EXPECT_EQ(Errors("apisix:\n  trusted_addresses: 10.0.0.1\n"),
            (Lines{"conf/config.yaml:2:22: apisix.trusted_addresses: wrong type: expected list, "
                   "got string"}));
}

TEST_F(GatewayKeysTest, RealIp) {
  GatewayConfig c = Ok(R"(nginx_config:
  http:
    real_ip_header: X-Forwarded-For
    real_ip_recursive: "on"
    real_ip_from:
      - 10.0.0.0/8
      - "::1"
      - "unix:"
)");
  EXPECT_EQ(c.real_ip_header, "X-Forwarded-For");
  EXPECT_TRUE(c.real_ip_recursive);
  EXPECT_EQ(c.real_ip_from, (Lines{"10.0.0.0/8", "::1", "unix:"}));
  // Unquoted on/off are YAML booleans; both forms work. An empty list trusts no one.
  GatewayConfig c2 = Ok(
      "nginx_config:\n  http:\n    real_ip_recursive: off\n    real_ip_header: proxy_protocol\n"
      "    real_ip_from: []\n");
  EXPECT_FALSE(c2.real_ip_recursive);
  EXPECT_EQ(c2.real_ip_header, "proxy_protocol");
  EXPECT_TRUE(c2.real_ip_from.empty());

  EXPECT_EQ(Errors(R"(nginx_config:
  http:
    real_ip_header: "X Real IP"
    real_ip_recursive: maybe
    real_ip_from:
      - unix
      - 10.0.0.0/40
      - 1
)"),
            (Lines{
                "conf/config.yaml:3:21: nginx_config.http.real_ip_header: invalid header name "
                "\"X Real IP\"",
                "conf/config.yaml:4:24: nginx_config.http.real_ip_recursive: invalid value "
                "\"maybe\": must be one of on, off",
                "conf/config.yaml:6:9: nginx_config.http.real_ip_from[0]: invalid address "
                "\"unix\": expected an IP address, a CIDR or \"unix:\"",
                "conf/config.yaml:7:9: nginx_config.http.real_ip_from[1]: invalid address "
                "\"10.0.0.0/40\": expected an IP address, a CIDR or \"unix:\"",
                "conf/config.yaml:8:9: nginx_config.http.real_ip_from[2]: wrong type: expected "
                "string, got integer",
            }));
  EXPECT_EQ(Errors("nginx_config:\n  http:\n    real_ip_header: \"\"\n"),
            (Lines{"conf/config.yaml:3:21: nginx_config.http.real_ip_header: invalid header "
                   "name \"\""}));
}

TEST_F(GatewayKeysTest, StatusListener) {
  GatewayConfig defaults = Ok("apisix:\n  status: {}\n");
  ASSERT_TRUE(defaults.status_listen.has_value());
  EXPECT_EQ(defaults.status_listen->ip, "127.0.0.1");
  EXPECT_EQ(defaults.status_listen->port, 7085);

  GatewayConfig set = Ok("apisix:\n  status:\n    ip: \"[::1]\"\n    port: 9091\n");
  ASSERT_TRUE(set.status_listen.has_value());
  EXPECT_EQ(set.status_listen->ip, "::1");
  EXPECT_EQ(set.status_listen->port, 9091);

  // `status:` with everything commented out is not set (null keeps the default: off).
  EXPECT_FALSE(Ok("apisix:\n  status:\n  #  ip: 127.0.0.1\n").status_listen.has_value());

  EXPECT_EQ(Errors("apisix:\n  status:\n    ip: localhost\n    port: 0\n"),
            (Lines{
                "conf/config.yaml:3:9: apisix.status.ip: invalid IP address \"localhost\"",
                "conf/config.yaml:4:11: apisix.status.port: must be between 1 and 65535",
            }));
  EXPECT_EQ(Errors("apisix:\n  node_listen: [9080, 9091]\n  status:\n    port: 9091\n"),
            (Lines{"conf/config.yaml:4:11: apisix.status.port: status port 9091 conflicts with "
                   "apisix.node_listen"}));
  EXPECT_EQ(Errors("apisix:\n  node_listen: 7085\n  status: {}\n"),
            (Lines{"conf/config.yaml:3:11: apisix.status: status port 7085 conflicts with "
                   "apisix.node_listen"}));
  auto warn = Parse("apisix:\n  status:\n    bogus: 1\n");
  EXPECT_EQ(Strings(warn.warnings),
            (Lines{"conf/config.yaml:3:5: apisix.status.bogus: unknown key, ignored"}));
}

TEST_F(GatewayKeysTest, ControlListener) {
  // On by default, on 127.0.0.1:9090, as APISIX.
  GatewayConfig defaults = Ok("");
  ASSERT_TRUE(defaults.control_listen.has_value());
  EXPECT_EQ(defaults.control_listen->ip, "127.0.0.1");
  EXPECT_EQ(defaults.control_listen->port, 9090);
  EXPECT_FALSE(defaults.control_configured);

  GatewayConfig set = Ok("apisix:\n  control:\n    ip: \"[::1]\"\n    port: 19090\n");
  ASSERT_TRUE(set.control_listen.has_value());
  EXPECT_EQ(set.control_listen->ip, "::1");
  EXPECT_EQ(set.control_listen->port, 19090);
  EXPECT_TRUE(set.control_configured);
  EXPECT_TRUE(Ok("apisix:\n  control:\n    router: radixtree_uri_with_parameter\n")
                  .control_listen.has_value());

  EXPECT_FALSE(Ok("apisix:\n  enable_control: false\n").control_listen.has_value());
  EXPECT_FALSE(Ok("apisix:\n  enable_control: false\n  control:\n    port: 9080\n")
                   .control_listen.has_value())
      << "a disabled control API conflicts with nothing";

  EXPECT_EQ(Errors("apisix:\n  enable_control: 1\n  control:\n    ip: localhost\n    port: 0\n"
                   "    router: other\n"),
            (Lines{
                "conf/config.yaml:2:19: apisix.enable_control: wrong type: expected boolean, got "
                "integer",
                "conf/config.yaml:4:9: apisix.control.ip: invalid IP address \"localhost\"",
                "conf/config.yaml:5:11: apisix.control.port: must be between 1 and 65535",
                "conf/config.yaml:6:13: apisix.control.router: invalid value \"other\": must be "
                "one of radixtree_uri, radixtree_uri_with_parameter",
            }));
}

// APISIX refuses a control port that is also a node_listen, status or prometheus export port
// (ports only). The error names the control port when config.yaml sets it, else the other.
TEST_F(GatewayKeysTest, ControlPortConflicts) {
  EXPECT_EQ(Errors("apisix:\n  node_listen: [9080, 9100]\n  control:\n    port: 9100\n"),
            (Lines{"conf/config.yaml:4:11: apisix.control.port: control port 9100 conflicts with "
                   "apisix.node_listen"}));
  EXPECT_EQ(Errors("apisix:\n  node_listen: 9090\n"),
            (Lines{"conf/config.yaml:2:16: apisix.node_listen: port 9090 conflicts with the "
                   "control port 9090 (the control API's default; set apisix.control.port or "
                   "apisix.enable_control: false)"}));
  EXPECT_EQ(Errors("apisix:\n  status:\n    port: 9090\n"),
            (Lines{"conf/config.yaml:3:11: apisix.status.port: status port 9090 conflicts with "
                   "the control port 9090 (the control API's default; set apisix.control.port "
                   "or apisix.enable_control: false)"}));
  EXPECT_EQ(Errors("apisix:\n  status: {port: 7000}\n  control: {port: 7000}\n"),
            (Lines{"conf/config.yaml:3:19: apisix.control.port: control port 7000 conflicts "
                   "with apisix.status"}));
  EXPECT_EQ(Errors("apisix:\n  status: {port: 9090}\n  control: {ip: 127.0.0.1}\n"),
            (Lines{"conf/config.yaml:3:12: apisix.control: control port 9090 conflicts with "
                   "apisix.status"}));
  EXPECT_EQ(Errors("apisix:\n  control:\n    port: 9091\n"),
            (Lines{"conf/config.yaml:3:11: apisix.control.port: control port 9091 conflicts with "
                   "plugin_attr.prometheus.export_addr.port"}));
  EXPECT_EQ(Errors("plugin_attr:\n  prometheus:\n    export_addr: {port: 9090}\n"),
            (Lines{"conf/config.yaml:2:3: plugin_attr.prometheus.export_addr.port: prometheus "
                   "port 9090 conflicts with the control port 9090 (the control API's default; "
                   "set apisix.control.port or apisix.enable_control: false)"}));
  // No exporter, no conflict: prometheus not enabled, or not exporting.
  Ok("apisix:\n  control:\n    port: 9091\nplugins: [limit-count]\n");
  Ok("apisix:\n  control:\n    port: 9091\nplugin_attr:\n  prometheus:\n"
     "    enable_export_server: false\n");
  // Different addresses do not help (APISIX compares ports).
  EXPECT_EQ(Errors("apisix:\n  node_listen: [{ip: 127.0.0.2, port: 9100}]\n"
                   "  control: {ip: 127.0.0.1, port: 9100}\n"),
            (Lines{"conf/config.yaml:3:34: apisix.control.port: control port 9100 conflicts "
                   "with apisix.node_listen"}));
}

TEST_F(GatewayKeysTest, PluginList) {
  GatewayConfig c = Ok(R"(apisix:
  node_listen: 9080
plugins:
  - limit-count
  - proxy-rewrite
  - prometheus
)");
  ASSERT_TRUE(c.plugins.has_value());
  EXPECT_EQ(*c.plugins, (Lines{"limit-count", "proxy-rewrite", "prometheus"}));
  EXPECT_EQ(c.plugins_loc.file, "conf/config.yaml");
  EXPECT_EQ(c.plugins_loc.line, 3);
  EXPECT_EQ(c.plugins_loc.col, 1);

  GatewayConfig none = Ok("plugins: []\n");
  ASSERT_TRUE(none.plugins.has_value());
  EXPECT_TRUE(none.plugins->empty());
  EXPECT_FALSE(Ok("plugins:\n").plugins.has_value());  // null: the built-in default list

  auto dup = Parse("plugins:\n  - cors\n  - cors\n");
  ASSERT_TRUE(dup.value.has_value());
  EXPECT_EQ(*dup.value->plugins, (Lines{"cors"}));
  EXPECT_EQ(Strings(dup.warnings),
            (Lines{"conf/config.yaml:3:5: plugins[1]: duplicate plugin \"cors\", ignored"}));

  EXPECT_EQ(Errors("plugins:\n  - cors\n  - \"\"\n  - {name: x}\n"),
            (Lines{
                "conf/config.yaml:3:5: plugins[1]: must not be empty",
                "conf/config.yaml:4:5: plugins[2]: wrong type: expected string, got map",
            }));
  EXPECT_EQ(Errors("plugins: cors\n"),
            (Lines{"conf/config.yaml:1:10: plugins: wrong type: expected list, got string"}));
}

TEST_F(GatewayKeysTest, JsonConfigProvider) {
  GatewayConfig c = Ok(
      "deployment:\n  role: data_plane\n  role_data_plane:\n    config_provider: json\n");
  EXPECT_EQ(c.config_provider, "json");
  EXPECT_EQ(c.routes_file, "conf/apisix.json");
  GatewayConfig custom = Ok(
      "deployment:\n  role_data_plane:\n    config_provider: json\n"
      "turnpike:\n  routes_file: routes.json\n");
  EXPECT_EQ(custom.routes_file, "conf/routes.json");
  EXPECT_EQ(Ok("deployment:\n  role_data_plane:\n    config_provider: yaml\n").routes_file,
            "conf/apisix.yaml");
}

// Access log: APISIX's format and escaping by default; a custom format is compiled at load
// (nginx's log_format rules) and a bad one is an error at its line.
class LogVars final : public RequestVars {
 public:
  std::optional<std::string_view> Get(const VarRef& var) override {
    for (const auto& [name, value] : vars) {
      if (name == var.source) return std::string_view(value);
    }
    return std::nullopt;
  }
  std::vector<std::pair<std::string, std::string>> vars;
};

TEST_F(GatewayKeysTest, AccessLogFormat) {
  GatewayConfig d = Ok("");
  EXPECT_EQ(d.access_log_format, kDefaultAccessLogFormat);
  EXPECT_EQ(d.access_log_format_escape, Template::Escape::kDefault);
  EXPECT_EQ(d.access_log_template.literal(), kDefaultAccessLogFormat);
  EXPECT_EQ(GatewayConfig{}.access_log_template.literal(), kDefaultAccessLogFormat);
  LogVars vars;
  vars.vars = {{"remote_addr", "10.0.0.1"}, {"request", "GET /a\"b HTTP/1.1"}, {"status", "200"}};
  std::string line;
  d.access_log_template.Render(vars, &line);
  EXPECT_EQ(line,
            "10.0.0.1 - - [-] - \"GET /a\\x22b HTTP/1.1\" 200 - - \"-\" \"-\" - - - \"-://--\"");

  GatewayConfig json = Ok(R"(nginx_config:
  http:
    access_log_format: '{"addr":"$remote_addr","req":"$request","ua":"$http_user_agent"}'
    access_log_format_escape: json
)");
  EXPECT_EQ(json.access_log_format_escape, Template::Escape::kJson);
  json.access_log_template.Render(vars, &line);
  EXPECT_EQ(line, "{\"addr\":\"10.0.0.1\",\"req\":\"GET /a\\\"b HTTP/1.1\",\"ua\":\"\"}");
  // The default format with another escaping.
  GatewayConfig none = Ok("nginx_config:\n  http:\n    access_log_format_escape: none\n");
  none.access_log_template.Render(vars, &line);
  EXPECT_EQ(line, "10.0.0.1 -  []  \"GET /a\"b HTTP/1.1\" 200   \"\" \"\"    \"://\"");

  EXPECT_EQ(Errors(R"(nginx_config:
  http:
    enable_access_log: false
    access_log_format: "$remote_addr $bytes $status"
    access_log_format_escape: yaml
)"),
            (Lines{
                "conf/config.yaml:5:31: nginx_config.http.access_log_format_escape: invalid "
                "value \"yaml\": must be one of default, json, none",
                "conf/config.yaml:4:24: nginx_config.http.access_log_format: unknown variable "
                "\"$bytes\" at offset 13",
            }));
  EXPECT_EQ(Errors("nginx_config:\n  http:\n    access_log_format: \"[${time_local\"\n"),
            (Lines{"conf/config.yaml:3:24: nginx_config.http.access_log_format: \"${time_local\" "
                   "at offset 1 has no closing \"}\""}));
  EXPECT_EQ(Errors("nginx_config:\n  http:\n    access_log_format: [a]\n"),
            (Lines{"conf/config.yaml:3:24: nginx_config.http.access_log_format: wrong type: "
                   "expected string, got list"}));
}

}  // namespace
}  // namespace turnpike::config
