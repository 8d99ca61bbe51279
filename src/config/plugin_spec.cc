#include "config/plugin_spec.h"

#include <algorithm>
#include <utility>

#include "config/spec_fields.h"

namespace turnpike::config {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Adds `name` unless already present (then warns at `at`).
void AddPluginName(const Field& at, Diagnostics& d, std::string name,
                   std::vector<std::string>* out) {
  if (Contains(*out, name)) {
    d.Warning(at.at(), at.path, "duplicate plugin \"" + name + "\", ignored");
    return;
  }
  out->push_back(std::move(name));
}

// The fields both plugin configs and global rules have: returns false for other keys.
template <typename Spec>
bool ReadCommonField(const Field& x, Diagnostics& d, Spec* spec, bool* ok) {
  if (x.key == "id") {
    if (std::optional<std::string> id = ReadId(x, d)) spec->id = *id;
  } else if (x.key == "plugins") {
    if (std::optional<std::vector<PluginSpec>> plugins = ReadPlugins(x, d)) {
      spec->plugins = std::move(*plugins);
    } else {
      *ok = false;
    }
  } else if (x.key == "create_time" || x.key == "update_time") {
    std::string unused;
    CheckMetadataField(x, d, &unused);
  } else {
    return false;
  }
  return true;
}

void RequireFields(const Field& f, const std::vector<Field>& fields, Diagnostics& d,
                   std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (FindField(fields, key) == nullptr) {
      d.Error(f.at(), f.path, std::string("missing required field \"") + key + "\"");
    }
  }
}

}  // namespace

std::optional<std::vector<PluginSpec>> ReadPlugins(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  std::vector<PluginSpec> plugins;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    PluginSpec plugin{x.key, nlohmann::json::object(), d.Loc(x.key_node), x.path};
    if (!x.value.IsNull()) {
      if (!ExpectMap(x, d)) continue;
      std::optional<nlohmann::json> conf = ReadJson(x, d);
      if (!conf) continue;
      plugin.conf = std::move(*conf);
    }
    plugins.push_back(std::move(plugin));
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return plugins;
}

std::optional<PluginConfigSpec> ParsePluginConfig(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  PluginConfigSpec spec;
  spec.loc = d.Loc(f.at());
  spec.path = f.path;
  std::vector<Field> fields = MapEntries(f.value, f.path, d);
  bool ok = true;
  for (const Field& x : fields) {
    if (ReadCommonField(x, d, &spec, &ok)) continue;
    if (x.key == "name") {
      ReadString(x, d);  // APISIX: any string
    } else if (x.key == "desc" || x.key == "labels") {
      std::string unused;
      CheckMetadataField(x, d, &unused);
    } else {
      d.Error(x.key_node, x.path, "unknown field");
    }
  }
  RequireFields(f, fields, d, {"id", "plugins"});
  if (!ok || d.errors().size() != errors_before) return std::nullopt;
  return spec;
}

std::optional<GlobalRuleSpec> ParseGlobalRule(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  GlobalRuleSpec spec;
  spec.loc = d.Loc(f.at());
  spec.path = f.path;
  std::vector<Field> fields = MapEntries(f.value, f.path, d);
  bool ok = true;
  for (const Field& x : fields) {
    if (!ReadCommonField(x, d, &spec, &ok)) d.Error(x.key_node, x.path, "unknown field");
  }
  RequireFields(f, fields, d, {"id", "plugins"});
  if (!ok || d.errors().size() != errors_before) return std::nullopt;
  return spec;
}

std::optional<PluginMetadataSpec> ParsePluginMetadata(const Field& f, Diagnostics& d) {
  if (!ExpectMap(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  PluginMetadataSpec spec;
  spec.loc = d.Loc(f.at());
  spec.path = f.path;
  spec.fields = nlohmann::json::object();
  std::vector<Field> fields = MapEntries(f.value, f.path, d);
  for (const Field& x : fields) {
    if (x.key == "id") {
      std::optional<std::string> id = ReadString(x, d);
      if (id && id->empty()) d.Error(x.at(), x.path, "must not be empty");
      if (id) spec.id = *id;
      continue;
    }
    if (x.value.IsNull()) {
      spec.fields[x.key] = nullptr;
      continue;
    }
    if (std::optional<nlohmann::json> v = ReadJson(x, d)) spec.fields[x.key] = std::move(*v);
  }
  RequireFields(f, fields, d, {"id"});
  if (d.errors().size() != errors_before) return std::nullopt;
  return spec;
}

std::vector<std::pair<std::string, nlohmann::json>> ReadPluginAttr(const Field& f, Diagnostics& d) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  if (!ExpectMap(f, d)) return out;
  for (const Field& x : MapEntries(f.value, f.path, d)) {
    if (x.value.IsNull()) {
      out.emplace_back(x.key, nlohmann::json::object());
      continue;
    }
    if (!ExpectMap(x, d)) continue;
    if (std::optional<nlohmann::json> v = ReadJson(x, d)) out.emplace_back(x.key, std::move(*v));
  }
  return out;
}

std::optional<std::vector<std::string>> ParseEnabledPlugins(const Field& f, Diagnostics& d) {
  std::vector<std::string> names;
  if (f.value.IsNull()) return names;
  if (!ExpectList(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  for (const Field& item : ListItems(f.value, f.path)) {
    if (!ExpectMap(item, d)) continue;
    std::optional<std::string> name;
    bool stream = false;
    std::vector<Field> fields = MapEntries(item.value, item.path, d);
    for (const Field& x : fields) {
      if (x.key == "name") {
        name = ReadString(x, d);
        if (name && name->empty()) {
          d.Error(x.at(), x.path, "must not be empty");
          name.reset();
        }
      } else if (x.key == "stream") {
        stream = ReadBool(x, d).value_or(false);
      } else {
        d.Warning(x.key_node, x.path, "unknown key, ignored");
      }
    }
    if (FindField(fields, "name") == nullptr) {
      d.Error(item.at(), item.path, "missing required field \"name\"");
    }
    if (name && !stream) AddPluginName(item, d, std::move(*name), &names);
  }
  if (d.errors().size() != errors_before) {
    d.Error(f.key_node, f.path, "invalid plugin list ignored; config.yaml's plugins stay enabled");
    return std::nullopt;
  }
  return names;
}

std::optional<std::vector<std::string>> ReadPluginNames(const Field& f, Diagnostics& d) {
  if (!ExpectList(f, d)) return std::nullopt;
  size_t errors_before = d.errors().size();
  std::vector<std::string> names;
  for (const Field& item : ListItems(f.value, f.path)) {
    std::optional<std::string> name = ReadString(item, d);
    if (!name) continue;
    if (name->empty()) {
      d.Error(item.at(), item.path, "must not be empty");
      continue;
    }
    AddPluginName(item, d, std::move(*name), &names);
  }
  if (d.errors().size() != errors_before) return std::nullopt;
  return names;
}

}  // namespace turnpike::config
