#include "config/route_spec.h"

#include <limits>
#include <string>
#include <vector>

#include "config/plugin_spec.h"
#include "config/spec_fields.h"
#include "config/upstream_spec.h"

namespace turnpike::config {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr size_t kMaxUriLength = 4096;

std::optional<std::string> ReadUri(const Field& f, Diagnostics& d) {
  std::optional<std::string> uri = ReadString(f, d);
  if (!uri) return std::nullopt;
  if (uri->empty() || uri->size() > kMaxUriLength) {
    d.Error(f.at(), f.path, "must be 1-4096 characters");
    return std::nullopt;
  }
  return uri;
}

std::optional<std::string> ReadMethod(const Field& f, Diagnostics& d) {
  return ReadEnum(
      f, d,
      {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"});
}

// Fields the schema accepts but this version ignores: type-checked, then warned about.
bool CheckIgnoredField(const Field& x, Diagnostics& d) {
  bool ok = true;
  if (x.key == "filter_func" || x.key == "script") {
    ok = ReadString(x, d).has_value();
  } else if (x.key == "script_id") {
    ok = ReadId(x, d).has_value();
  } else {
    return false;
  }
  if (ok) WarnNotSupported(x, d);
  return true;
}

// A non-empty list of unique items appended to `out` (which may already hold the singular
// form's value: having both is reported by CheckExclusive, not as a duplicate).
template <typename ReadOne>
void AppendUniqueList(const Field& f, Diagnostics& d, ReadOne read_one,
                      std::vector<std::string>* out) {
  std::vector<std::string> items;
  ReadUniqueList(f, d, /*allow_empty=*/false, read_one, &items);
  out->insert(out->end(), items.begin(), items.end());
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
  route.path = f.path;
  std::vector<Field> fields = MapEntries(f.value, f.path, d);

  for (const Field& x : fields) {
    if (x.key == "id") {
      if (std::optional<std::string> id = ReadId(x, d)) route.id = *id;
    } else if (CheckMetadataField(x, d, &route.name, &route.labels)) {
      // name and labels kept; the rest validated only
    } else if (x.key == "uri") {
      if (std::optional<std::string> uri = ReadUri(x, d)) route.uris.push_back(*uri);
    } else if (x.key == "uris") {
      AppendUniqueList(x, d, ReadUri, &route.uris);
    } else if (x.key == "host") {
      if (std::optional<std::string> host = ReadLowerHost(x, d)) route.hosts.push_back(*host);
    } else if (x.key == "hosts") {
      AppendUniqueList(x, d, ReadLowerHost, &route.hosts);
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
    } else if (x.key == "service_id") {
      if (std::optional<std::string> id = ReadId(x, d)) route.service_id = *id;
    } else if (x.key == "plugin_config_id") {
      if (std::optional<std::string> id = ReadId(x, d)) route.plugin_config_id = *id;
    } else if (x.key == "plugins") {
      if (std::optional<std::vector<PluginSpec>> p = ReadPlugins(x, d)) {
        route.plugins = std::move(*p);
      }
    } else if (x.key == "remote_addr") {
      if (std::optional<std::string> a = ReadIpOrCidr(x, d)) route.remote_addrs.push_back(*a);
    } else if (x.key == "remote_addrs") {
      AppendUniqueList(x, d, ReadIpOrCidr, &route.remote_addrs);
    } else if (x.key == "vars") {
      if (ExpectList(x, d)) {
        if (std::optional<nlohmann::json> expr = ReadJson(x, d)) {
          route.vars = VarsSpec{std::move(*expr), d.Loc(x.at()), x.path};
        }
      }
    } else if (x.key == "enable_websocket") {
      route.enable_websocket = ReadBool(x, d);
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
  if (const Field* script = FindField(fields, "script")) {
    for (const char* key : {"plugins", "plugin_config_id"}) {
      if (FindField(fields, key) != nullptr) {
        d.Error(script->key_node, script->path,
                std::string("\"script\" cannot be used with \"") + key + "\"");
      }
    }
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return route;
}

}  // namespace turnpike::config
