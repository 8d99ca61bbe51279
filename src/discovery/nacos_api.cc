#include "discovery/nacos_api.h"

#include <openssl/evp.h>

#include <cmath>
#include <limits>

#include "base/courtesy.h"
#include "discovery/json_answer.h"

namespace turnpike::discovery {
namespace {

void AppendParam(std::string* out, std::string_view name, std::string_view value) {
  out->push_back('&');
  out->append(name);
  out->push_back('=');
  out->append(NacosEncode(value));
}

// An integer in [min, max] from a JSON number (1.0 counts: Nacos writes weights as floats).
std::optional<int64_t> IntegerIn(simdjson::dom::element v, int64_t min, int64_t max) {
  if (uint64_t u = 0; v.get_uint64().get(u) == simdjson::SUCCESS) {  // any integer >= 0
    if (u > static_cast<uint64_t>(max) || static_cast<int64_t>(u) < min) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (int64_t n = 0; v.get_int64().get(n) == simdjson::SUCCESS) {
    if (n < min || n > max) return std::nullopt;
    return n;
  }
  double d = 0;
  if (v.get_double().get(d) != simdjson::SUCCESS) return std::nullopt;  // not a number
  if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(min) ||
      d > static_cast<double>(max)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(d);
}

// Skips a JSON string starting at s[i] == '"'; returns the index after its closing quote or npos.
size_t SkipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// Skips one JSON value starting at s[i]; returns the index after it or npos. Scalars are taken as
// the run up to the next delimiter (their validity is the parser's business).
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
         s[i] != '\r' && s[i] != '\t') {
    ++i;
  }
  return i;
}

}  // namespace

std::string NacosEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string NacosLoginTarget(const std::string& prefix, std::string_view username,
                             std::string_view password) {
  std::string t = prefix + "auth/login?username=" + NacosEncode(username);
  AppendParam(&t, "password", password);
  return t;
}

std::string NacosListTarget(const std::string& prefix, const NacosListQuery& q) {
  std::string t = prefix + "ns/instance/list?healthyOnly=true";
  AppendParam(&t, "serviceName", q.service_name);
  if (!q.access_token.empty()) AppendParam(&t, "accessToken", q.access_token);
  AppendParam(&t, "namespaceId", q.namespace_id);
  AppendParam(&t, "groupName", q.group_name);
  if (!q.access_key.empty() && !q.secret_key.empty()) {
    std::string data = std::to_string(q.now_ms) + "@@" + std::string(q.group_name) + "@@" +
                       std::string(q.service_name);
    AppendParam(&t, "ak", q.access_key);
    AppendParam(&t, "data", data);
    AppendParam(&t, "signature", NacosSignature(q.secret_key, data));
  }
  return t;
}

std::string NacosSignature(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA1", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, sizeof(mac),
                &mac_len) == nullptr) {
    return "";
  }
  std::string out(4 * ((mac_len + 2) / 3) + 1, '\0');
  int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), mac, static_cast<int>(mac_len));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

bool ParseNacosLogin(std::string_view body, std::string* token, uint64_t* ttl_seconds) {
  simdjson::dom::element j;
  if (!ParseAnswer(body, &j)) return false;
  std::string_view at = JsonStringMember(j, "accessToken");
  if (at.empty()) return false;
  token->assign(at);
  *ttl_seconds = 0;
  if (simdjson::dom::element ttl; j["tokenTtl"].get(ttl) == simdjson::SUCCESS) {
    if (std::optional<int64_t> n = IntegerIn(ttl, 1, int64_t{1} << 40)) {
      *ttl_seconds = static_cast<uint64_t>(*n);
    }
  }
  return true;
}

std::optional<std::string_view> FindTopLevelMember(std::string_view s, std::string_view name) {
  size_t i = SkipSpace(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  i = SkipSpace(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    size_t key_end = SkipString(s, i);
    if (key_end == std::string_view::npos) return std::nullopt;
    std::string_view key = s.substr(i + 1, key_end - i - 2);
    i = SkipSpace(s, key_end);
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    i = SkipSpace(s, i + 1);
    size_t value_end = SkipValue(s, i);
    if (value_end == std::string_view::npos || value_end == i) return std::nullopt;
    if (key == name) return s.substr(i, value_end - i);
    i = SkipSpace(s, value_end);
    if (i < s.size() && s[i] == ',') i = SkipSpace(s, i + 1);
  }
  return std::nullopt;
}

bool ParseNacosInstances(std::string_view body, int default_weight, DiscoveredNodes* out,
                         std::string* error) {
  out->clear();
  simdjson::dom::element j;
  if (!ParseAnswer(body, &j)) {
    *error = "the answer is not JSON";
    return false;
  }
  if (!j.is_object()) {
    *error = "the answer is not a JSON object";
    return false;
  }
  simdjson::dom::array hosts;
  if (j["hosts"].get_array().get(hosts) != simdjson::SUCCESS) return true;  // no instances
  out->reserve(hosts.size());
  for (simdjson::dom::element h : hosts) {
    base::CourtesyPoint();
    if (!h.is_object()) {
      *error = "an entry of hosts is not an object";
      out->clear();
      return false;
    }
    DiscoveredNode node;
    node.host = JsonStringMember(h, "ip");
    node.port = 0;
    if (simdjson::dom::element port; JsonMember(h, "port", &port)) {
      node.port = static_cast<int>(IntegerIn(port, 0, 65535).value_or(-1));
    }
    node.weight = default_weight;
    if (simdjson::dom::element w; JsonMember(h, "weight", &w)) {
      node.weight =
          static_cast<int>(IntegerIn(w, 0, std::numeric_limits<int32_t>::max()).value_or(-1));
    }
    out->push_back(std::move(node));
  }
  return true;
}

}  // namespace turnpike::discovery
