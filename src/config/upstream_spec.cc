#include "config/upstream_spec.h"

#include <limits>
#include <map>
#include <vector>

#include "base/strings.h"
#include "config/spec_fields.h"

namespace turnpike::config {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

bool IsNodeHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == ':';
}

bool IsValidNodeHost(std::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!IsNodeHostChar(c)) return false;
  }
  return true;
}

int DefaultPort(const std::string& scheme) {
  return (scheme == "https" || scheme == "grpcs") ? 443 : 80;
}

// Map form: {"host:port": weight}.
void ParseNodeMap(const Field& f, int default_port, std::vector<NodeSpec>* nodes, Diagnostics& d) {
  for (const Field& entry : MapEntries(f.value, f.path, d)) {
    NodeSpec node;
    if (!SplitHostPort(entry.key, default_port, &node.host, &node.port)) {
      d.Error(
          entry.key_node, entry.path,
          "invalid node address \"" + entry.key + "\": expected host, host:port or [ipv6]:port");
      continue;
    }
    std::optional<int64_t> weight = ReadInt(entry, d, 0, kInt32Max);
    if (!weight) continue;
    node.weight = static_cast<int>(*weight);
    nodes->push_back(std::move(node));
  }
}

// List form: [{host, port?, weight, priority?, metadata?}].
void ParseNodeList(const Field& f, int default_port, std::vector<NodeSpec>* nodes, Diagnostics& d) {
  for (const Field& item : ListItems(f.value, f.path)) {
    if (!ExpectMap(item, d)) continue;
    size_t errors_before = d.errors().size();
    NodeSpec node;
    node.port = default_port;
    bool has_host = false;
    bool has_weight = false;
    for (const Field& x : MapEntries(item.value, item.path, d)) {
      if (x.key == "host") {
        has_host = true;
        std::optional<std::string> host = ReadString(x, d);
        if (!host) continue;
        std::string_view h = *host;
        if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
        if (!IsValidNodeHost(h)) {
          d.Error(x.at(), x.path, "invalid node host \"" + *host + "\"");
          continue;
        }
        node.host = std::string(h);
      } else if (x.key == "port") {
        if (std::optional<int64_t> v = ReadInt(x, d, 1, 65535)) node.port = static_cast<int>(*v);
      } else if (x.key == "weight") {
        has_weight = true;
        if (std::optional<int64_t> v = ReadInt(x, d, 0, kInt32Max)) {
          node.weight = static_cast<int>(*v);
        }
      } else if (x.key == "priority") {
        if (std::optional<int64_t> v = ReadInt(x, d, kInt32Min, kInt32Max)) {
          node.priority = static_cast<int>(*v);
        }
      } else if (x.key == "metadata") {
        ExpectMap(x, d);
      } else {
        d.Warning(x.key_node, x.path, "unknown key, ignored");
      }
    }
    if (!has_host) d.Error(item.at(), item.path, "missing required field \"host\"");
    if (!has_weight) d.Error(item.at(), item.path, "missing required field \"weight\"");
    if (d.errors().size() == errors_before) nodes->push_back(std::move(node));
  }
}

std::optional<KeepalivePool> ReadKeepalivePool(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  KeepalivePool pool;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "size") {
      if (std::optional<int64_t> v = ReadInt(x, d, 1, kInt32Max)) pool.size = static_cast<int>(*v);
    } else if (x.key == "idle_timeout") {
      if (std::optional<double> v = ReadNumber(x, d, 0, false)) pool.idle_timeout = *v;
    } else if (x.key == "requests") {
      if (std::optional<int64_t> v = ReadInt(x, d, 1, kInt32Max)) {
        pool.requests = static_cast<int>(*v);
      }
    } else {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    }
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return pool;
}

// discovery_args: {namespace_id, group_name} (reference §3.1; used by nacos).
void ReadDiscoveryArgs(const Field& f, Diagnostics& d, std::map<std::string, std::string>* out) {
  if (!ExpectMap(f, d)) return;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "namespace_id" || x.key == "group_name") {
      if (std::optional<std::string> v = ReadString(x, d)) (*out)[x.key] = *v;
    } else {
      d.Error(x.key_node, x.path, "unknown field");
    }
  }
}

// APISIX's upstream_hash_vars_schema: the variables chash may hash on with hash_on vars.
// (Its pattern's class [0-9a-zA-z_-] spans 'A' to 'z', so it also takes [ \ ] ^ and `.)
bool IsChashVar(std::string_view key) {
  static constexpr std::string_view kNames[] = {
      "uri",         "server_name",  "server_addr", "request_uri", "remote_port",
      "remote_addr", "query_string", "host",        "hostname",    "mqtt_client_id"};
  for (std::string_view name : kNames) {
    if (key == name) return true;
  }
  if (key.size() <= 4 || key.substr(0, 4) != "arg_") return false;
  for (char c : key.substr(4)) {
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'z') || c == '-')) return false;
  }
  return true;
}

// APISIX's upstream_hash_header_schema: a header or cookie name.
bool IsChashHeaderName(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_')) {
      return false;
    }
  }
  return true;
}

// APISIX's check_upstream_conf for type chash: a key is required unless hash_on is consumer,
// and must suit hash_on (any string for vars_combinations).
void CheckChashKey(const UpstreamSpec& spec, const Field& f, const Field* type, const Field* key,
                   Diagnostics& d) {
  if (spec.hash_on == "consumer") return;
  if (key == nullptr) {
    const Field& at = type != nullptr ? *type : f;
    d.Error(at.at(), f.path + ".key",
            "missing key: type chash with hash_on " + spec.hash_on + " needs a key");
    return;
  }
  if (spec.hash_on == "vars" && !IsChashVar(spec.key)) {
    d.Error(key->at(), key->path,
            "invalid key \"" + spec.key +
                "\" for hash_on vars: must be one of uri, server_name, server_addr, request_uri, "
                "remote_port, remote_addr, query_string, host, hostname, mqtt_client_id, or "
                "arg_<name>");
  } else if ((spec.hash_on == "header" || spec.hash_on == "cookie") &&
             !IsChashHeaderName(spec.key)) {
    d.Error(key->at(), key->path,
            "invalid key \"" + spec.key + "\" for hash_on " + spec.hash_on +
                ": must match ^[a-zA-Z0-9-_]+$");
  }
}

}  // namespace

bool SplitHostPort(std::string_view addr, int default_port, std::string* host, int* port) {
  std::string_view h;
  std::string_view port_text;
  bool has_port = false;
  if (!addr.empty() && addr.front() == '[') {
    size_t close = addr.find(']');
    if (close == std::string_view::npos) return false;
    h = addr.substr(1, close - 1);
    std::string_view rest = addr.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port_text = rest.substr(1);
      has_port = true;
    }
  } else {
    size_t first = addr.find(':');
    if (first != std::string_view::npos && addr.find(':', first + 1) == std::string_view::npos) {
      h = addr.substr(0, first);
      port_text = addr.substr(first + 1);
      has_port = true;
    } else {
      h = addr;  // no colon, or a bare IPv6 literal
    }
  }
  if (!IsValidNodeHost(h)) return false;
  int p = default_port;
  if (has_port) {
    std::optional<uint64_t> v = base::ParseUint(port_text);
    if (!v || *v < 1 || *v > 65535) return false;
    p = static_cast<int>(*v);
  }
  *host = std::string(h);
  *port = p;
  return true;
}

std::optional<UpstreamSpec> ParseUpstream(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  UpstreamSpec spec;
  spec.loc = d.Loc(f.at());
  std::vector<Field> fields = MapEntries(f.value, f.path, d);

  const Field* nodes = nullptr;
  const Field* discovery_type = nullptr;
  const Field* service_name = nullptr;
  const Field* pass_host = nullptr;
  const Field* type = nullptr;
  const Field* key = nullptr;
  std::string unused_name;
  for (const Field& x : fields) {
    if (x.key == "id") {
      if (std::optional<std::string> id = ReadId(x, d)) spec.id = *id;
    } else if (CheckMetadataField(x, d, &unused_name)) {
      // validated; not used by the data plane
    } else if (x.key == "nodes") {
      nodes = &x;
    } else if (x.key == "type") {
      type = &x;
      std::optional<std::string> v = ReadEnum(x, d, {"roundrobin", "chash", "ewma", "least_conn"});
      if (v) spec.type = *v;
    } else if (x.key == "hash_on") {
      std::optional<std::string> v =
          ReadEnum(x, d, {"vars", "header", "cookie", "consumer", "vars_combinations"});
      if (v) spec.hash_on = *v;
    } else if (x.key == "key") {
      key = &x;
      if (std::optional<std::string> v = ReadString(x, d)) spec.key = *v;
    } else if (x.key == "retries") {
      if (std::optional<int64_t> v = ReadInt(x, d, 0, kInt32Max))
        spec.retries = static_cast<int>(*v);
    } else if (x.key == "retry_timeout") {
      if (std::optional<double> v = ReadNumber(x, d, 0, false)) spec.retry_timeout = *v;
    } else if (x.key == "timeout") {
      spec.timeout = ReadTimeout(x, d);
    } else if (x.key == "scheme") {
      std::optional<std::string> scheme =
          ReadEnum(x, d, {"http", "https", "grpc", "grpcs", "tcp", "tls", "udp", "kafka"});
      if (scheme && *scheme != "http") {
        d.Error(x.at(), x.path, "scheme \"" + *scheme + "\" is not supported yet (only http)");
      } else if (scheme) {
        spec.scheme = *scheme;
      }
    } else if (x.key == "pass_host") {
      pass_host = &x;
      std::optional<std::string> v = ReadEnum(x, d, {"pass", "node", "rewrite"});
      if (v == "node") spec.pass_host = PassHost::kNode;
      if (v == "rewrite") spec.pass_host = PassHost::kRewrite;
    } else if (x.key == "upstream_host") {
      if (std::optional<std::string> h = ReadHost(x, d)) spec.upstream_host = *h;
    } else if (x.key == "keepalive_pool") {
      spec.keepalive_pool = ReadKeepalivePool(x, d);
    } else if (x.key == "discovery_type") {
      discovery_type = &x;
      if (std::optional<std::string> v = ReadString(x, d)) {
        if (v->empty()) {
          d.Error(x.at(), x.path, "must not be empty");
        } else {
          spec.discovery_type = *v;
          spec.discovery_loc = d.Loc(x.at());
          spec.discovery_path = x.path;
        }
      }
    } else if (x.key == "service_name") {
      service_name = &x;
      if (std::optional<std::string> v = ReadString(x, d)) {
        if (v->empty() || v->size() > 256) {
          d.Error(x.at(), x.path, "length must be 1 to 256");
        } else {
          spec.service_name = *v;
        }
      }
    } else if (x.key == "discovery_args") {
      ReadDiscoveryArgs(x, d, &spec.discovery_args);
    } else if (x.key == "checks") {
      spec.checks = ParseHealthChecks(x, d);
    } else if (x.key == "tls") {
      WarnNotSupported(x, d);
    } else {
      d.Error(x.key_node, x.path, "unknown field");
    }
  }

  // APISIX: oneOf {nodes} | {service_name + discovery_type}.
  if (nodes != nullptr && (discovery_type != nullptr || service_name != nullptr)) {
    const Field& other = discovery_type != nullptr ? *discovery_type : *service_name;
    d.Error(other.key_node, other.path, "not allowed together with \"nodes\"");
  } else if (discovery_type != nullptr && service_name == nullptr) {
    d.Error(f.at(), f.path, "missing required field \"service_name\" (with discovery_type)");
  } else if (service_name != nullptr && discovery_type == nullptr) {
    d.Error(f.at(), f.path, "missing required field \"discovery_type\" (with service_name)");
  }
  if (nodes != nullptr) {
    // The scheme is known by now (only http passes), so the default port is too.
    if (nodes->value.IsMap()) {
      ParseNodeMap(*nodes, DefaultPort(spec.scheme), &spec.nodes, d);
    } else if (nodes->value.IsSequence()) {
      ParseNodeList(*nodes, DefaultPort(spec.scheme), &spec.nodes, d);
    } else {
      TypeError(*nodes, d, "map or list");
    }
  } else if (discovery_type != nullptr || service_name != nullptr) {
    // A discovery upstream: its nodes come from the provider (checked above).
  } else {
    d.Error(f.at(), f.path, "missing required field \"nodes\"");
  }
  if (spec.type == "chash" && d.errors().size() == errors_before) {
    CheckChashKey(spec, f, type, key, d);
  }
  if (spec.pass_host == PassHost::kRewrite && spec.upstream_host.empty() && pass_host != nullptr) {
    d.Error(pass_host->at(), pass_host->path,
            "pass_host is rewrite but upstream_host is missing or empty");
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return spec;
}

}  // namespace turnpike::config
