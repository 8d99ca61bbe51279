#include "config/spec_fields.h"

#include <arpa/inet.h>

#include <limits>

#include "base/strings.h"

namespace turnpike::config {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMin = std::numeric_limits<int64_t>::min();

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool IsHostChar(char c) { return IsIdChar(c) || c == '[' || c == ']' || c == ':'; }

// A string of `min_len`..`max_len` bytes.
std::optional<std::string> ReadBoundedString(const Field& f, Diagnostics& d, size_t min_len,
                                             size_t max_len) {
  std::optional<std::string> s = ReadString(f, d);
  if (!s) return std::nullopt;
  if (s->size() < min_len || s->size() > max_len) {
    std::string msg = min_len == 0 ? "must be at most " + std::to_string(max_len) + " characters"
                                   : "must be " + std::to_string(min_len) + "-" +
                                         std::to_string(max_len) + " characters";
    d.Error(f.at(), f.path, msg);
    return std::nullopt;
  }
  return s;
}

void CheckLabels(const Field& f, Diagnostics& d, Labels* labels) {
  if (!ExpectMap(f, d)) return;
  for (const Field& label : MapEntries(f.value, f.path, d)) {
    std::optional<std::string> v = ReadBoundedString(label, d, 1, 256);
    if (!v) continue;
    if (v->find_first_of(" \t\r\n\f\v") != std::string::npos) {
      d.Error(label.at(), label.path, "must not contain whitespace");
      continue;
    }
    if (labels != nullptr) labels->emplace_back(label.key, *v);
  }
}

// A CIDR prefix length: 0..max, decimal, no sign or leading zeros.
bool IsValidPrefix(std::string_view s, int max) {
  if (s.empty() || s.size() > 3 || (s.size() > 1 && s[0] == '0')) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  return v <= max;
}

}  // namespace

std::optional<std::string> ReadId(const Field& f, Diagnostics& d) {
  ValueKind kind = KindOf(f.value);
  if (kind == ValueKind::kInt) {
    std::optional<int64_t> v = ReadInt(f, d, 1, kIntMax);
    if (!v) return std::nullopt;
    return std::to_string(*v);
  }
  if (kind == ValueKind::kString) {
    const std::string& s = f.value.Scalar();
    bool ok = !s.empty() && s.size() <= 64;
    for (char c : s) {
      if (!IsIdChar(c)) ok = false;
    }
    if (ok) return s;
  }
  d.Error(f.at(), f.path,
          "invalid id: must be a string of 1-64 characters from [a-zA-Z0-9-_.] or an "
          "integer >= 1");
  return std::nullopt;
}

bool IsValidHost(std::string_view host) {
  if (host == "*") return true;
  if (!host.empty() && host[0] == '*') host.remove_prefix(1);
  if (host.empty()) return false;
  for (char c : host) {
    if (!IsHostChar(c)) return false;
  }
  return true;
}

std::optional<std::string> ReadHost(const Field& f, Diagnostics& d) {
  std::optional<std::string> s = ReadString(f, d);
  if (!s) return std::nullopt;
  if (!IsValidHost(*s)) {
    d.Error(f.at(), f.path,
            "invalid host \"" + *s + "\": must be `*` or match ^\\*?[0-9a-zA-Z-._\\[\\]:]+$");
    return std::nullopt;
  }
  return s;
}

std::optional<std::string> ReadLowerHost(const Field& f, Diagnostics& d) {
  std::optional<std::string> host = ReadHost(f, d);
  if (!host) return std::nullopt;
  return base::ToLower(*host);
}

bool IsValidIpOrCidr(std::string_view s) {
  std::string_view ip = s;
  std::string_view prefix;
  bool has_prefix = false;
  if (size_t slash = s.find('/'); slash != std::string_view::npos) {
    ip = s.substr(0, slash);
    prefix = s.substr(slash + 1);
    has_prefix = true;
  }
  std::string ip_text(ip);
  unsigned char buf[16];
  if (inet_pton(AF_INET, ip_text.c_str(), buf) == 1) {
    return !has_prefix || IsValidPrefix(prefix, 32);
  }
  if (inet_pton(AF_INET6, ip_text.c_str(), buf) == 1) {
    return !has_prefix || IsValidPrefix(prefix, 128);
  }
  return false;
}

std::optional<std::string> ReadIpOrCidr(const Field& f, Diagnostics& d) {
  std::optional<std::string> s = ReadString(f, d);
  if (!s) return std::nullopt;
  if (!IsValidIpOrCidr(*s)) {
    d.Error(f.at(), f.path, "invalid IP address or CIDR \"" + *s + "\"");
    return std::nullopt;
  }
  return s;
}

std::optional<std::string> ReadIp(const Field& f, Diagnostics& d) {
  std::optional<std::string> s = ReadString(f, d);
  if (!s) return std::nullopt;
  std::string ip = *s;
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  unsigned char buf[16];
  if (inet_pton(AF_INET, ip.c_str(), buf) != 1 && inet_pton(AF_INET6, ip.c_str(), buf) != 1) {
    d.Error(f.at(), f.path, "invalid IP address \"" + *s + "\"");
    return std::nullopt;
  }
  return ip;
}

std::optional<Timeout> ReadTimeout(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  Timeout t;
  bool ok = true;
  bool seen[3] = {false, false, false};
  for (const Field& part : MapEntries(f.value, f.path, d)) {
    double* slot = nullptr;
    int index = 0;
    if (part.key == "connect") {
      slot = &t.connect;
      index = 0;
    } else if (part.key == "send") {
      slot = &t.send;
      index = 1;
    } else if (part.key == "read") {
      slot = &t.read;
      index = 2;
    } else {
      d.Warning(part.key_node, part.path, "unknown key, ignored");
      continue;
    }
    seen[index] = true;
    if (std::optional<double> v = ReadNumber(part, d, 0, /*exclusive_min=*/true)) {
      *slot = *v;
    } else {
      ok = false;
    }
  }
  static constexpr const char* kNames[3] = {"connect", "send", "read"};
  for (int i = 0; i < 3; ++i) {
    if (!seen[i]) {
      d.Error(f.at(), f.path, std::string("missing required field \"") + kNames[i] + "\"");
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return t;
}

bool CheckMetadataField(const Field& f, Diagnostics& d, std::string* name, Labels* labels) {
  if (f.key == "name") {
    if (std::optional<std::string> s = ReadBoundedString(f, d, 1, 256)) *name = *s;
  } else if (f.key == "desc") {
    ReadBoundedString(f, d, 0, 256);
  } else if (f.key == "labels") {
    CheckLabels(f, d, labels);
  } else if (f.key == "create_time" || f.key == "update_time") {
    ReadInt(f, d, kIntMin, kIntMax);
  } else {
    return false;
  }
  return true;
}

void WarnNotSupported(const Field& f, Diagnostics& d) {
  d.Warning(f.key_node, f.path, "not supported yet, ignored");
}

}  // namespace turnpike::config
