// config.yaml: the subset of APISIX's static configuration a Turnpike data plane uses
// (reference §1.1), plus the Turnpike-specific `turnpike:` section.
#include <algorithm>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "config/env_subst.h"
#include "config/loader.h"
#include "config/plugin_spec.h"
#include "config/spec_fields.h"
#include "config/yaml_util.h"

namespace turnpike::config {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kIntMax = std::numeric_limits<int64_t>::max();

using Handler = std::function<void(const Field&)>;
struct KeyHandler {
  std::string_view key;
  Handler handle;
};

// Walks one section. A null section (all children commented out) is empty; a null value
// for a known key keeps the default; unknown keys are warned about and not descended into.
void Dispatch(const Field& section, Diagnostics& d, const std::vector<KeyHandler>& handlers) {
  if (section.value.IsNull() || !ExpectMap(section, d)) return;
  for (const Field& x : MapEntries(section.value, section.path, d)) {
    auto it = std::find_if(handlers.begin(), handlers.end(),
                           [&](const KeyHandler& h) { return h.key == x.key; });
    if (it == handlers.end()) {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    } else if (!x.value.IsNull()) {
      it->handle(x);
    }
  }
}

std::optional<double> ReadDuration(const Field& f, Diagnostics& d) {
  ValueKind kind = KindOf(f.value);
  if (kind == ValueKind::kInt || kind == ValueKind::kNumber) return ReadNumber(f, d, 0, false);
  if (kind != ValueKind::kString) {
    TypeError(f, d, "duration");
    return std::nullopt;
  }
  std::optional<double> v = base::ParseDuration(f.value.Scalar());
  if (!v) {
    d.Error(f.at(), f.path,
            "invalid duration \"" + f.value.Scalar() + "\": expected e.g. 60, 60s, 500ms, 2m, 1h");
  }
  return v;
}

std::optional<uint64_t> ReadSize(const Field& f, Diagnostics& d) {
  ValueKind kind = KindOf(f.value);
  if (kind == ValueKind::kInt) {
    std::optional<int64_t> v = ReadInt(f, d, 0, kIntMax);
    if (!v) return std::nullopt;
    return static_cast<uint64_t>(*v);
  }
  if (kind != ValueKind::kString) {
    TypeError(f, d, "size");
    return std::nullopt;
  }
  std::optional<uint64_t> v = base::ParseSize(f.value.Scalar());
  if (!v) {
    d.Error(f.at(), f.path,
            "invalid size \"" + f.value.Scalar() + "\": expected e.g. 1024, 8k, 10m, 1g");
  }
  return v;
}

Handler SetBool(Diagnostics& d, bool* dst) {
  return [&d, dst](const Field& x) {
    if (std::optional<bool> v = ReadBool(x, d)) *dst = *v;
  };
}

Handler SetDuration(Diagnostics& d, double* dst) {
  return [&d, dst](const Field& x) {
    if (std::optional<double> v = ReadDuration(x, d)) *dst = *v;
  };
}

Handler SetInt(Diagnostics& d, int* dst, int64_t min) {
  return [&d, dst, min](const Field& x) {
    if (std::optional<int64_t> v = ReadInt(x, d, min, kInt32Max)) *dst = static_cast<int>(*v);
  };
}

std::optional<ListenAddr> ReadListenEntry(const Field& item, Diagnostics& d) {
  ListenAddr addr;
  ValueKind kind = KindOf(item.value);
  if (kind == ValueKind::kInt) {
    std::optional<int64_t> port = ReadInt(item, d, 1, 65535);
    if (!port) return std::nullopt;
    addr.port = static_cast<int>(*port);
    return addr;
  }
  if (kind != ValueKind::kMap) {
    TypeError(item, d, "integer or map");
    return std::nullopt;
  }
  size_t errors_before = d.errors().size();
  for (const Field& x : MapEntries(item.value, item.path, d)) {
    if (x.key == "ip") {
      if (std::optional<std::string> ip = ReadIp(x, d)) addr.ip = *ip;
    } else if (x.key == "port") {
      if (std::optional<int64_t> port = ReadInt(x, d, 1, 65535))
        addr.port = static_cast<int>(*port);
    } else if (x.key == "enable_http2") {
      d.Error(x.key_node, x.path,
              "per-listener enable_http2 is no longer supported (removed in APISIX 3.9); "
              "use apisix.enable_http2");
    } else {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    }
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return addr;
}

// apisix.node_listen: an int, a list of ints, or a list of {ip, port}.
void ParseNodeListen(const Field& f, Diagnostics& d, std::vector<ListenAddr>* out) {
  std::vector<Field> items;
  if (KindOf(f.value) == ValueKind::kInt) {
    items.push_back(f);
  } else if (f.value.IsSequence()) {
    items = ListItems(f.value, f.path);
    if (items.empty()) d.Error(f.at(), f.path, "must not be empty");
  } else {
    TypeError(f, d, "integer or list");
    return;
  }
  std::vector<ListenAddr> listen;
  for (const Field& item : items) {
    std::optional<ListenAddr> addr = ReadListenEntry(item, d);
    if (!addr) continue;
    bool duplicate = std::any_of(listen.begin(), listen.end(), [&](const ListenAddr& a) {
      return a.ip == addr->ip && a.port == addr->port;
    });
    if (duplicate) {
      d.Error(item.at(), item.path,
              "duplicate listener " + addr->ip + " port " + std::to_string(addr->port));
      continue;
    }
    listen.push_back(*addr);
  }
  if (!listen.empty()) *out = std::move(listen);
}

// nginx_config.worker_processes: an int >= 1 or `auto`; like APISIX, any other non-numeric
// value means auto (with a warning here).
void ParseWorkerProcesses(const Field& f, Diagnostics& d, int hardware_threads, int* out) {
  ValueKind kind = KindOf(f.value);
  if (kind == ValueKind::kInt) {
    if (std::optional<int64_t> v = ReadInt(f, d, 1, kInt32Max)) *out = static_cast<int>(*v);
    return;
  }
  if (kind == ValueKind::kString) {
    const std::string& s = f.value.Scalar();
    if (s == "auto") {
      *out = hardware_threads;
      return;
    }
    if (std::optional<uint64_t> v = base::ParseUint(s)) {
      if (*v < 1 || *v > static_cast<uint64_t>(kInt32Max)) {
        d.Error(f.at(), f.path, "must be a positive integer or auto");
      } else {
        *out = static_cast<int>(*v);
      }
      return;
    }
  }
  if (kind == ValueKind::kNumber) {
    d.Error(f.at(), f.path, "must be a positive integer or auto");
    return;
  }
  d.Warning(f.at(), f.path, "not a number, treated as auto");
  *out = hardware_threads;
}

// APISIX_WORKER_PROCESSES overrides nginx_config.worker_processes.
void ApplyWorkerProcessesEnv(Diagnostics& d, int hardware_threads, int* out) {
  std::optional<std::string> env = ProcessEnv()("APISIX_WORKER_PROCESSES");
  if (!env || env->empty()) return;
  if (*env == "auto") {
    *out = hardware_threads;
    return;
  }
  std::optional<uint64_t> v = base::ParseUint(*env);
  if (!v || *v < 1 || *v > static_cast<uint64_t>(kInt32Max)) {
    d.Error(SourceLoc{d.file(), 0, 0}, "",
            "environment variable APISIX_WORKER_PROCESSES=\"" + *env +
                "\" must be a positive integer or auto");
    return;
  }
  *out = static_cast<int>(*v);
}

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// nginx_config.http.real_ip_header: a header name (or nginx's `proxy_protocol`).
void ParseRealIpHeader(const Field& f, Diagnostics& d, std::string* out) {
  std::optional<std::string> v = ReadString(f, d);
  if (!v) return;
  if (v->empty() || !std::all_of(v->begin(), v->end(), IsTokenChar)) {
    d.Error(f.at(), f.path, "invalid header name \"" + *v + "\"");
    return;
  }
  *out = *v;
}

// nginx_config.http.real_ip_recursive: nginx's on / off (APISIX writes "off", quoted).
void ParseOnOff(const Field& f, Diagnostics& d, bool* out) {
  if (KindOf(f.value) == ValueKind::kBool) {
    *out = *ReadBool(f, d);
    return;
  }
  if (std::optional<std::string> v = ReadEnum(f, d, {"on", "off"})) *out = *v == "on";
}

// nginx_config.http.real_ip_from: IPs, CIDRs or `unix:` (nginx set_real_ip_from).
void ParseRealIpFrom(const Field& f, Diagnostics& d, std::vector<std::string>* out) {
  if (!ExpectList(f, d)) return;
  std::vector<std::string> list;
  for (const Field& item : ListItems(f.value, f.path)) {
    std::optional<std::string> v = ReadString(item, d);
    if (!v) continue;
    if (*v != "unix:" && !IsValidIpOrCidr(*v)) {
      d.Error(item.at(), item.path,
              "invalid address \"" + *v + "\": expected an IP address, a CIDR or \"unix:\"");
      continue;
    }
    list.push_back(*v);
  }
  *out = std::move(list);
}

// config.yaml's `discovery`: as plugin_attr ({name: object}, null an empty object), except
// that a provider's section may also be a list (kubernetes' multi-cluster form). Each
// provider's factory validates its own.
std::vector<std::pair<std::string, nlohmann::json>> ReadDiscovery(const Field& f, Diagnostics& d) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  if (!ExpectMap(f, d)) return out;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.value.IsNull()) {
      out.emplace_back(x.key, nlohmann::json::object());
      continue;
    }
    if (!x.value.IsSequence() && !ExpectMap(x, d)) continue;
    if (std::optional<nlohmann::json> v = ReadJson(x, d)) out.emplace_back(x.key, std::move(*v));
  }
  return out;
}

std::string JoinPath(const std::string& dir, const std::string& path) {
  if (dir.empty() || (!path.empty() && path.front() == '/')) return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

// nginx_config.http.access_log_format_escape: nginx's log_format escape= values.
void ParseLogEscape(const Field& f, Diagnostics& d, Template::Escape* out) {
  std::optional<std::string> v = ReadEnum(f, d, {"default", "json", "none"});
  if (v == "default") *out = Template::Escape::kDefault;
  if (v == "json") *out = Template::Escape::kJson;
  if (v == "none") *out = Template::Escape::kNone;
}

// The prometheus export port when the exporter will listen (prometheus enabled, and
// plugin_attr.prometheus.enable_export_server not false), else 0. A malformed attr is the
// plugin's to report when it starts.
int PrometheusExportPort(const GatewayConfig& cfg) {
  if (cfg.plugins &&
      std::find(cfg.plugins->begin(), cfg.plugins->end(), "prometheus") == cfg.plugins->end()) {
    return 0;
  }
  int port = 9091;
  if (const nlohmann::json* attr = cfg.PluginAttr("prometheus"); attr && attr->is_object()) {
    auto enabled = attr->find("enable_export_server");
    if (enabled != attr->end() && enabled->is_boolean() && !enabled->get<bool>()) return 0;
    auto addr = attr->find("export_addr");
    if (addr != attr->end() && addr->is_object()) {
      auto p = addr->find("port");
      if (p != addr->end() && p->is_number_integer()) port = p->get<int>();
    }
  }
  return port;
}

// APISIX refuses to start when the control port is also a node_listen, status or prometheus
// export port (ports only, whatever the addresses). The error goes to the control port when
// config.yaml sets it, else to the other listener's field (the control API's default port
// is the one in the way).
void CheckControlPort(const GatewayConfig& cfg, const std::optional<Field>& node_listen,
                      const std::optional<Field>& control, const std::optional<Field>& status,
                      const std::optional<Field>& plugin_attr, Diagnostics& d) {
  int port = cfg.control_listen->port;
  std::string p = std::to_string(port);
  const std::string by_default =
      " (the control API's default; set apisix.control.port or apisix.enable_control: false)";
  if (std::any_of(cfg.listen.begin(), cfg.listen.end(),
                  [&](const ListenAddr& l) { return l.port == port; })) {
    if (control) {
      d.Error(control->at(), control->path,
              "control port " + p + " conflicts with apisix.node_listen");
    } else if (node_listen) {
      d.Error(node_listen->at(), node_listen->path,
              "port " + p + " conflicts with the control port " + p + by_default);
    }
  }
  if (cfg.status_listen && cfg.status_listen->port == port) {
    if (control) {
      d.Error(control->at(), control->path, "control port " + p + " conflicts with apisix.status");
    } else if (status) {
      d.Error(status->at(), status->path,
              "status port " + p + " conflicts with the control port " + p + by_default);
    }
  }
  if (PrometheusExportPort(cfg) == port) {
    if (control) {
      d.Error(control->at(), control->path,
              "control port " + p + " conflicts with plugin_attr.prometheus.export_addr.port");
    } else if (plugin_attr) {
      d.Error(plugin_attr->at(), "plugin_attr.prometheus.export_addr.port",
              "prometheus port " + p + " conflicts with the control port " + p + by_default);
    }
  }
}

std::optional<GatewayConfig> ParseGateway(std::string_view text, Diagnostics& d,
                                          const std::string& config_dir, int hw) {
  std::optional<YamlDocument> doc = LoadDocument(text, d);
  if (!doc) return std::nullopt;
  YamlNode root = doc->root();
  GatewayConfig cfg;
  cfg.file = d.file();
  cfg.worker_processes = hw;
  std::optional<std::string> routes_file;  // turnpike.routes_file
  std::optional<Field> role;               // for the data_plane check below
  bool provider_seen = false;
  std::optional<Field> status_port;  // apisix.status (or its port), for the conflict check
  std::optional<Field> log_format;   // nginx_config.http.access_log_format, for its errors
  std::optional<Field> node_listen;  // for the port conflict checks
  std::optional<Field> control;      // apisix.control (or its port)
  std::optional<Field> plugin_attr;  // for the prometheus export port conflict
  bool enable_control = true;

  std::vector<KeyHandler> router = {
      {"http",
       [&](const Field& x) {
         std::optional<std::string> v = ReadEnum(
             x, d, {"radixtree_host_uri", "radixtree_uri", "radixtree_uri_with_parameter"});
         if (v == "radixtree_uri") cfg.router_mode = RouterMode::kUri;
         if (v == "radixtree_uri_with_parameter") cfg.router_mode = RouterMode::kUriWithParameter;
         if (v == "radixtree_host_uri") cfg.router_mode = RouterMode::kHostUri;
       }},
      // The only SNI router APISIX has; accepted so that APISIX's defaults load quietly.
      {"ssl", [&](const Field& x) { ReadEnum(x, d, {"radixtree_sni"}); }},
  };
  std::vector<KeyHandler> status = {
      {"ip",
       [&](const Field& x) {
         if (std::optional<std::string> ip = ReadIp(x, d)) cfg.status_listen->ip = *ip;
       }},
      {"port",
       [&](const Field& x) {
         status_port = x;
         if (std::optional<int64_t> v = ReadInt(x, d, 1, 65535)) {
           cfg.status_listen->port = static_cast<int>(*v);
         }
       }},
  };

  std::vector<KeyHandler> control_keys = {
      {"ip",
       [&](const Field& x) {
         if (std::optional<std::string> ip = ReadIp(x, d)) cfg.control_listen->ip = *ip;
       }},
      {"port",
       [&](const Field& x) {
         control = x;
         if (std::optional<int64_t> v = ReadInt(x, d, 1, 65535)) {
           cfg.control_listen->port = static_cast<int>(*v);
         }
       }},
      // APISIX's choice of router for the control API; both route /v1/... alike here.
      {"router",
       [&](const Field& x) {
         ReadEnum(x, d, {"radixtree_uri", "radixtree_uri_with_parameter"});
       }},
  };

  std::vector<KeyHandler> apisix = {
      {"node_listen",
       [&](const Field& x) {
         node_listen = x;
         ParseNodeListen(x, d, &cfg.listen);
       }},
      {"enable_ipv6", SetBool(d, &cfg.enable_ipv6)},
      {"enable_reuseport", SetBool(d, &cfg.enable_reuseport)},
      {"enable_server_tokens", SetBool(d, &cfg.enable_server_tokens)},
      {"show_upstream_status_in_response_header",
       SetBool(d, &cfg.show_upstream_status_in_response_header)},
      {"router", [&](const Field& x) { Dispatch(x, d, router); }},
      {"delete_uri_tail_slash", SetBool(d, &cfg.delete_uri_tail_slash)},
      {"disable_upstream_healthcheck", SetBool(d, &cfg.disable_upstream_healthcheck)},
      {"trusted_addresses",
       [&](const Field& x) {
         ReadUniqueList(x, d, /*allow_empty=*/false, ReadIpOrCidr, &cfg.trusted_addresses);
       }},
      {"status",
       [&](const Field& x) {
         cfg.status_listen = ListenAddr{"127.0.0.1", 7085};
         status_port = x;
         Dispatch(x, d, status);
       }},
      {"enable_control", SetBool(d, &enable_control)},
      {"control",
       [&](const Field& x) {
         cfg.control_configured = true;
         control = x;
         Dispatch(x, d, control_keys);
       }},
  };
  std::vector<KeyHandler> role_data_plane = {
      {"config_provider",
       [&](const Field& x) {
         provider_seen = true;
         std::optional<std::string> v = ReadEnum(x, d, {"yaml", "json", "etcd", "xds"});
         if (v && *v != "yaml" && *v != "json") {
           d.Error(x.at(), x.path,
                   "config_provider \"" + *v + "\" is not supported yet (only yaml and json)");
         } else if (v) {
           cfg.config_provider = *v;
         }
       }},
  };
  std::vector<KeyHandler> deployment = {
      {"role",
       [&](const Field& x) {
         role = x;
         std::optional<std::string> v =
             ReadEnum(x, d, {"traditional", "control_plane", "data_plane", "standalone"});
         if (v) cfg.role = *v;
       }},
      {"role_data_plane", [&](const Field& x) { Dispatch(x, d, role_data_plane); }},
  };
  std::vector<KeyHandler> http_upstream = {
      {"keepalive", SetInt(d, &cfg.upstream_keepalive.size, 1)},
      {"keepalive_requests", SetInt(d, &cfg.upstream_keepalive.requests, 1)},
      {"keepalive_timeout", SetDuration(d, &cfg.upstream_keepalive.idle_timeout)},
  };
  std::vector<KeyHandler> http = {
      {"keepalive_timeout", SetDuration(d, &cfg.client_keepalive_timeout)},
      {"client_header_timeout", SetDuration(d, &cfg.client_header_timeout)},
      {"client_body_timeout", SetDuration(d, &cfg.client_body_timeout)},
      {"send_timeout", SetDuration(d, &cfg.send_timeout)},
      {"client_max_body_size",
       [&](const Field& x) {
         if (std::optional<uint64_t> v = ReadSize(x, d)) cfg.client_max_body_size = *v;
       }},
      {"client_body_buffer_size",
       [&](const Field& x) {
         // Held in memory per request that reads a form body before routing (post_arg_*).
         constexpr uint64_t kMax = 1ull << 30;
         std::optional<uint64_t> v = ReadSize(x, d);
         if (v && *v > kMax) {
           d.Error(x.at(), x.path, "must be at most 1g");
         } else if (v) {
           cfg.client_body_buffer_size = *v;
         }
       }},
      {"enable_access_log", SetBool(d, &cfg.enable_access_log)},
      {"access_log",
       [&](const Field& x) {
         if (std::optional<std::string> v = ReadString(x, d)) cfg.access_log = *v;
       }},
      {"access_log_format",
       [&](const Field& x) {
         if (std::optional<std::string> v = ReadString(x, d)) {
           cfg.access_log_format = *v;
           log_format = x;
         }
       }},
      {"access_log_format_escape",
       [&](const Field& x) { ParseLogEscape(x, d, &cfg.access_log_format_escape); }},
      {"upstream", [&](const Field& x) { Dispatch(x, d, http_upstream); }},
      {"real_ip_header", [&](const Field& x) { ParseRealIpHeader(x, d, &cfg.real_ip_header); }},
      {"real_ip_recursive", [&](const Field& x) { ParseOnOff(x, d, &cfg.real_ip_recursive); }},
      {"real_ip_from", [&](const Field& x) { ParseRealIpFrom(x, d, &cfg.real_ip_from); }},
  };
  std::vector<KeyHandler> event = {
      {"worker_connections", SetInt(d, &cfg.worker_connections, 1)},
  };
  std::vector<KeyHandler> nginx_config = {
      {"event", [&](const Field& x) { Dispatch(x, d, event); }},
      {"worker_processes",
       [&](const Field& x) { ParseWorkerProcesses(x, d, hw, &cfg.worker_processes); }},
      {"error_log_level",
       [&](const Field& x) {
         std::optional<std::string> v =
             ReadEnum(x, d, {"debug", "info", "notice", "warn", "error", "crit", "alert", "emerg"});
         if (v) cfg.error_log_level = *v;
       }},
      {"http", [&](const Field& x) { Dispatch(x, d, http); }},
  };
  std::vector<KeyHandler> turnpike = {
      {"routes_file",
       [&](const Field& x) {
         std::optional<std::string> v = ReadString(x, d);
         if (v && v->empty()) d.Error(x.at(), x.path, "must not be empty");
         if (v && !v->empty()) routes_file = *v;
       }},
      {"drain_timeout", SetDuration(d, &cfg.drain_timeout)},
  };
  std::vector<KeyHandler> top = {
      {"apisix", [&](const Field& x) { Dispatch(x, d, apisix); }},
      {"deployment", [&](const Field& x) { Dispatch(x, d, deployment); }},
      {"nginx_config", [&](const Field& x) { Dispatch(x, d, nginx_config); }},
      {"turnpike", [&](const Field& x) { Dispatch(x, d, turnpike); }},
      {"plugins",
       [&](const Field& x) {
         cfg.plugins = ReadPluginNames(x, d);
         cfg.plugins_loc = d.Loc(x.key_node);
       }},
      {"plugin_attr",
       [&](const Field& x) {
         plugin_attr = x;
         cfg.plugin_attr = ReadPluginAttr(x, d);
       }},
      {"discovery", [&](const Field& x) { cfg.discovery = ReadDiscovery(x, d); }},
  };
  if (!root.IsNull()) Dispatch(Field{"", root, root, ""}, d, top);

  if (cfg.role == "data_plane" && !provider_seen && role) {
    d.Error(role->at(), "deployment.role_data_plane.config_provider",
            "required when deployment.role is data_plane (yaml or json)");
  }
  if (cfg.status_listen) {
    for (const ListenAddr& l : cfg.listen) {
      if (l.port != cfg.status_listen->port) continue;
      d.Error(status_port->at(), status_port->path,
              "status port " + std::to_string(l.port) + " conflicts with apisix.node_listen");
      break;
    }
  }
  if (!enable_control) cfg.control_listen.reset();
  if (cfg.control_listen) CheckControlPort(cfg, node_listen, control, status_port, plugin_attr, d);
  // Compiled whether or not the log is enabled, as nginx compiles every log_format. The
  // default format always compiles, so an error is the configured one's.
  StatusOr<Template> line =
      CompileAccessLogFormat(cfg.access_log_format, cfg.access_log_format_escape);
  if (line.ok()) {
    cfg.access_log_template = std::move(line).value();
  } else if (log_format) {
    d.Error(log_format->at(), log_format->path, line.status().message());
  }
  ApplyWorkerProcessesEnv(d, hw, &cfg.worker_processes);
  std::string default_routes = cfg.config_provider == "json" ? "apisix.json" : "apisix.yaml";
  cfg.routes_file = JoinPath(config_dir, routes_file.value_or(default_routes));
  if (d.has_errors()) return std::nullopt;
  return cfg;
}

}  // namespace

StatusOr<Template> CompileAccessLogFormat(std::string_view format, Template::Escape escape) {
  return Template::CompileStrict(format,
                                 {.nginx_syntax = true,
                                  .escape = escape,
                                  .missing = escape == Template::Escape::kDefault ? "-" : ""});
}

LoadResult<GatewayConfig> ParseGatewayConfig(std::string_view text, const std::string& file,
                                             const std::string& config_dir, int hardware_threads) {
  LoadResult<GatewayConfig> result;
  Diagnostics d(file);
  try {
    result.value = ParseGateway(text, d, config_dir, std::max(1, hardware_threads));
  } catch (const std::exception& e) {
    // Defensive: helpers check types before converting, so this should not happen.
    result.value.reset();
    d.Error(SourceLoc{file, 0, 0}, "", std::string("internal error while loading: ") + e.what());
  }
  result.errors = std::move(d.errors());
  result.warnings = std::move(d.warnings());
  return result;
}

LoadResult<GatewayConfig> LoadGatewayConfig(const std::string& path, int hardware_threads) {
  Diagnostics d(path);
  std::string text;
  if (!ReadWholeFile(path, d, &text)) {
    LoadResult<GatewayConfig> result;
    result.errors = std::move(d.errors());
    return result;
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  return ParseGatewayConfig(text, path, dir, hardware_threads);
}

}  // namespace turnpike::config
