// Directory: the control thread's table of node sources, feeding each upstream's
// NodeSetSlot (see node_source.h and upstream/node_set_slot.h).
//
// After every published snapshot the daemon hands it the snapshot's bindings (slot + source
// of each upstream the build could not fill). The directory then:
//   - watches the services newly named (DiscoveryProvider::Watch), unwatches those no
//     upstream names any more, and turns each provider answer into node sets; an answer
//     equal to the service's last one is dropped (producers dedupe by value), and one with
//     a node failing the discovery node schema gives no nodes (503, as APISIX);
//   - resolves domain names asynchronously (Resolver), one lookup per distinct name however
//     many upstreams use it, re-resolving every answer's TTL (clamped to
//     [min_refresh_ms, max_refresh_ms]); a failed lookup keeps the last good address (only a
//     name never resolved is left out of its sets: 503 when nothing is left);
//   - builds each new list's node set from the previous one: a node of the same host and
//     port as one of the last list is copied (its address parsed and its texts written
//     once), so a change of 250 nodes in 10k parses 250 (~0.2 ms for the whole answer;
//     bench/discovery_publish_bench). Lists in APISIX's node order (host, then port: the
//     kubernetes provider's) find every such node; others find fewer and parse the rest;
//   - takes an answer in parts (DiscoverySink::PublishParts; kubernetes: one sorted list per
//     EndpointSlice) as parts when it can: each part's nodes are made once into a
//     upstream::NodeBlock, kept while the part stays (by pointer, or by value), and the set is
//     the parts' blocks joined (upstream::NodeList: a pointer per node). A change of one slice
//     of 250 nodes in 10k then makes 250 nodes and writes 10k pointers, instead of comparing,
//     copying and freeing 10k lists' nodes and 10k 192-byte nodes (bench/node_churn.sh). Parts
//     that interleave, or hold a domain name or a node failing the schema, are merged into one
//     list and take the list's path (Stats::parts_merged);
//   - stores a node set in a slot only when it differs from the slot's current one
//     (upstream::SameNodes), so workers rebuild a picker only for real changes. Routes,
//     plugin chains and the router are never rebuilt for a node change. A set for a chash
//     upstream's slot (NodeSetSlot::chash) gets its rings here before it is stored, so no
//     worker builds one (O(points): ~120 ms on this loop for 10k nodes of weights 1 to 5).
// Sets replaced in a slot are released here, on the control thread, once no worker or
// request holds them any more (checked every tick and before each build); the node vector of
// one of them is kept for the next build.
//
// Thread rules: control thread only (the loop given to the constructor).
#pragma once

#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "discovery/node_source.h"
#include "discovery/resolver.h"
#include "turnpike/discovery.h"
#include "turnpike/status.h"
#include "upstream/node_set_slot.h"

namespace turnpike::discovery {

// One upstream's slot and what feeds it.
struct Binding {
  std::string name;  // for logs, e.g. "upstreams/1"
  NodeSourceConstSharedPtr source;
  upstream::NodeSetSlotSharedPtr slot;
};

class Directory {
 public:
  struct Options {
    uint64_t tick_ms = 1000;          // refresh and release check period
    uint64_t min_refresh_ms = 5000;   // an answer is kept at least this long...
    uint64_t max_refresh_ms = 60000;  // ...and at most this long, whatever its TTL
    uint64_t retry_ms = 5000;         // after a failed lookup
  };
  struct Stats {
    uint64_t published = 0;  // provider answers taken (content differed from the last)
    uint64_t deduped = 0;    // provider answers equal to the last one: dropped
    uint64_t stored = 0;     // node sets stored into slots
    uint64_t unchanged = 0;  // rebuilt sets equal to the slot's: not stored
    uint64_t lookups = 0;    // DNS lookups started
    uint64_t invalid = 0;    // provider answers with a node failing the schema: no nodes
    // Answers in parts (DiscoverySink::PublishParts): the nodes built for their new parts (a
    // part equal to one of the last answer's reuses its nodes); the answers whose order was
    // merged from every part, not updated from the last one's (a first answer, many parts
    // changed); and those that could not stay in parts (a domain name, a node failing the
    // schema, a port 0, one host and port twice) and took the path of one merged list.
    uint64_t part_nodes_built = 0;
    uint64_t parts_full_merges = 0;
    uint64_t parts_merged = 0;
  };

  // `resolver` outlives the directory.
  Directory(uv_loop_t* loop, Resolver* resolver, Options options);
  Directory(uv_loop_t* loop, Resolver* resolver) : Directory(loop, resolver, Options{}) {}
  // REQUIRES: Stop() was called and the loop has run its close callbacks (or Start() never
  // was).
  ~Directory();
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;

  // Before Start(): the provider serving upstreams with `discovery_type: name`.
  void AddProvider(std::string name, std::unique_ptr<DiscoveryProvider> provider);
  // Starts the providers and the tick timer. An error names the provider.
  Status Start();
  // Stops the providers, cancels lookups, closes the timer. Slots keep their sets.
  // Idempotent.
  void Stop();

  // The bindings of the snapshot just published (all of them: the previous call's that are
  // missing here are dropped). A binding whose slot was already bound keeps its state.
  void Apply(std::vector<Binding> bindings);

  // True once, after the first Apply(), every source then bound had its first answer
  // (provider answer, and a lookup result for each domain name) and every provider is
  // ready(); stays true afterwards. /status/ready waits for it.
  bool ready() const;

  const Stats& stats() const { return stats_; }
  size_t watched_services() const { return services_.size(); }
  size_t hosts() const { return hosts_.size(); }
  size_t retired() const { return retired_.size(); }
  // Frees replaced sets nobody holds any more (also done every tick).
  void ReleaseRetired();

 private:
  using ServiceKey = std::pair<std::string, ServiceRef>;  // provider, service
  // A part of an answer in parts and the nodes made of it (shared by every set of the
  // service's upstreams that holds them, and by the next answer when the part stays).
  struct Part {
    DiscoveredNodesConstSharedPtr list;
    upstream::NodeBlockConstSharedPtr block;
    bool uniform = true;  // every node of the block has the first's weight and priority
    bool sorted = true;   // the block's nodes ascend by upstream::NodeOrder
  };
  // An answer in parts that stays in parts: its non-empty parts (in order of their first
  // nodes), each node an IP literal with a port that passes the schema, no two nodes of the
  // same host and port; and the parts' nodes merged in (host, port) order, as pointers into
  // their blocks.
  struct Parted {
    std::vector<Part> parts;
    upstream::NodeList nodes;
    upstream::NodeSummary summary;  // of `nodes`
  };
  using PartedConstSharedPtr = std::shared_ptr<const Parted>;
  struct Service {
    DiscoveryProvider* provider = nullptr;
    DiscoveredNodesConstSharedPtr raw;   // the last answer as published (dedupe)
    DiscoveredNodesConstSharedPtr last;  // what it gave: raw, or empty when invalid
    PartedConstSharedPtr parted;         // instead of raw and last: the last answer in parts
    int watchers = 0;
  };
  struct Host {
    int refs = 0;
    bool answered = false;  // a first lookup finished (well or not)
    bool have_addr = false;
    sockaddr_storage addr{};
    socklen_t addr_len = 0;
    bool failing = false;  // the last lookup failed (logged once per failure streak)
    uint64_t lookup = 0;   // resolver id in flight, 0 if none
    uint64_t next_ms = 0;  // loop time of the next lookup
  };
  struct Entry {
    Binding binding;
    Service* service = nullptr;           // discovery sources
    DiscoveredNodesConstSharedPtr nodes;  // the current list (null: no answer yet)...
    PartedConstSharedPtr parted;          // ...or the current answer in parts
    std::vector<std::string> hosts;       // domain names referenced by `nodes`
    bool initial = false;                 // bound by the first Apply(): ready() waits for it
    // What the last build made of `nodes`, so that the next one copies the nodes it already
    // parsed: the set built (or the slot's equal one it was dropped for) and, for each node
    // of `nodes`, the index of its Node in that set (an IP literal), or kDomain / kSkipped.
    upstream::NodeSetConstSharedPtr built;
    std::vector<int32_t> built_at;
    bool built_here = false;    // `built` is a set this directory made (not the slot's equal)
    bool built_parted = false;  // `built` was composed of `parted`'s blocks (Compose)
  };
  struct Retired {
    upstream::NodeSetConstSharedPtr set;
    bool recyclable = false;  // made here: its node vector may be kept for the next build
  };
  static constexpr int32_t kDomain = -1;  // a domain name: its address comes from hosts_
  class Sink;                             // a DiscoverySink per provider

  void OnPublish(const std::string& provider, const ServiceRef& service,
                 DiscoveredNodesConstSharedPtr nodes);
  void OnPublishParts(const std::string& provider, const ServiceRef& service,
                      std::vector<DiscoveredNodesConstSharedPtr> parts);
  // The answer `parts` (non-empty, in order of their first nodes) as a Parted, reusing the
  // blocks of `last`'s equal parts and, when few parts changed, its merged order (the
  // removed parts' nodes dropped, the new ones inserted); null when it cannot stay in parts
  // (see Stats).
  PartedConstSharedPtr MakeParted(const Parted* last,
                                  const std::vector<DiscoveredNodesConstSharedPtr>& parts);
  void SetNodes(Entry* entry, DiscoveredNodesConstSharedPtr nodes);
  void SetParted(Entry* entry, PartedConstSharedPtr parted);
  // The entry's set: entry->parted's nodes (a pointer per node, no node copied), stored when
  // it differs from the slot's.
  void Compose(Entry* entry);
  // Replaces the entry's referenced domain names with `names` (dropping those nobody else
  // references).
  void SetHosts(Entry* entry, std::vector<std::string> names);
  // Stores `set` (summarized, made here) into the entry's slot, retiring what it replaces.
  void StoreBuilt(Entry* entry, std::shared_ptr<upstream::NodeSet> set);
  void Detach(Entry* entry);
  // The node set of entry->nodes, stored in the slot when it differs from the slot's.
  // `previous` is the list entry->built was built from (null: none; entry->nodes itself when
  // only addresses of domain names changed). With `names` (a new list), the domain names of
  // the list are collected there and referenced in hosts_ (their lookups started).
  void Rebuild(Entry* entry, const DiscoveredNodes* previous, std::vector<std::string>* names);
  void Rebuild(Entry* entry) { Rebuild(entry, entry->nodes.get(), nullptr); }
  bool Answered(const Entry& entry) const;
  void Lookup(const std::string& name, Host* host);
  void OnResolved(const std::string& name, const Resolution& result);
  void Tick();

  uv_loop_t* loop_;
  Resolver* resolver_;
  Options options_;
  uv_timer_t tick_{};
  bool started_ = false;
  bool stopped_ = false;
  std::map<std::string, std::unique_ptr<DiscoveryProvider>> providers_;
  std::vector<std::unique_ptr<Sink>> sinks_;
  std::map<ServiceKey, Service> services_;
  std::unordered_map<std::string, Host> hosts_;
  std::unordered_map<const upstream::NodeSetSlot*, Entry> entries_;
  std::vector<Retired> retired_;
  // The node vector of the largest set released, for the next build to overwrite: a
  // changed set of 10k nodes (~2 MB) then neither allocates nor frees its vector, which
  // glibc would give back to the kernel and fault in again each time.
  std::vector<upstream::Node> spare_;
  bool applied_ = false;
  mutable bool ready_ = false;  // latched
  Stats stats_;
};

}  // namespace turnpike::discovery
