#include "discovery/kubernetes_config.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <set>

#include "base/strings.h"
#include "expr/regex.h"

namespace turnpike::discovery {
namespace {

constexpr char kDefaultTokenFile[] = "/var/run/secrets/kubernetes.io/serviceaccount/token";

bool IsAlnumLower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `${NAME}` with NAME as schema.lua's ^\${[_A-Za-z]([_A-Za-z0-9]*[_A-Za-z])*}$.
bool IsEnvRef(std::string_view s) {
  if (s.size() < 4 || s.substr(0, 2) != "${" || s.back() != '}') return false;
  std::string_view name = s.substr(2, s.size() - 3);
  if (!(IsAlpha(name.front()) || name.front() == '_')) return false;
  if (!(IsAlpha(name.back()) || name.back() == '_')) return false;
  for (char c : name) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '_')) return false;
  }
  return true;
}

// schema.lua's host pattern: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
bool IsHostName(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || !IsAlnumLower(label.front()) || !IsAlnumLower(label.back())) return false;
    for (char c : label) {
      if (!IsAlnumLower(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$
bool IsNamespaceName(std::string_view s) {
  if (s.empty() || !IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  for (char c : s) {
    if (!IsAlnumLower(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// The token's oneOf: an ${ENV} reference at the end (schema.lua's pattern is not anchored at
// the start), or ^[A-Za-z0-9+/._=-]{0,4096}$.
bool IsTokenValue(std::string_view s) {
  size_t open = s.rfind("${");
  if (open != std::string_view::npos && IsEnvRef(s.substr(open))) return true;
  if (s.size() > 4096) return false;
  for (char c : s) {
    if (!IsAlpha(c) && !IsDigit(c) && std::string_view("+/._=-").find(c) == s.npos) return false;
  }
  return true;
}

// get_apiserver's read_env(): `${NAME}` from the environment, anything else as it is.
StatusOr<std::string> ReadEnv(const std::string& value) {
  if (value.size() > 3 && value.compare(0, 2, "${") == 0 && value.back() == '}') {
    std::string name = value.substr(2, value.size() - 3);
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return Status::Error("not found environment variable " + name);
    return std::string(v);
  }
  return value;
}

// A string field (an integer is taken for `port`, which YAML writes unquoted).
Status StringField(const nlohmann::json& obj, const char* key, const std::string& at,
                   std::string* out, bool* present) {
  *present = false;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  *present = true;
  if (it->is_string()) {
    *out = it->get<std::string>();
    return Status::Ok();
  }
  if (std::string_view(key) == "port" && it->is_number_integer()) {
    *out = std::to_string(it->get<int64_t>());
    return Status::Ok();
  }
  return Status::Error(at + key + ": must be a string");
}

Status ParseService(const nlohmann::json& conf, bool multi, const std::string& at,
                    KubernetesClusterConfig* c) {
  std::string schema = "https";
  std::string host = "${KUBERNETES_SERVICE_HOST}";
  std::string port = "${KUBERNETES_SERVICE_PORT}";
  auto it = conf.find("service");
  if (it == conf.end() || it->is_null()) {
    if (multi) return Status::Error(at + "service: is required");
  } else {
    const nlohmann::json& s = *it;
    std::string sat = at + "service.";
    if (!s.is_object()) return Status::Error(at + "service: must be an object");
    bool has = false;
    if (Status st = StringField(s, "schema", sat, &schema, &has); !st.ok()) return st;
    if (Status st = StringField(s, "host", sat, &host, &has); !st.ok()) return st;
    if (multi && !has) return Status::Error(sat + "host: is required");
    if (Status st = StringField(s, "port", sat, &port, &has); !st.ok()) return st;
    if (multi && !has) return Status::Error(sat + "port: is required");
    if (auto v = s.find("ssl_verify"); v != s.end() && !v->is_null() && !v->is_boolean()) {
      return Status::Error(sat + "ssl_verify: must be a boolean");
    }
  }
  if (schema != "http" && schema != "https") {
    return Status::Error(at + "service.schema: must be one of http, https");
  }
  if (schema == "https") {
    return Status::Error(at +
                         "service.schema: https is not supported yet (Turnpike has no TLS "
                         "client); use http, e.g. through `kubectl proxy`");
  }
  if (!IsEnvRef(host) && !IsHostName(host)) {
    return Status::Error(at + "service.host: \"" + host +
                         "\" is not a host name, an IPv4 address or ${ENV}");
  }
  StatusOr<std::string> h = ReadEnv(host);
  if (!h.ok()) return Status::Error(at + "service.host: " + h.status().message());
  if (h.value().empty()) return Status::Error(at + "service.host: should set to non-empty string");
  c->host = h.value();
  StatusOr<std::string> p = ReadEnv(port);
  if (!p.ok()) return Status::Error(at + "service.port: " + p.status().message());
  std::optional<uint64_t> n = base::ParseUint(p.value());
  if (!n || *n < 1 || *n > 65535) {
    return Status::Error(at + "service.port: invalid port value: " + p.value());
  }
  c->port = static_cast<int>(*n);
  return Status::Ok();
}

Status ParseClient(const nlohmann::json& conf, bool multi, const std::string& at,
                   KubernetesClusterConfig* c) {
  auto it = conf.find("client");
  std::string token, token_file;
  bool has_token = false, has_file = false;
  if (it == conf.end() || it->is_null()) {
    if (multi) return Status::Error(at + "client: is required");
  } else {
    const nlohmann::json& cl = *it;
    std::string cat = at + "client.";
    if (!cl.is_object()) return Status::Error(at + "client: must be an object");
    if (Status s = StringField(cl, "token", cat, &token, &has_token); !s.ok()) return s;
    if (has_token && !IsTokenValue(token)) {
      return Status::Error(cat + "token: must be ${ENV} or up to 4096 of A-Za-z0-9+/._=-");
    }
    if (Status s = StringField(cl, "token_file", cat, &token_file, &has_file); !s.ok()) return s;
    if (has_file && (token_file.empty() || token_file.size() > 500 ||
                     token_file.find_first_of(":*?\"<>|") != std::string::npos)) {
      return Status::Error(cat +
                           "token_file: must be a path of 1 to 500 characters without "
                           ":*?\"<>|");
    }
    if (multi && has_token == has_file) {
      return Status::Error(at + "client: exactly one of token and token_file is required");
    }
  }
  if (!has_token && !has_file) {
    if (multi) return Status::Error(at + "client: exactly one of token and token_file is required");
    token_file = kDefaultTokenFile;
    has_file = true;
  }
  if (has_token) {  // get_apiserver() prefers the token
    StatusOr<std::string> t = ReadEnv(token);
    if (!t.ok()) return Status::Error(at + "client.token: " + t.status().message());
    c->token = TrimToken(t.value());
  } else {
    StatusOr<std::string> f = ReadEnv(token_file);
    if (!f.ok()) return Status::Error(at + "client.token_file: " + f.status().message());
    c->token_file = f.value();
  }
  return Status::Ok();
}

Status ParseNamespaceSelector(const nlohmann::json& ns, const std::string& at,
                              KubernetesClusterConfig* c) {
  if (ns.is_null()) return Status::Ok();
  if (!ns.is_object()) return Status::Error(at + ": must be an object");
  int given = 0;
  for (const char* key : {"equal", "not_equal", "match", "not_match"}) {
    auto it = ns.find(key);
    if (it == ns.end() || it->is_null()) continue;
    ++given;
    std::string kat = at + "." + key;
    std::string_view k(key);
    if (k == "equal" || k == "not_equal") {
      if (!it->is_string() || !IsNamespaceName(it->get<std::string>())) {
        return Status::Error(kat +
                             ": must be a namespace name (^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$)");
      }
      c->namespace_filter = k == "equal" ? NamespaceFilter::kEqual : NamespaceFilter::kNotEqual;
      c->namespace_value = it->get<std::string>();
      continue;
    }
    if (!it->is_array() || it->empty()) return Status::Error(kat + ": must be a non-empty list");
    c->namespace_filter = k == "match" ? NamespaceFilter::kMatch : NamespaceFilter::kNotMatch;
    c->namespace_regexes.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      std::string iat = kat + "[" + std::to_string(i) + "]";
      const nlohmann::json& v = (*it)[i];
      if (!v.is_string()) return Status::Error(iat + ": must be a string");
      std::string re = v.get<std::string>();
      for (char ch : re) {
        if (ch < 0x21 || ch > 0x7e) return Status::Error(iat + ": must be printable ASCII");
      }
      StatusOr<expr::Regex> compiled = expr::Regex::Compile(re, false);
      if (!compiled.ok()) return Status::Error(iat + ": " + compiled.status().message());
      c->namespace_regexes.push_back(std::move(re));
    }
  }
  if (given > 1) {
    return Status::Error(at + ": only one of equal, not_equal, match and not_match may be set");
  }
  return Status::Ok();
}

StatusOr<KubernetesClusterConfig> ParseCluster(const nlohmann::json& conf, bool multi,
                                               const std::string& at) {
  KubernetesClusterConfig c;
  if (!conf.is_object()) return Status::Error((at.empty() ? "" : at) + "must be an object");
  static const std::set<std::string> kKnown = {"id",
                                               "service",
                                               "client",
                                               "namespace_selector",
                                               "label_selector",
                                               "default_weight",
                                               "shared_size",
                                               "watch_endpoint_slices"};
  for (const auto& [key, v] : conf.items()) {
    if (kKnown.count(key) == 0) {
      spdlog::warn("discovery.kubernetes.{}{}: unknown key, ignored", at, key);
    }
  }
  if (multi) {
    auto it = conf.find("id");
    if (it == conf.end() || !it->is_string()) return Status::Error(at + "id: is required");
    std::string id = it->get<std::string>();
    bool ok = !id.empty() && id.size() <= 64;
    for (char ch : id) ok = ok && IsAlnumLower(ch);
    if (!ok) return Status::Error(at + "id: must match ^[a-z0-9]{1,64}$");
    c.id = id;
  }
  if (Status s = ParseService(conf, multi, at, &c); !s.ok()) return s;
  if (Status s = ParseClient(conf, multi, at, &c); !s.ok()) return s;
  if (auto it = conf.find("namespace_selector"); it != conf.end()) {
    if (Status s = ParseNamespaceSelector(*it, at + "namespace_selector", &c); !s.ok()) return s;
  }
  if (auto it = conf.find("label_selector"); it != conf.end() && !it->is_null()) {
    if (!it->is_string()) return Status::Error(at + "label_selector: must be a string");
    c.label_selector = it->get<std::string>();
  }
  if (auto it = conf.find("default_weight"); it != conf.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
        it->get<int64_t>() > std::numeric_limits<int>::max()) {
      return Status::Error(at + "default_weight: must be an integer >= 0");
    }
    c.default_weight = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = conf.find("shared_size"); it != conf.end() && !it->is_null()) {
    std::string s = it->is_string() ? it->get<std::string>() : "";
    bool ok = s.size() >= 2 && s.back() == 'm' && s[0] >= '1' && s[0] <= '9';
    for (size_t i = 1; ok && i + 1 < s.size(); ++i) ok = IsDigit(s[i]);
    if (!ok) return Status::Error(at + "shared_size: must match ^[1-9][0-9]*m$");
  }
  if (auto it = conf.find("watch_endpoint_slices"); it != conf.end() && !it->is_null()) {
    if (!it->is_boolean()) return Status::Error(at + "watch_endpoint_slices: must be a boolean");
    c.watch_endpoint_slices = it->get<bool>();
  }
  return c;
}

}  // namespace

std::string TrimToken(std::string_view token) {
  size_t b = token.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(token.substr(b, token.find_last_not_of(" \t\r\n") - b + 1));
}

StatusOr<KubernetesConfig> ParseKubernetesConfig(const nlohmann::json& conf) {
  KubernetesConfig out;
  if (conf.is_object()) {
    StatusOr<KubernetesClusterConfig> c = ParseCluster(conf, false, "");
    if (!c.ok()) return c.status();
    out.clusters.push_back(std::move(c).value());
    return out;
  }
  if (!conf.is_array() || conf.empty()) {
    return Status::Error("must be an object (one cluster) or a non-empty list of clusters");
  }
  out.multi = true;
  std::set<std::string> ids;
  for (size_t i = 0; i < conf.size(); ++i) {
    std::string at = "[" + std::to_string(i) + "].";
    StatusOr<KubernetesClusterConfig> c = ParseCluster(conf[i], true, at);
    if (!c.ok()) return c.status();
    if (!ids.insert(c.value().id).second) return Status::Error(at + "id: duplicate id value");
    out.clusters.push_back(std::move(c).value());
  }
  return out;
}

}  // namespace turnpike::discovery
