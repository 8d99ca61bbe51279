// Typed, validated configuration: what config/ produces from config.yaml and apisix.yaml.
//
// Plain structs with no runtime objects. Built on the control thread, then read-only.
// Every item remembers where it came from so later stages can report precise errors.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "turnpike/status.h"
#include "turnpike/template.h"

namespace turnpike::config {

// A position in a source file (1-based line and column; 0 when unknown).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
};

// One problem found while loading: printed as `file:line:col: yaml.path: message`.
struct ConfigError {
  SourceLoc loc;
  std::string path;  // YAML path, e.g. "routes[3].upstream.nodes"
  std::string message;
  std::string ToString() const;
};

// ---------------------------------------------------------------- config.yaml

struct ListenAddr {
  std::string ip = "0.0.0.0";
  int port = 9080;
};

struct KeepalivePool {
  int size = 320;            // idle connections kept per upstream node, per worker
  double idle_timeout = 60;  // seconds
  int requests = 1000;       // requests per connection before it is closed
};

enum class RouterMode {
  kHostUri,           // radixtree_host_uri (default)
  kUri,               // radixtree_uri
  kUriWithParameter,  // radixtree_uri_with_parameter
};

// APISIX's nginx_config.http.access_log_format (conf/config-default.yaml).
inline constexpr std::string_view kDefaultAccessLogFormat =
    "$remote_addr - $remote_user [$time_local] $http_host \"$request\" $status $body_bytes_sent "
    "$request_time \"$http_referer\" \"$http_user_agent\" $upstream_addr $upstream_status "
    "$upstream_response_time \"$upstream_scheme://$upstream_host$upstream_uri\"";

// An access log format compiled as nginx compiles a log_format: nginx's syntax over the request
// variables (an unknown one is an error), values escaped as `escape` says, a missing value
// "-" with the default escaping and "" with json or none.
StatusOr<Template> CompileAccessLogFormat(std::string_view format, Template::Escape escape);

struct GatewayConfig {
  std::string file;                                 // path of config.yaml as given
  std::vector<ListenAddr> listen = {ListenAddr{}};  // apisix.node_listen
  bool enable_ipv6 = true;                          // apisix.enable_ipv6 (also listen on [::])
  bool enable_reuseport = true;                     // apisix.enable_reuseport
  bool enable_server_tokens = true;                 // apisix.enable_server_tokens
  bool show_upstream_status_in_response_header = false;
  std::string role = "traditional";      // deployment.role
  std::string config_provider;           // deployment.role_data_plane.config_provider
  std::string routes_file;               // resolved path of apisix.yaml (see loader.h)
  int worker_processes = 0;              // resolved: `auto` -> hardware threads, >= 1
  double client_keepalive_timeout = 60;  // nginx_config.http.keepalive_timeout (s)
  double client_header_timeout = 60;     // nginx_config.http.client_header_timeout (s)
  double client_body_timeout = 60;       // nginx_config.http.client_body_timeout (s)
  double send_timeout = 10;              // nginx_config.http.send_timeout (s)
  // nginx_config.event.worker_connections: client connections one worker serves at once;
  // past it a new connection is accepted and closed at once (counted in
  // WorkerStats::refused).
  int worker_connections = 10620;
  uint64_t client_max_body_size = 0;  // bytes; 0 = unlimited
  // nginx_config.http.client_body_buffer_size: the most of a request body read into memory
  // before routing, for post_arg_* variables (nginx's 16k default on 64-bit). A larger body
  // streams through and has no post_arg_* fields, as in APISIX when nginx spooled it to disk.
  uint64_t client_body_buffer_size = 16 * 1024;
  KeepalivePool upstream_keepalive;               // nginx_config.http.upstream.*
  std::string error_log_level = "warn";           // nginx_config.error_log_level
  std::string access_log;                         // nginx_config.http.access_log path; "" = off
  bool enable_access_log = false;                 // nginx_config.http.enable_access_log
  // nginx_config.http.access_log_format and access_log_format_escape (default, json, none),
  // and the line template compiled from both at load (CompileAccessLogFormat).
  std::string access_log_format = std::string(kDefaultAccessLogFormat);
  Template::Escape access_log_format_escape = Template::Escape::kDefault;
  Template access_log_template =
      CompileAccessLogFormat(kDefaultAccessLogFormat, Template::Escape::kDefault).value();
  double drain_timeout = 10;                      // turnpike.drain_timeout (s): graceful stop bound
  RouterMode router_mode = RouterMode::kHostUri;  // apisix.router.http
  bool delete_uri_tail_slash = false;             // apisix.delete_uri_tail_slash
  bool disable_upstream_healthcheck = false;      // apisix.disable_upstream_healthcheck
  std::vector<std::string> trusted_addresses;     // apisix.trusted_addresses (IPs / CIDRs)
  std::string real_ip_header = "X-Real-IP";       // nginx_config.http.real_ip_header
  std::vector<std::string> real_ip_from = {"127.0.0.1", "unix:"};  // ..http.real_ip_from
  bool real_ip_recursive = false;           // nginx_config.http.real_ip_recursive (on/off)
  std::optional<ListenAddr> status_listen;  // apisix.status.{ip,port}: /status endpoints
  // apisix.enable_control and apisix.control.{ip,port}: the control API (/v1/...), on
  // 127.0.0.1:9090 unless configured; nullopt when enable_control is false. Its port may not
  // be a node_listen, status or prometheus export port (APISIX compares ports only).
  std::optional<ListenAddr> control_listen = ListenAddr{"127.0.0.1", 9090};
  // apisix.control is in config.yaml: a port that cannot be bound stops the daemon. The
  // default one is only logged (a second daemon on the host must still serve).
  bool control_configured = false;
  // `plugins:` (top level): enabled plugin names. nullopt = Turnpike's built-in default list.
  std::optional<std::vector<std::string>> plugins;
  SourceLoc plugins_loc;
  // `plugin_attr:` static attributes per plugin name (each an object, converted to JSON; the
  // plugin validates it). Handed to factories and services (FactoryContext::attr).
  std::vector<std::pair<std::string, nlohmann::json>> plugin_attr;
  // `discovery:` (reference §5): one entry per configured provider, its section as JSON
  // (an empty object for `name:` alone). The provider's factory validates it when the
  // daemon starts; upstreams may only use a `discovery_type` configured here.
  std::vector<std::pair<std::string, nlohmann::json>> discovery;

  // The `plugin_attr` object of `plugin`, or nullptr.
  const nlohmann::json* PluginAttr(std::string_view plugin) const {
    for (const auto& [name, attr] : plugin_attr) {
      if (name == plugin) return &attr;
    }
    return nullptr;
  }
  // The `discovery` section of provider `name`, or nullptr when it is not configured.
  const nlohmann::json* Discovery(std::string_view name) const {
    for (const auto& [n, conf] : discovery) {
      if (n == name) return &conf;
    }
    return nullptr;
  }
};

// ---------------------------------------------------------------- apisix.yaml

struct Timeout {
  double connect = 60;  // seconds, > 0
  double send = 60;
  double read = 60;
};

struct NodeSpec {
  std::string host;  // IP literal (IPv6 without brackets) or domain name
  int port = 0;      // 1..65535 (map form without port: default for the scheme)
  int weight = 1;    // >= 0
  int priority = 0;
};

enum class PassHost { kPass, kNode, kRewrite };

// An upstream's `checks` (reference §3.4; lua-resty-healthcheck's options as APISIX's schema
// gives them), with APISIX's defaults filled in. Compared by value: a reload that keeps an
// upstream's checks (and key) keeps its checker and its targets' health.
struct ActiveCheckSpec {
  std::string type = "http";  // http or tcp (https needs upstream TLS: a config error today)
  double timeout = 1;         // seconds, per probe (connect, send and read each)
  int concurrency = 10;       // probes of one checker in flight at once
  std::string host;           // probe Host header (and target hostname); "" = the node's ip
  int port = 0;               // probe port instead of the node's; 0 = the node's
  std::string http_method = "GET";
  std::string http_path = "/";
  std::string http_req_body;
  bool https_verify_certificate = true;
  std::vector<std::pair<std::string, std::string>> req_headers;  // "Name: value" split
  int healthy_interval = 1;                                      // seconds, >= 1
  std::vector<int> healthy_statuses = {200, 302};
  int healthy_successes = 2;  // 1..254
  int unhealthy_interval = 1;
  std::vector<int> unhealthy_statuses = {429, 404, 500, 501, 502, 503, 504, 505};
  int unhealthy_http_failures = 5;  // 1..254
  int unhealthy_tcp_failures = 2;
  int unhealthy_timeouts = 3;
  bool operator==(const ActiveCheckSpec&) const = default;
};

struct PassiveCheckSpec {
  std::string type = "http";  // http or tcp (tcp: statuses are not counted)
  std::vector<int> healthy_statuses = {200, 201, 202, 203, 204, 205, 206, 207, 208, 226,
                                       300, 301, 302, 303, 304, 305, 306, 307, 308};
  int healthy_successes = 5;  // 0..254 (0: never counted)
  std::vector<int> unhealthy_statuses = {429, 500, 503};
  int unhealthy_http_failures = 5;
  int unhealthy_tcp_failures = 2;
  int unhealthy_timeouts = 7;
  bool operator==(const PassiveCheckSpec&) const = default;
};

struct HealthChecksSpec {
  ActiveCheckSpec active;                   // required by the schema
  std::optional<PassiveCheckSpec> passive;  // absent: no passive reports
  bool operator==(const HealthChecksSpec&) const = default;
};

struct UpstreamSpec {
  std::string id;                   // normalized to string; "" for inline upstreams
  std::string type = "roundrobin";  // roundrobin, chash, ewma or least_conn (§3.3)
  std::vector<NodeSpec> nodes;      // map form converted to list form
  // chash only: where the key comes from (vars, header, cookie, consumer, vars_combinations)
  // and the key (a variable name, a header or cookie name, or a template), validated as
  // APISIX's upstream schema does when type is chash (§3.1); kept but unused otherwise.
  std::string hash_on = "vars";
  std::string key;
  std::string scheme = "http";
  std::optional<Timeout> timeout;
  std::optional<int> retries;  // unset -> nodes - 1
  double retry_timeout = 0;    // seconds, 0 = none
  PassHost pass_host = PassHost::kPass;
  std::string upstream_host;  // required when pass_host == kRewrite
  std::optional<KeepalivePool> keepalive_pool;
  std::optional<HealthChecksSpec> checks;  // reference §3.4
  // Service discovery (reference §3.5): `discovery_type` and `service_name` set together,
  // instead of `nodes`. Whether the type is configured (config.yaml `discovery:`) is checked
  // by the snapshot build, which reports an error at discovery_loc / discovery_path.
  std::string discovery_type;
  std::string service_name;
  std::map<std::string, std::string> discovery_args;  // namespace_id, group_name (nacos)
  SourceLoc discovery_loc;
  std::string discovery_path;  // e.g. "upstreams[2].discovery_type"
  SourceLoc loc;
  // A top-level item as written, as compact JSON text (AppendYamlAsJson), for the control
  // API's view of it (admin/control_view.h) when parsed with RoutesParseOptions::keep_source;
  // empty otherwise, and for inline upstreams (part of their owner's).
  std::string source;
};

// One entry of a `plugins:` object: the plugin's name and its configuration, kept as JSON
// (the form APISIX's schemas describe) for the plugin to validate when the snapshot is built.
struct PluginSpec {
  std::string name;
  nlohmann::json conf;  // object
  SourceLoc loc;        // where the plugin's key is
  std::string path;     // YAML path, e.g. "routes[2].plugins.limit-count"
};

// A `vars` expression (lua-resty-expr DSL), compiled and validated at snapshot build.
struct VarsSpec {
  nlohmann::json expr;  // array
  SourceLoc loc;
  std::string path;  // e.g. "routes[0].vars"
};

struct RouteSpec {
  std::string id;  // normalized to string; arr_<n> when absent
  std::string name;
  std::vector<std::string> uris;     // `uri` folded into `uris`
  std::vector<std::string> methods;  // validated against APISIX's enum; empty = any
  std::vector<std::string> hosts;    // lowercased; `host` folded into `hosts`
  int priority = 0;
  int status = 1;                         // 0 = ignored by the router
  std::optional<UpstreamSpec> upstream;   // inline upstream
  std::string upstream_id;                // normalized to string; "" when absent
  std::optional<Timeout> timeout;         // overrides the upstream's timeout
  std::vector<std::string> remote_addrs;  // `remote_addr` folded in; IPs / CIDRs (validated)
  std::optional<VarsSpec> vars;
  std::vector<PluginSpec> plugins;  // in file order
  std::string service_id;           // normalized; "" when absent
  std::string plugin_config_id;     // normalized; "" when absent
  // Unset: the service's says (APISIX: the route's wins when it has one, even false).
  std::optional<bool> enable_websocket;
  std::vector<std::pair<std::string, std::string>> labels;
  SourceLoc loc;
  std::string path;    // YAML path of the item, e.g. "routes[3]"
  std::string source;  // the item as written (see UpstreamSpec::source)
};

struct ServiceSpec {
  std::string id;
  std::string name;
  std::vector<std::string> hosts;  // lowercased; routes without hosts inherit them
  std::optional<UpstreamSpec> upstream;
  std::string upstream_id;
  std::vector<PluginSpec> plugins;
  bool enable_websocket = false;
  std::vector<std::pair<std::string, std::string>> labels;
  SourceLoc loc;
  std::string path;
  std::string source;  // the item as written (see UpstreamSpec::source)
};

struct PluginConfigSpec {
  std::string id;
  std::vector<PluginSpec> plugins;
  SourceLoc loc;
  std::string path;
};

struct GlobalRuleSpec {
  std::string id;
  std::vector<PluginSpec> plugins;
  SourceLoc loc;
  std::string path;
};

// One `plugin_metadata` item: `id` is the plugin's name, the other fields its metadata (kept
// as JSON for the plugin to validate; FactoryContext::metadata).
struct PluginMetadataSpec {
  std::string id;
  nlohmann::json fields;  // object, without `id`
  SourceLoc loc;
  std::string path;
};

struct RoutesConfig {
  std::string file;
  std::vector<RouteSpec> routes;  // file order
  std::vector<UpstreamSpec> upstreams;
  std::vector<ServiceSpec> services;
  std::vector<PluginConfigSpec> plugin_configs;
  std::vector<GlobalRuleSpec> global_rules;
  std::vector<PluginMetadataSpec> plugin_metadata;
  // `plugins:` in apisix.yaml (list of {name}): overrides config.yaml's enabled plugins.
  std::optional<std::vector<std::string>> enabled_plugins;
};

}  // namespace turnpike::config
