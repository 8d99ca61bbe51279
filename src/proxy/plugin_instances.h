// PluginInstances: a snapshot's plugin instances by identity, so that the next build keeps
// the instances whose configuration is unchanged instead of creating new ones. A kept
// instance is the same PluginConstSharedPtr, so each worker keeps its worker state
// (proxy/worker_states.h) across the reload: a Redis connection, counters.
//
// An instance's identity is its plugin name, its owner (PluginOwner kind and id) and its conf
// after `_meta` handling, plus, per plugin name, its plugin_metadata and plugin_attr, and
// the factory environment of the build (registry, metrics registry, clock, worker count).
// Values are encoded by AppendEncoded(): lossless and type-strict (an integer is not the
// float of the same value; signed and unsigned integers are alike), so equal encodings mean
// equal values. nlohmann's dump() would throw on the invalid UTF-8 that YAML strings may
// hold, or with error_handler_t::replace make different strings equal. Objects are sorted
// maps, so the order of keys in the file does not matter.
//
// Built on the control thread by BuildSnapshot (Add, then Seal), then immutable and read by
// the next build. Memory: the encoded identity of every instance once, in one buffer, plus 40
// bytes per instance; the conf's plugin_metadata is kept once per plugin name, not per
// instance. Find() is a binary search over hashes and one comparison of the identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/plugin_registry.h"
#include "turnpike/clock.h"
#include "turnpike/factory_context.h"
#include "turnpike/metrics.h"
#include "turnpike/plugin.h"

namespace turnpike::proxy {

class PluginInstances {
 public:
  // What every factory of a build shares (FactoryContext, the registry): an instance made in
  // another environment is never kept. Null metrics means a registry of the build's own,
  // which dies with the build: nothing is kept then.
  struct Environment {
    const PluginRegistry* registry = nullptr;
    const MetricsRegistry* metrics = nullptr;
    const Clock* clock = nullptr;
    int workers = 0;
    bool operator==(const Environment&) const = default;
  };

  // Appends the encoding of `v` to `out`: a type tag, then the value; strings and sizes are
  // length-prefixed, so the encoding of a sequence of values is unambiguous.
  static void AppendEncoded(std::string* out, const nlohmann::json& v);
  // The identity of an instance without its plugin's metadata and attr (see Settings).
  static void AppendIdentity(std::string* out, PluginOwner owner, std::string_view plugin,
                             const nlohmann::json& conf);
  static uint64_t Hash(std::string_view identity);

  // Build side, in this order: environment, Add / Truncate / SetSettings, then Seal.
  void set_environment(const Environment& env) { env_ = env; }
  // Reserves for about as many instances as `like` has.
  void ReserveLike(const PluginInstances& like);
  void Add(std::string_view identity, uint64_t hash, PluginConstSharedPtr plugin);
  // Entries added so far; Truncate(n) drops those added after the first n (an owner that was
  // skipped: its instances are not in the snapshot).
  size_t size() const { return items_.size(); }
  void Truncate(size_t n);
  // The encoding of `plugin`'s metadata and attr (AppendEncoded of each) in this build.
  void SetSettings(std::string_view plugin, std::string encoding);
  void Seal();

  // Lookup side (the previous snapshot's, sealed).
  const Environment& environment() const { return env_; }
  // The instance of `identity` (with its Hash()), or null.
  const PluginConstSharedPtr* Find(std::string_view identity, uint64_t hash) const;
  // The settings encoding of `plugin`, or null when this snapshot has no instance of it.
  const std::string* Settings(std::string_view plugin) const;
  // Heap bytes this index keeps (benchmarks), not counting the instances themselves.
  size_t memory_bytes() const;

 private:
  struct Item {
    uint64_t hash = 0;
    size_t offset = 0;  // of the identity in keys_
    size_t size = 0;
    PluginConstSharedPtr plugin;
  };
  Environment env_;
  std::string keys_;                                           // the identities, one after another
  std::vector<Item> items_;                                    // sorted by hash once sealed
  std::vector<std::pair<std::string, std::string>> settings_;  // by plugin name; a handful
};

}  // namespace turnpike::proxy
