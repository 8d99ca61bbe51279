// PluginRegistry: the plugin kinds this binary has, by name. Filled explicitly by daemon/
// (no static-initialiser registration); read-only afterwards, shared by snapshot builds.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/plugin.h"

namespace turnpike::proxy {

class PluginRegistry {
 public:
  void Register(std::unique_ptr<PluginFactory> factory);
  // nullptr when no plugin of that name exists.
  const PluginFactory* Find(std::string_view name) const;
  std::vector<std::string> Names() const;
  // Every factory, in registration order (the daemon starts their services in this order).
  std::vector<const PluginFactory*> Factories() const;

 private:
  std::vector<std::unique_ptr<PluginFactory>> factories_;
};

// A compiled plugin chain: instances ordered by priority (highest first), as APISIX runs
// them. Immutable; part of a snapshot.
struct PluginChain {
  struct Entry {
    std::string name;
    int priority = 0;
    PluginConstSharedPtr plugin;
    // The configuration names a post_arg_* variable (in a vars expression or a $template):
    // form bodies must be read before the request phases (see Route::needs_post_args).
    bool reads_post_args = false;
    bool reads_request_body = false;  // Plugin::reads_request_body()
  };
  std::vector<Entry> entries;
  uint32_t phases = 0;  // union of the entries' phases

  void Sort();  // by priority desc, stable; recomputes `phases`
};

}  // namespace turnpike::proxy
