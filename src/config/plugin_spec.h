// `plugins` objects (routes, services, plugin configs, global rules), plugin configs, global
// rules, and the plugin lists of config.yaml and apisix.yaml.
//
// Internal to config/. Control thread only.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// A `plugins` object: each key is a plugin name, each value that plugin's configuration,
// converted with ReadJson. A value must be a map; a null value (`prometheus:` with nothing
// after it) counts as an empty map, because APISIX's YAML loader turns null into an empty
// table, which passes APISIX's "plugin conf must be a table" check. The configuration
// itself is validated later, by the plugin. Returns nullopt after recording errors.
std::optional<std::vector<PluginSpec>> ReadPlugins(const Field& f, Diagnostics& d);

// One `plugin_configs` item: id and plugins required; name, desc, labels, create_time,
// update_time accepted. Returns nullopt when the item must be skipped.
std::optional<PluginConfigSpec> ParsePluginConfig(const Field& f, Diagnostics& d);

// One `global_rules` item: id and plugins required; create_time, update_time accepted.
std::optional<GlobalRuleSpec> ParseGlobalRule(const Field& f, Diagnostics& d);

// One `plugin_metadata` item: `id` (the plugin's name, a non-empty string) required; the
// other fields are the metadata, converted with ReadJson and validated by the plugin.
// Returns nullopt when the item must be skipped.
std::optional<PluginMetadataSpec> ParsePluginMetadata(const Field& f, Diagnostics& d);

// config.yaml's `plugin_attr`: a map of plugin name to an object (null: an empty object).
// An entry that is not a map is an error (so config.yaml is rejected, as for any bad value).
std::vector<std::pair<std::string, nlohmann::json>> ReadPluginAttr(const Field& f, Diagnostics& d);

// apisix.yaml's top-level `plugins`: a list of {name, stream?}. Returns the names of the
// HTTP plugins (stream ones are dropped) in file order, repeats removed with a warning; null
// is an empty list. As in APISIX the list is one item: any invalid entry rejects the whole
// list (nullopt, errors recorded), and config.yaml's list stays in force.
std::optional<std::vector<std::string>> ParseEnabledPlugins(const Field& f, Diagnostics& d);

// config.yaml's top-level `plugins`: a list of non-empty plugin names; repeats are removed
// with a warning (APISIX loads each plugin once).
std::optional<std::vector<std::string>> ReadPluginNames(const Field& f, Diagnostics& d);

}  // namespace turnpike::config
