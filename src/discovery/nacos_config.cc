#include "discovery/nacos_config.h"

#include <optional>
#include <string_view>

#include "base/strings.h"

namespace turnpike::discovery {
namespace {

bool IsNameChar(char c) {  // APISIX's [a-zA-Z0-9-_.]
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// An integer >= `min` (JSON integers, or floats with an integral value as lua-cjson reads them).
std::optional<int64_t> ReadInt(const nlohmann::json& v, int64_t min) {
  int64_t n = 0;
  if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (d != static_cast<double>(static_cast<int64_t>(d)) || d > 1e15) return std::nullopt;
    n = static_cast<int64_t>(d);
  } else {
    return std::nullopt;
  }
  if (n < min) return std::nullopt;
  return n;
}

// APISIX's host pattern ^http(s)?://([a-zA-Z0-9-_.]+:.+@)?[a-zA-Z0-9-_.:]+$ (2..100 characters),
// then the port. Fills `out`; returns an error text.
std::string ParseHost(const std::string& url, NacosHost* out) {
  const std::string kShape = "\"" + url + "\" is not http://[user:pass@]host[:port]";
  if (url.size() < 2 || url.size() > 100) return "must be 2 to 100 characters";
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    return "\"" + url + "\": https is not supported (Turnpike has no TLS client yet)";
  }
  if (!rest.starts_with("http://")) return kShape;
  rest.remove_prefix(7);
  size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == userinfo.size()) {
      return kShape;
    }
    for (char c : userinfo.substr(0, colon)) {
      if (!IsNameChar(c)) return kShape;
    }
    out->username = std::string(userinfo.substr(0, colon));
    out->password = std::string(userinfo.substr(colon + 1));
    rest.remove_prefix(at + 1);
  }
  if (rest.empty()) return kShape;
  for (char c : rest) {
    if (!IsNameChar(c) && c != ':') return kShape;
  }
  out->url = "http://" + std::string(rest);
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) {
    out->host = std::string(rest);
    out->port = 80;
  } else {
    out->host = std::string(rest.substr(0, colon));
    std::optional<uint64_t> port = base::ParseUint(rest.substr(colon + 1));
    if (out->host.empty() || !port || *port < 1 || *port > 65535) {
      return "\"" + out->url + "\": the port must be 1..65535";
    }
    out->port = static_cast<int>(*port);
  }
  return "";
}

}  // namespace

StatusOr<NacosProviderConfig> ParseNacosProviderConfig(const nlohmann::json& conf) {
  NacosProviderConfig c;
  if (conf.is_array()) {
    return Status::Error(
        "the list form (several registries with `id`) is not supported; "
        "use the object form with `host`");
  }
  if (!conf.is_object()) return Status::Error("must be an object");
  bool has_host = false;
  for (const auto& [key, v] : conf.items()) {
    if (key == "host") {
      has_host = true;
      if (!v.is_array() || v.empty()) return Status::Error("host: must be a non-empty list");
      for (size_t i = 0; i < v.size(); ++i) {
        std::string at = "host[" + std::to_string(i) + "]";
        if (!v[i].is_string()) return Status::Error(at + ": must be a string");
        NacosHost h;
        if (std::string err = ParseHost(v[i].get<std::string>(), &h); !err.empty()) {
          return Status::Error(at + ": " + err);
        }
        c.hosts.push_back(std::move(h));
      }
    } else if (key == "prefix") {
      std::string p = v.is_string() ? v.get<std::string>() : "";
      bool ok = !p.empty() && p.size() <= 100;
      for (char ch : p) ok = ok && (IsNameChar(ch) || ch == '/');
      if (!ok) {
        return Status::Error("prefix: must be 1 to 100 characters of [/a-zA-Z0-9-_.]");
      }
      if (p.back() != '/') p += '/';
      c.prefix = p;
    } else if (key == "fetch_interval") {
      std::optional<int64_t> n = ReadInt(v, 1);
      if (!n) return Status::Error("fetch_interval: must be an integer >= 1 (seconds)");
      c.fetch_interval_ms = static_cast<uint64_t>(*n) * 1000;
    } else if (key == "weight") {
      std::optional<int64_t> n = ReadInt(v, 1);
      if (!n || *n > INT32_MAX) return Status::Error("weight: must be an integer >= 1");
      c.weight = static_cast<int>(*n);
    } else if (key == "timeout") {
      if (!v.is_object()) return Status::Error("timeout: must be an object");
      for (const auto& [tk, tv] : v.items()) {
        double* field = tk == "connect" ? &c.connect_timeout
                        : tk == "send"  ? &c.send_timeout
                        : tk == "read"  ? &c.read_timeout
                                        : nullptr;
        if (field == nullptr) continue;  // the schema allows other properties here
        std::optional<int64_t> n = ReadInt(tv, 1);
        if (!n) return Status::Error("timeout." + tk + ": must be an integer >= 1 (milliseconds)");
        *field = static_cast<double>(*n) / 1000;
      }
    } else if (key == "access_key" || key == "secret_key") {
      if (!v.is_string()) return Status::Error(key + ": must be a string");
      (key == "access_key" ? c.access_key : c.secret_key) = v.get<std::string>();
    } else {
      return Status::Error("unknown field \"" + key + "\"");
    }
  }
  if (!has_host) return Status::Error("host: is required");
  return c;
}

}  // namespace turnpike::discovery
