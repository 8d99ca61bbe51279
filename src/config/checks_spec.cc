// Validation of an upstream's `checks` (reference §3.4) into HealthChecksSpec,
// with APISIX's schema (schema_def.lua's health_checker) and its defaults.
#include <algorithm>
#include <string>
#include <vector>

#include "base/strings.h"
#include "config/spec_fields.h"
#include "config/upstream_spec.h"

namespace turnpike::config {
namespace {

// http_statuses: a non-empty list of unique integers in [200, 599].
void ReadStatuses(const Field& f, Diagnostics& d, std::vector<int>* out) {
  if (!ExpectList(f, d)) return;
  if (f.value.size() == 0) {
    d.Error(f.at(), f.path, "must not be empty");
    return;
  }
  std::vector<int> statuses;
  for (const Field& item : ListItems(f.value, f.path)) {
    std::optional<int64_t> v = ReadInt(item, d, 200, 599);
    if (!v) continue;
    if (std::find(statuses.begin(), statuses.end(), *v) != statuses.end()) {
      d.Error(item.at(), item.path, "duplicate item " + std::to_string(*v));
      continue;
    }
    statuses.push_back(static_cast<int>(*v));
  }
  *out = std::move(statuses);
}

void ReadCount(const Field& f, Diagnostics& d, int min, int* out) {
  if (std::optional<int64_t> v = ReadInt(f, d, min, 254)) *out = static_cast<int>(*v);
}

void ReadInterval(const Field& f, Diagnostics& d, int* out) {
  if (std::optional<int64_t> v = ReadInt(f, d, 1, 86400 * 365)) *out = static_cast<int>(*v);
}

// The check type: http and tcp; https is in APISIX's enum but needs TLS to the
// node.
void ReadCheckType(const Field& f, Diagnostics& d, std::string* out) {
  std::optional<std::string> v = ReadEnum(f, d, {"http", "https", "tcp"});
  if (v == "https") {
    d.Error(f.at(), f.path,
            "type \"https\" is not supported yet (Turnpike has no TLS to "
            "upstream nodes): use "
            "http or tcp");
  } else if (v) {
    *out = *v;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// req_headers: a non-empty list of unique "Name: value" strings.
void ReadReqHeaders(const Field& f, Diagnostics& d,
                    std::vector<std::pair<std::string, std::string>>* out) {
  if (!ExpectList(f, d)) return;
  if (f.value.size() == 0) {
    d.Error(f.at(), f.path, "must not be empty");
    return;
  }
  std::vector<std::string> seen;
  for (const Field& item : ListItems(f.value, f.path)) {
    std::optional<std::string> v = ReadString(item, d);
    if (!v) continue;
    if (std::find(seen.begin(), seen.end(), *v) != seen.end()) {
      d.Error(item.at(), item.path, "duplicate item \"" + *v + "\"");
      continue;
    }
    seen.push_back(*v);
    const size_t colon = v->find(':');
    std::string name = colon == std::string::npos ? "" : v->substr(0, colon);
    std::string value =
        colon == std::string::npos
            ? ""
            : std::string(base::TrimWhitespace(std::string_view(*v).substr(colon + 1)));
    if (!IsToken(name) || value.find_first_of("\r\n") != std::string::npos) {
      d.Error(item.at(), item.path, "invalid header \"" + *v + "\": expected \"Name: value\"");
      continue;
    }
    const std::string lower = base::ToLower(name);
    if (lower == "host" || lower == "connection" || lower == "content-length" ||
        lower == "transfer-encoding") {
      // The probe sets these itself (Host from checks.active.host or the node).
      d.Warning(item.at(), item.path, "header " + name + " is set by the probe, ignored");
      continue;
    }
    out->emplace_back(std::move(name), std::move(value));
  }
}

void ReadActiveHealthy(const Field& f, Diagnostics& d, ActiveCheckSpec* a) {
  if (!ExpectMap(f, d)) return;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "interval") {
      ReadInterval(x, d, &a->healthy_interval);
    } else if (x.key == "http_statuses") {
      ReadStatuses(x, d, &a->healthy_statuses);
    } else if (x.key == "successes") {
      ReadCount(x, d, 1, &a->healthy_successes);
    } else {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    }
  }
}

void ReadActiveUnhealthy(const Field& f, Diagnostics& d, ActiveCheckSpec* a) {
  if (!ExpectMap(f, d)) return;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "interval") {
      ReadInterval(x, d, &a->unhealthy_interval);
    } else if (x.key == "http_statuses") {
      ReadStatuses(x, d, &a->unhealthy_statuses);
    } else if (x.key == "http_failures") {
      ReadCount(x, d, 1, &a->unhealthy_http_failures);
    } else if (x.key == "tcp_failures") {
      ReadCount(x, d, 1, &a->unhealthy_tcp_failures);
    } else if (x.key == "timeouts") {
      ReadCount(x, d, 1, &a->unhealthy_timeouts);
    } else {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    }
  }
}

void ReadActive(const Field& f, Diagnostics& d, ActiveCheckSpec* a) {
  if (!ExpectMap(f, d)) return;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "type") {
      ReadCheckType(x, d, &a->type);
    } else if (x.key == "timeout") {
      if (std::optional<double> v = ReadNumber(x, d, 0, /*exclusive_min=*/true)) a->timeout = *v;
    } else if (x.key == "concurrency") {
      if (std::optional<int64_t> v = ReadInt(x, d, 1, 1 << 20)) {
        a->concurrency = static_cast<int>(*v);
      }
    } else if (x.key == "host") {
      if (std::optional<std::string> v = ReadHost(x, d)) a->host = *v;
    } else if (x.key == "port") {
      if (std::optional<int64_t> v = ReadInt(x, d, 1, 65535)) a->port = static_cast<int>(*v);
    } else if (x.key == "http_method") {
      std::optional<std::string> v = ReadString(x, d);
      if (v && !IsToken(*v)) {
        d.Error(x.at(), x.path, "invalid method \"" + *v + "\"");
      } else if (v) {
        a->http_method = *v;
      }
    } else if (x.key == "http_path") {
      std::optional<std::string> v = ReadString(x, d);
      const bool visible =
          v && std::all_of(v->begin(), v->end(), [](char c) { return c > 0x20 && c < 0x7f; });
      if (v && (v->empty() || v->front() != '/' || !visible)) {
        d.Error(x.at(), x.path, "invalid path \"" + *v + "\": must start with / (no spaces)");
      } else if (v) {
        a->http_path = *v;
      }
    } else if (x.key == "http_req_body") {
      if (std::optional<std::string> v = ReadString(x, d)) a->http_req_body = *v;
    } else if (x.key == "https_verify_certificate") {
      if (std::optional<bool> v = ReadBool(x, d)) a->https_verify_certificate = *v;
    } else if (x.key == "req_headers") {
      ReadReqHeaders(x, d, &a->req_headers);
    } else if (x.key == "healthy") {
      ReadActiveHealthy(x, d, a);
    } else if (x.key == "unhealthy") {
      ReadActiveUnhealthy(x, d, a);
    } else {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    }
  }
}

void ReadPassive(const Field& f, Diagnostics& d, PassiveCheckSpec* p) {
  if (!ExpectMap(f, d)) return;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "type") {
      ReadCheckType(x, d, &p->type);
    } else if (x.key == "healthy") {
      if (!ExpectMap(x, d)) continue;
      for (const Field& y : MapEntries(x.value, x.path, d)) {
        if (y.key == "http_statuses") {
          ReadStatuses(y, d, &p->healthy_statuses);
        } else if (y.key == "successes") {
          ReadCount(y, d, 0, &p->healthy_successes);
        } else {
          d.Warning(y.key_node, y.path, "unknown key, ignored");
        }
      }
    } else if (x.key == "unhealthy") {
      if (!ExpectMap(x, d)) continue;
      for (const Field& y : MapEntries(x.value, x.path, d)) {
        if (y.key == "http_statuses") {
          ReadStatuses(y, d, &p->unhealthy_statuses);
        } else if (y.key == "http_failures") {
          ReadCount(y, d, 0, &p->unhealthy_http_failures);
        } else if (y.key == "tcp_failures") {
          ReadCount(y, d, 0, &p->unhealthy_tcp_failures);
        } else if (y.key == "timeouts") {
          ReadCount(y, d, 0, &p->unhealthy_timeouts);
        } else {
          d.Warning(y.key_node, y.path, "unknown key, ignored");
        }
      }
    } else {
      d.Warning(x.key_node, x.path, "unknown key, ignored");
    }
  }
}

}  // namespace

std::optional<HealthChecksSpec> ParseHealthChecks(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  const size_t errors_before = d.errors().size();
  HealthChecksSpec spec;
  bool has_active = false;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "active") {
      has_active = true;
      ReadActive(x, d, &spec.active);
    } else if (x.key == "passive") {
      spec.passive.emplace();
      ReadPassive(x, d, &*spec.passive);
    } else {
      d.Error(x.key_node, x.path,
              "unknown field");  // additionalProperties: false
    }
  }
  // APISIX: anyOf {required: [active]}, {required: [active, passive]}.
  if (!has_active) d.Error(f.at(), f.path, "missing required field \"active\"");
  if (d.errors().size() != errors_before) return std::nullopt;
  return spec;
}

}  // namespace turnpike::config
