#include "router/route_table.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "base/strings.h"
#include "router/byte_trie.h"
#include "router/pattern.h"

namespace turnpike::router {

// Layout: one URI table (a ByteTrie over paths) per distinct host key, plus one for the
// host-less routes. A URI trie's values index `buckets`, each a range of `candidates` in
// match order. The host trie is keyed by reversed hosts; its exact values are the tables of
// exact hosts and its prefix values those of wildcard suffixes, so a single reverse walk
// yields the host candidates in precedence order.
//
// Why a radix trie rather than hash maps probed once per distinct prefix length: one walk
// serves the exact bucket and every prefix bucket, its cost is bounded by the path length
// whatever the prefix lengths in the config, and bench/router_bench.cc
// (BM_PrefixLookup_*) shows it ahead of the length-probing alternative once routes use more
// than a handful of prefix lengths.
struct RouteTable::Impl {
  static constexpr uint32_t kNone = ByteTrie::kNone;

  struct Candidate {
    uint32_t payload;
    uint32_t glob;  // index into globs, or kNone
    base::MethodMask methods;
  };
  struct Bucket {
    uint32_t begin;
    uint32_t end;
  };

  // Tries the bucket's candidates in order; on success stores the payload in *winner.
  bool TryBucket(uint32_t bucket, base::MethodMask mask, std::string_view path, size_t matched,
                 uint32_t* winner) const {
    const Bucket& b = buckets[bucket];
    for (uint32_t i = b.begin; i < b.end; ++i) {
      const Candidate& c = candidates[i];
      if ((c.methods & mask) == 0) continue;
      if (c.glob != kNone && !GlobMatch(globs[c.glob], path.substr(matched))) continue;
      *winner = c.payload;
      return true;
    }
    return false;
  }

  bool TryUriTable(uint32_t table, base::MethodMask mask, std::string_view path,
                   uint32_t* winner) const {
    return uri_tables[table].Walk<false>(path, [&](uint32_t bucket, size_t matched) {
      return TryBucket(bucket, mask, path, matched, winner);
    });
  }

  std::vector<Candidate> candidates;
  std::vector<Bucket> buckets;
  std::vector<std::string> globs;
  std::vector<ByteTrie> uri_tables;
  ByteTrie hosts;
  uint32_t hostless = kNone;
};

namespace {

constexpr uint32_t kNone = ByteTrie::kNone;

// One (route, uri) pair waiting in a bucket during Build().
struct PendingCandidate {
  int priority;
  uint32_t path_len;  // length of the uri as configured
  uint32_t order;     // index of the route in config order
  uint32_t payload;
  base::MethodMask methods;
  std::string glob;
};

using PendingBuckets = std::unordered_map<std::string, std::vector<PendingCandidate>>;

struct PendingTable {
  PendingBuckets exact;
  PendingBuckets prefix;
};

}  // namespace

RouteTable::RouteTable() : impl_(std::make_unique<Impl>()) {}
RouteTable::~RouteTable() = default;

RouteTableConstSharedPtr RouteTable::Build(std::vector<RouteKey> keys) {
  std::shared_ptr<RouteTable> table(new RouteTable());
  table->route_count_ = keys.size();
  Impl& impl = *table->impl_;

  // Group (route, uri) pairs by URI table and bucket.
  std::vector<PendingTable> pending;
  auto table_in = [&pending](uint32_t& slot) {
    if (slot == kNone) {
      slot = static_cast<uint32_t>(pending.size());
      pending.emplace_back();
    }
    return slot;
  };
  // Reversed host -> (table of the exact host, table of the wildcard suffix).
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> host_slots;
  std::vector<uint32_t> route_tables;
  for (size_t order = 0; order < keys.size(); ++order) {
    const RouteKey& key = keys[order];
    route_tables.clear();
    if (key.hosts.empty()) {
      route_tables.push_back(table_in(impl.hostless));
    }
    for (const std::string& host : key.hosts) {
      const std::string lower = base::ToLower(host);
      const HostPattern pattern = ParseHostPattern(lower);
      std::string reversed(pattern.literal.rbegin(), pattern.literal.rend());
      auto& slots = host_slots.try_emplace(std::move(reversed), kNone, kNone).first->second;
      route_tables.push_back(table_in(pattern.is_wildcard ? slots.second : slots.first));
    }
    for (uint32_t t : route_tables) {
      for (const std::string& uri : key.uris) {
        const UriPattern pattern = ParseUriPattern(uri);
        PendingBuckets& buckets = pattern.is_prefix ? pending[t].prefix : pending[t].exact;
        buckets[std::string(pattern.literal)].push_back(PendingCandidate{
            key.priority, static_cast<uint32_t>(uri.size()), static_cast<uint32_t>(order),
            key.payload, key.methods, std::string(pattern.glob)});
      }
    }
  }

  // Sort every bucket into match order and lay the buckets out.
  auto emit = [&impl](std::vector<PendingCandidate>& list) {
    Impl::Bucket bucket{static_cast<uint32_t>(impl.candidates.size()), 0};
    for (PendingCandidate& c : list) {
      uint32_t glob = kNone;
      if (!c.glob.empty()) {
        glob = static_cast<uint32_t>(impl.globs.size());
        impl.globs.push_back(std::move(c.glob));
      }
      impl.candidates.push_back(Impl::Candidate{c.payload, glob, c.methods});
    }
    bucket.end = static_cast<uint32_t>(impl.candidates.size());
    impl.buckets.push_back(bucket);
    return static_cast<uint32_t>(impl.buckets.size() - 1);
  };
  impl.uri_tables.reserve(pending.size());
  std::vector<ByteTrie::Entry> entries;
  for (PendingTable& t : pending) {
    entries.clear();
    for (auto& [path, list] : t.exact) {
      std::stable_sort(list.begin(), list.end(),
                       [](const PendingCandidate& a, const PendingCandidate& b) {
                         if (a.priority != b.priority) return a.priority > b.priority;
                         return a.order < b.order;
                       });
      entries.push_back(ByteTrie::Entry{path, emit(list), kNone});
    }
    for (auto& [prefix, list] : t.prefix) {
      std::stable_sort(list.begin(), list.end(),
                       [](const PendingCandidate& a, const PendingCandidate& b) {
                         if (a.priority != b.priority) return a.priority > b.priority;
                         if (a.path_len != b.path_len) return a.path_len > b.path_len;
                         return a.order < b.order;
                       });
      entries.push_back(ByteTrie::Entry{prefix, kNone, emit(list)});
    }
    impl.uri_tables.push_back(ByteTrie::Build(std::move(entries)));
  }

  entries.clear();
  for (auto& [reversed, slots] : host_slots) {
    entries.push_back(ByteTrie::Entry{reversed, slots.first, slots.second});
  }
  impl.hosts = ByteTrie::Build(std::move(entries));
  return table;
}

uint32_t RouteTable::Match(base::Method method, std::string_view host,
                           std::string_view path) const {
  const Impl& impl = *impl_;
  const base::MethodMask mask = base::MaskOf(method);
  uint32_t winner = kNoMatch;
  // Host candidates come out of the reverse walk already in precedence order: the exact
  // host, then wildcard suffixes from the longest to the empty one ("*").
  const bool host_bound = impl.hosts.Walk<true>(
      host, [&](uint32_t table, size_t) { return impl.TryUriTable(table, mask, path, &winner); });
  if (host_bound) return winner;
  if (impl.hostless != kNone && impl.TryUriTable(impl.hostless, mask, path, &winner)) {
    return winner;
  }
  return kNoMatch;
}

}  // namespace turnpike::router
