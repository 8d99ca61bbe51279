// apisix.yaml / apisix.json (standalone file providers): #END check (YAML), top-level
// collections (each must be a list, or the file is rejected), per-item validation with
// skip-on-error, id normalization and duplicate detection.
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/courtesy.h"
#include "base/strings.h"
#include "config/json_document.h"
#include "config/loader.h"
#include "config/plugin_spec.h"
#include "config/route_spec.h"
#include "config/service_spec.h"
#include "config/upstream_spec.h"
#include "config/yaml_util.h"

namespace turnpike::config {
namespace {

// APISIX looks for `^#END\s*$` in the last 1..10 bytes of the file.
constexpr size_t kEndFlagWindow = 10;

bool IsPcreSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool HasEndFlag(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && IsPcreSpace(text[end - 1])) --end;
  if (end < 4 || text.substr(end - 4, 4) != "#END") return false;
  return text.size() - (end - 4) <= kEndFlagWindow;
}

// Top-level APISIX collections this version does not load.
bool IsUnsupportedCollection(std::string_view key) {
  static constexpr std::string_view kKeys[] = {"consumers",     "consumer_groups", "ssls",
                                               "stream_routes", "protos",          "secrets"};
  for (std::string_view k : kKeys) {
    if (key == k) return true;
  }
  return false;
}

// APISIX's top-level collections, loaded or not (apisix-behaviour.md §1.2): each is a list.
bool IsCollection(std::string_view key) {
  static constexpr std::string_view kLoaded[] = {"routes",         "services",     "upstreams",
                                                 "plugin_configs", "global_rules", "plugins",
                                                 "plugin_metadata"};
  for (std::string_view k : kLoaded) {
    if (key == k) return true;
  }
  return IsUnsupportedCollection(key);
}

// Checks the shape of a top-level collection before any item is read. A list is read item by
// item. Null (`routes:` with every item commented out) and an empty map (`routes: {}`, which
// APISIX cannot tell from `[]`: both are an empty Lua table) are empty collections: `f.value`
// becomes null. Anything else (`routes: {uri: /x}`, `routes: 5`) is an error that rejects
// the whole file, as a missing `#END` does: applying it as "no routes" would take every route
// down on one typo. Returns false after recording that error.
bool CheckCollectionShape(Field& f, Diagnostics& d) {
  if (f.value.IsSequence() || f.value.IsNull()) return true;
  if (f.value.IsMap() && f.value.size() == 0) {
    f.value = YamlNode();
    return true;
  }
  d.Error(f.at(), f.path,
          std::string("wrong type: expected list, got ") + KindName(KindOf(f.value)) +
              "; the file is rejected");
  return false;
}

// Validates every item of one collection; valid items with a fresh id go to `out`.
// REQUIRES: CheckCollectionShape(f) passed.
template <typename Spec, typename ParseFn>
void CollectItems(const Field& f, Diagnostics& d, const RoutesParseOptions& options, ParseFn parse,
                  std::vector<Spec>* out) {
  if (f.value.IsNull()) return;  // `routes:` with everything commented out, or `{}`
  std::unordered_map<std::string, int> first_line;  // id -> line of the first item
  first_line.reserve(f.value.size());
  out->reserve(out->size() + f.value.size());  // specs are large; growing would copy them
  size_t index = 0;
  for (const Field& item : ListItems(f.value, f.path)) {
    base::CourtesyPoint();
    ++index;
    Diagnostics item_d(d.file());
    std::optional<Spec> spec = parse(item, item_d);
    if (spec) {
      if (spec->id.empty()) spec->id = "arr_" + std::to_string(index);
      auto [it, inserted] = first_line.emplace(spec->id, spec->loc.line);
      if (!inserted) {
        item_d.Error(spec->loc, ChildPath(item.path, "id"),
                     "duplicate id \"" + spec->id + "\" (first defined at line " +
                         std::to_string(it->second) + "), item skipped");
        spec.reset();
      }
    }
    d.Absorb(item_d, /*drop_warnings=*/!spec);
    if (!spec) continue;
    // Routes, services and upstreams keep their source for the control API's view.
    if constexpr (requires { spec->source; }) {
      if (options.keep_source) AppendYamlAsJson(item.value, &spec->source);
    }
    out->push_back(std::move(*spec));
  }
}

// nullopt when a collection is not a list (every such collection is reported).
std::optional<RoutesConfig> ParseCollections(const YamlNode& root, Diagnostics& d,
                                             const RoutesParseOptions& options) {
  RoutesConfig config;
  config.file = d.file();
  if (root.IsNull()) return config;
  std::vector<Field> fields = MapEntries(root, "", d);
  bool shapes_ok = true;
  for (Field& f : fields) {
    if (IsCollection(f.key) && !CheckCollectionShape(f, d)) shapes_ok = false;
  }
  if (!shapes_ok) return std::nullopt;
  for (const Field& f : fields) {
    if (f.key == "routes") {
      CollectItems(f, d, options, ParseRoute, &config.routes);
    } else if (f.key == "upstreams") {
      CollectItems(f, d, options, ParseUpstream, &config.upstreams);
    } else if (f.key == "services") {
      CollectItems(f, d, options, ParseService, &config.services);
    } else if (f.key == "plugin_configs") {
      CollectItems(f, d, options, ParsePluginConfig, &config.plugin_configs);
    } else if (f.key == "global_rules") {
      CollectItems(f, d, options, ParseGlobalRule, &config.global_rules);
    } else if (f.key == "plugin_metadata") {
      CollectItems(f, d, options, ParsePluginMetadata, &config.plugin_metadata);
    } else if (f.key == "plugins") {
      config.enabled_plugins = ParseEnabledPlugins(f, d);
    } else if (IsUnsupportedCollection(f.key)) {
      d.Warning(f.key_node, f.path, "not supported yet, ignored");
    } else {
      d.Warning(f.key_node, f.path, "unknown key, ignored");
    }
  }
  return config;
}

std::optional<RoutesConfig> ParseYaml(std::string_view text, Diagnostics& d,
                                      const RoutesParseOptions& options) {
  if (!HasEndFlag(text)) {
    d.Error(SourceLoc{d.file(), 0, 0}, "", "missing valid end flag `#END`");
    return std::nullopt;
  }
  std::optional<YamlDocument> doc = LoadDocument(text, d);
  if (!doc) return std::nullopt;
  return ParseCollections(doc->root(), d, options);
}

std::optional<RoutesConfig> ParseJson(std::string_view text, Diagnostics& d,
                                      const RoutesParseOptions& options) {
  std::optional<YamlDocument> doc = LoadJsonDocument(text, d);
  if (!doc) return std::nullopt;
  return ParseCollections(doc->root(), d, options);
}

// Runs `parse` with exceptions contained.
template <typename ParseFn>
LoadResult<RoutesConfig> RunParser(std::string_view text, const std::string& file,
                                   const RoutesParseOptions& options, ParseFn parse) {
  LoadResult<RoutesConfig> result;
  Diagnostics d(file);
  try {
    result.value = parse(text, d, options);
  } catch (const std::exception& e) {
    // Defensive: helpers check types before converting, so this should not happen.
    result.value.reset();
    d.Error(SourceLoc{file, 0, 0}, "", std::string("internal error while loading: ") + e.what());
  }
  result.errors = std::move(d.errors());
  result.warnings = std::move(d.warnings());
  return result;
}

}  // namespace

LoadResult<RoutesConfig> ParseRoutesConfig(std::string_view text, const std::string& file,
                                           const RoutesParseOptions& options) {
  return RunParser(text, file, options, ParseYaml);
}

LoadResult<RoutesConfig> ParseRoutesConfigJson(std::string_view text, const std::string& file,
                                               const RoutesParseOptions& options) {
  return RunParser(text, file, options, ParseJson);
}

bool IsJsonRoutesFile(const std::string& path) {
  if (path.size() < 5) return false;
  std::string ext = base::ToLower(path.substr(path.size() - 5));
  return ext == ".json";
}

LoadResult<RoutesConfig> ParseRoutesConfigForPath(std::string_view text, const std::string& path,
                                                  const RoutesParseOptions& options) {
  return IsJsonRoutesFile(path) ? ParseRoutesConfigJson(text, path, options)
                                : ParseRoutesConfig(text, path, options);
}

LoadResult<RoutesConfig> LoadRoutesConfig(const std::string& path) {
  Diagnostics d(path);
  std::string text;
  if (!ReadWholeFile(path, d, &text)) {
    LoadResult<RoutesConfig> result;
    result.errors = std::move(d.errors());
    return result;
  }
  return ParseRoutesConfigForPath(text, path);
}

}  // namespace turnpike::config
