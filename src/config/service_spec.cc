#include "config/service_spec.h"

#include <string>
#include <utility>
#include <vector>

#include "config/plugin_spec.h"
#include "config/spec_fields.h"
#include "config/upstream_spec.h"

namespace turnpike::config {

std::optional<ServiceSpec> ParseService(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  ServiceSpec service;
  service.loc = d.Loc(f.at());
  service.path = f.path;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.key == "id") {
      if (std::optional<std::string> id = ReadId(x, d)) service.id = *id;
    } else if (CheckMetadataField(x, d, &service.name, &service.labels)) {
      // name and labels kept; the rest validated only
    } else if (x.key == "hosts") {
      ReadUniqueList(x, d, /*allow_empty=*/false, ReadLowerHost, &service.hosts);
    } else if (x.key == "upstream") {
      service.upstream = ParseUpstream(x, d);
      if (service.upstream) service.upstream->id.clear();
    } else if (x.key == "upstream_id") {
      if (std::optional<std::string> id = ReadId(x, d)) service.upstream_id = *id;
    } else if (x.key == "plugins") {
      if (std::optional<std::vector<PluginSpec>> p = ReadPlugins(x, d)) {
        service.plugins = std::move(*p);
      }
    } else if (x.key == "enable_websocket") {
      if (std::optional<bool> v = ReadBool(x, d)) service.enable_websocket = *v;
    } else if (x.key == "script") {
      if (ReadString(x, d)) WarnNotSupported(x, d);
    } else {
      d.Error(x.key_node, x.path, "unknown field");
    }
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return service;
}

}  // namespace turnpike::config
