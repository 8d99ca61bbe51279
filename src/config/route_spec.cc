#include "config/route_spec.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "base/strings.h"
#include "config/spec_fields.h"
#include "config/upstream_spec.h"

namespace turnpike::config {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr size_t kMaxUriLength = 4096;

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::optional<std::string> ReadUri(const Field& f, Diagnostics& d) {
  std::optional<std::string> uri = ReadString(f, d);
  if (!uri) return std::nullopt;
  if (uri->empty() || uri->size() > kMaxUriLength) {
    d.Error(f.at(), f.path, "must be 1-4096 characters");
    return std::nullopt;
  }
  return uri;
}

// Reads a non-empty list of unique strings, each checked by `read_one`, into `out`.
template <typename ReadOne>
void ReadUniqueList(const Field& f, Diagnostics& d, bool allow_empty, ReadOne read_one,
                    std::vector<std::string>* out) {
  if (!ExpectList(f, d)) return;
  if (!allow_empty && f.value.size() == 0) {
    d.Error(f.at(), f.path, "must not be empty");
    return;
  }
  for (const Field& item : ListItems(f.value, f.path)) {
    std::optional<std::string> v = read_one(item, d);
    if (!v) continue;
    if (Contains(*out, *v)) {
      d.Error(item.at(), item.path, "duplicate item \"" + *v + "\"");
      continue;
    }
    out->push_back(std::move(*v));
  }
}

std::optional<std::string> ReadLowerHost(const Field& f, Diagnostics& d) {
  std::optional<std::string> host = ReadHost(f, d);
  if (!host) return std::nullopt;
  return base::ToLower(*host);
}

std::optional<std::string> ReadMethod(const Field& f, Diagnostics& d) {
  return ReadEnum(
      f, d,
      {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"});
}

// Fields the schema accepts but this version ignores: type-checked, then warned about.
bool CheckIgnoredField(const Field& x, Diagnostics& d) {
  bool ok = true;
  if (x.key == "remote_addr" || x.key == "filter_func" || x.key == "script") {
    ok = ReadString(x, d).has_value();
  } else if (x.key == "remote_addrs" || x.key == "vars") {
    ok = ExpectList(x, d);
  } else if (x.key == "plugins") {
    ok = ExpectMap(x, d);
  } else if (x.key == "plugin_config_id" || x.key == "service_id" || x.key == "script_id") {
    ok = ReadId(x, d).has_value();
  } else if (x.key == "enable_websocket") {
    ok = ReadBool(x, d).has_value();
  } else {
    return false;
  }
  if (ok) WarnNotSupported(x, d);
  return true;
}

// "at most one of a / b": records an error at the second one.
void CheckExclusive(const Field* a, const Field* b, Diagnostics& d) {
  if (a == nullptr || b == nullptr) return;
  d.Error(b->key_node, b->path, "only one of \"" + a->key + "\" and \"" + b->key + "\" is allowed");
}

}  // namespace

std::optional<RouteSpec> ParseRoute(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  RouteSpec route;
  route.loc = d.Loc(f.at());
  std::vector<Field> fields = MapEntries(f.value, f.path, d);

  for (const Field& x : fields) {
    if (x.key == "id") {
      if (std::optional<std::string> id = ReadId(x, d)) route.id = *id;
    } else if (CheckMetadataField(x, d, &route.name)) {
      // name kept; the rest validated only
    } else if (x.key == "uri") {
      if (std::optional<std::string> uri = ReadUri(x, d)) route.uris.push_back(*uri);
    } else if (x.key == "uris") {
      ReadUniqueList(x, d, /*allow_empty=*/false, ReadUri, &route.uris);
    } else if (x.key == "host") {
      if (std::optional<std::string> host = ReadLowerHost(x, d)) route.hosts.push_back(*host);
    } else if (x.key == "hosts") {
      ReadUniqueList(x, d, /*allow_empty=*/false, ReadLowerHost, &route.hosts);
    } else if (x.key == "methods") {
      ReadUniqueList(x, d, /*allow_empty=*/true, ReadMethod, &route.methods);
    } else if (x.key == "priority") {
      if (std::optional<int64_t> v = ReadInt(x, d, kInt32Min, kInt32Max)) {
        route.priority = static_cast<int>(*v);
      }
    } else if (x.key == "status") {
      if (std::optional<int64_t> v = ReadInt(x, d, 0, 1)) route.status = static_cast<int>(*v);
    } else if (x.key == "timeout") {
      route.timeout = ReadTimeout(x, d);
    } else if (x.key == "upstream") {
      route.upstream = ParseUpstream(x, d);
      if (route.upstream) route.upstream->id.clear();
    } else if (x.key == "upstream_id") {
      if (std::optional<std::string> id = ReadId(x, d)) route.upstream_id = *id;
    } else if (CheckIgnoredField(x, d)) {
      // warned about (or type error recorded)
    } else {
      d.Error(x.key_node, x.path, "unknown field");
    }
  }

  const Field* uri = FindField(fields, "uri");
  const Field* uris = FindField(fields, "uris");
  if (uri == nullptr && uris == nullptr) {
    d.Error(f.at(), f.path, "missing required field \"uri\" or \"uris\"");
  }
  CheckExclusive(uri, uris, d);
  CheckExclusive(FindField(fields, "host"), FindField(fields, "hosts"), d);
  CheckExclusive(FindField(fields, "remote_addr"), FindField(fields, "remote_addrs"), d);
  bool has_target = false;
  for (const char* key : {"plugins", "upstream", "upstream_id", "service_id", "script"}) {
    if (FindField(fields, key) != nullptr) has_target = true;
  }
  if (!has_target) {
    d.Error(f.at(), f.path,
            "one of \"plugins\", \"upstream\", \"upstream_id\", \"service_id\" or \"script\" is "
            "required");
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return route;
}

}  // namespace turnpike::config
