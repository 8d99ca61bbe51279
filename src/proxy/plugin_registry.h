// PluginRegistry: the plugin kinds this binary has, by name (base::NamedRegistry), shared
// read-only by snapshot builds; and the compiled PluginChain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/named_registry.h"
#include "turnpike/plugin.h"

namespace turnpike::proxy {

using PluginRegistry = base::NamedRegistry<PluginFactory>;

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
    // Plugin::has_worker_state(): the instance's index in Snapshot::worker_state_plugins,
    // which indexes each worker's states (WorkerStateSet); else kNoWorkerState.
    uint32_t worker_state_slot = kNoWorkerState;
    uint32_t phases = 0;  // plugin->phases(), set by Sort(): the runner reads no vtable
  };
  static constexpr uint32_t kNoWorkerState = UINT32_MAX;
  std::vector<Entry> entries;
  uint32_t phases = 0;  // union of the entries' phases

  void Sort();  // by priority desc, stable; recomputes `phases` and each entry's
};

}  // namespace turnpike::proxy
