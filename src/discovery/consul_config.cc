#include "discovery/consul_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "base/strings.h"

namespace turnpike::discovery {
namespace {

using nlohmann::json;

// An integer >= `minimum` at `at`, or an error naming it.
Status ReadInt(const json& v, const std::string& at, int64_t minimum, int64_t maximum,
               int64_t* out) {
  if (!v.is_number_integer()) return Status::Error(at + ": must be an integer");
  int64_t n = v.get<int64_t>();
  if (n < minimum) return Status::Error(at + ": must be >= " + std::to_string(minimum));
  if (n > maximum) return Status::Error(at + ": must be <= " + std::to_string(maximum));
  *out = n;
  return Status::Ok();
}

Status ReadInt(const json& v, const std::string& at, int64_t minimum, int* out) {
  int64_t n = 0;
  if (Status s = ReadInt(v, at, minimum, INT32_MAX, &n); !s.ok()) return s;
  *out = static_cast<int>(n);
  return Status::Ok();
}

// "http://ip[:port]" (no path, no trailing slash), as APISIX's format_consul_params takes it,
// with an IP literal for host.
Status ParseServer(const std::string& url, const std::string& at, ConsulServer* out) {
  constexpr std::string_view kScheme = "http://";
  std::string_view rest(url);
  if (rest.substr(0, kScheme.size()) != kScheme) {
    return Status::Error(at + ": only http://address:port is supported, got \"" + url + "\"");
  }
  rest.remove_prefix(kScheme.size());
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    return Status::Error(at + ": invalid consul server address \"" + url +
                         "\", the valid format: http://address:port");
  }
  std::string_view host = rest;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return Status::Error(at + ": unterminated IPv6 address in \"" + url + "\"");
    }
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::Error(at + ": bad port in \"" + url + "\"");
      port = after.substr(1);
      if (port.empty()) return Status::Error(at + ": bad port in \"" + url + "\"");
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty()) return Status::Error(at + ": bad port in \"" + url + "\"");
  }
  int port_number = 80;
  if (!port.empty()) {
    std::optional<uint64_t> p = base::ParseUint(port);
    if (!p || *p < 1 || *p > 65535) return Status::Error(at + ": bad port in \"" + url + "\"");
    port_number = static_cast<int>(*p);
  }
  if (host.empty()) return Status::Error(at + ": no host in \"" + url + "\"");
  if (!http_client::Origin::FromIp(host, port_number, &out->origin)) {
    // A host name: letters, digits, '-', '.', '_' (it goes to the resolver as is).
    for (char c : host) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '.' || c == '_';
      if (!ok) return Status::Error(at + ": bad host in \"" + url + "\"");
    }
    out->name = std::string(host);
  }
  out->port = port_number;
  out->url = url;
  return Status::Ok();
}

bool IsFieldValue(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

Status ParseTimeout(const json& v, ConsulConfig* c) {
  if (!v.is_object()) return Status::Error("timeout: must be an object");
  for (const auto& [key, t] : v.items()) {
    std::string at = "timeout." + key;
    if (key == "connect") {
      if (Status s = ReadInt(t, at, 1, &c->connect_timeout_ms); !s.ok()) return s;
    } else if (key == "read") {
      if (Status s = ReadInt(t, at, 1, &c->read_timeout_ms); !s.ok()) return s;
    } else if (key == "wait") {
      if (Status s = ReadInt(t, at, 1, &c->wait_s); !s.ok()) return s;
    } else {
      spdlog::warn("discovery.consul.{}: unknown key, ignored", at);
    }
  }
  return Status::Ok();
}

Status ParseDump(const json& v, ConsulConfig* c) {
  if (!v.is_object()) return Status::Error("dump: must be an object");
  bool has_path = false;
  for (const auto& [key, d] : v.items()) {
    if (key == "path") {
      if (!d.is_string() || d.get<std::string>().empty()) {
        return Status::Error("dump.path: must be a non-empty string");
      }
      c->dump_path = d.get<std::string>();
      has_path = true;
    } else if (key == "load_on_init") {
      if (!d.is_boolean()) return Status::Error("dump.load_on_init: must be a boolean");
      c->dump_load_on_init = d.get<bool>();
    } else if (key == "expire") {
      if (!d.is_number_integer()) return Status::Error("dump.expire: must be an integer");
      c->dump_expire_s = d.get<int64_t>();
    } else {
      spdlog::warn("discovery.consul.dump.{}: unknown key, ignored", key);
    }
  }
  if (!has_path) return Status::Error("dump: property \"path\" is required");
  c->has_dump = true;
  return Status::Ok();
}

Status ParseDefaultService(const json& v, ConsulConfig* c, json* effective) {
  if (!v.is_object()) return Status::Error("default_service: must be an object");
  DiscoveredNode& n = c->default_service;
  json metadata = {{"fail_timeout", 1}, {"weight", 1}, {"max_fails", 1}};
  for (const auto& [key, d] : v.items()) {
    if (key == "host") {
      if (!d.is_string()) return Status::Error("default_service.host: must be a string");
      n.host = d.get<std::string>();
    } else if (key == "port") {
      if (!d.is_number_integer()) return Status::Error("default_service.port: must be an integer");
      int64_t p = d.get<int64_t>();
      // The discovery node schema's range; APISIX would accept more here and then fail
      // every request with "invalid nodes format".
      if (p < 0 || p > 65535) return Status::Error("default_service.port: must be 0..65535");
      n.port = static_cast<int>(p);
    } else if (key == "metadata") {
      if (!d.is_object()) return Status::Error("default_service.metadata: must be an object");
      for (const auto& [mk, mv] : d.items()) {
        if ((mk == "fail_timeout" || mk == "weight" || mk == "max_fails") &&
            !mv.is_number_integer()) {
          return Status::Error("default_service.metadata." + mk + ": must be an integer");
        }
        metadata[mk] = mv;
      }
    } else {
      spdlog::warn("discovery.consul.default_service.{}: unknown key, ignored", key);
    }
  }
  c->has_default_service = true;
  n.weight = c->weight;
  (*effective)["metadata"] = metadata;
  return Status::Ok();
}

}  // namespace

StatusOr<ConsulConfig> ParseConsulConfig(const json& conf) {
  ConsulConfig c;
  if (!conf.is_object()) return Status::Error("must be an object");
  json effective = conf;
  json default_service_effective;
  const json* default_service = nullptr;
  bool has_servers = false;
  for (const auto& [key, v] : conf.items()) {
    if (key == "servers") {
      if (!v.is_array() || v.empty()) return Status::Error("servers: must be a non-empty list");
      for (size_t i = 0; i < v.size(); ++i) {
        std::string at = "servers[" + std::to_string(i) + "]";
        if (!v[i].is_string()) return Status::Error(at + ": must be a string");
        ConsulServer server;
        if (Status s = ParseServer(v[i].get<std::string>(), at, &server); !s.ok()) return s;
        c.servers.push_back(std::move(server));
      }
      has_servers = true;
    } else if (key == "token") {
      if (!v.is_string()) return Status::Error("token: must be a string");
      c.token = v.get<std::string>();
      if (!IsFieldValue(c.token)) return Status::Error("token: must not hold control characters");
    } else if (key == "fetch_interval") {
      if (Status s = ReadInt(v, key, 1, &c.fetch_interval_s); !s.ok()) return s;
    } else if (key == "keepalive") {
      if (!v.is_boolean()) return Status::Error("keepalive: must be a boolean");
      c.keepalive = v.get<bool>();
    } else if (key == "weight") {
      if (Status s = ReadInt(v, key, 1, &c.weight); !s.ok()) return s;
    } else if (key == "timeout") {
      if (Status s = ParseTimeout(v, &c); !s.ok()) return s;
    } else if (key == "sort_type") {
      std::string s = v.is_string() ? v.get<std::string>() : "";
      if (s == "origin") {
        c.sort = ConsulSort::kOrigin;
      } else if (s == "host_sort") {
        c.sort = ConsulSort::kHostSort;
      } else if (s == "port_sort") {
        c.sort = ConsulSort::kPortSort;
      } else if (s == "combine_sort") {
        c.sort = ConsulSort::kCombineSort;
      } else {
        return Status::Error(
            "sort_type: must be one of origin, host_sort, port_sort, combine_sort");
      }
    } else if (key == "skip_services") {
      if (!v.is_array() || v.empty()) {
        return Status::Error("skip_services: must be a non-empty list");
      }
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          return Status::Error("skip_services[" + std::to_string(i) + "]: must be a string");
        }
        c.skip_services.push_back(v[i].get<std::string>());
      }
    } else if (key == "dump") {
      if (Status s = ParseDump(v, &c); !s.ok()) return s;
    } else if (key == "default_service") {
      default_service = &v;  // after `weight`, which it takes
    } else if (key == "shared_size") {
      std::string s = v.is_string() ? v.get<std::string>() : "";
      bool ok = s.size() >= 2 && s.back() == 'm' && s.front() >= '1' && s.front() <= '9' &&
                std::all_of(s.begin(), s.end() - 1, [](char ch) { return ch >= '0' && ch <= '9'; });
      if (!ok) return Status::Error("shared_size: must match ^[1-9][0-9]*m$");
    } else {
      spdlog::warn("discovery.consul.{}: unknown key, ignored", key);
    }
  }
  if (!has_servers) return Status::Error("property \"servers\" is required");
  if (default_service != nullptr) {
    default_service_effective = *default_service;
    if (Status s = ParseDefaultService(*default_service, &c, &default_service_effective); !s.ok()) {
      return s;
    }
  }
  // The effective section, as APISIX's schema check leaves it (defaults filled in).
  effective["token"] = c.token;
  effective["fetch_interval"] = c.fetch_interval_s;
  effective["keepalive"] = c.keepalive;
  effective["weight"] = c.weight;
  effective["timeout"] = {
      {"connect", c.connect_timeout_ms}, {"read", c.read_timeout_ms}, {"wait", c.wait_s}};
  if (!effective.contains("sort_type")) effective["sort_type"] = "origin";
  if (!effective.contains("shared_size")) effective["shared_size"] = "64m";
  if (c.has_dump) {
    effective["dump"]["load_on_init"] = c.dump_load_on_init;
    effective["dump"]["expire"] = c.dump_expire_s;
  }
  if (default_service != nullptr) effective["default_service"] = default_service_effective;
  c.effective = std::move(effective);
  return c;
}

}  // namespace turnpike::discovery
