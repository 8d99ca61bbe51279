#include "router/route_table.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <utility>

#include "base/courtesy.h"
#include "base/strings.h"
#include "router/byte_trie.h"
#include "router/pattern.h"

namespace turnpike::router {

// Layout: one URI table (a ByteTrie over paths) per distinct host key plus one for the
// host-less routes (kHostUri), or a single URI table holding every route (kUri modes). A URI
// trie's values index `buckets`, each a range of `candidates` in match order. The host trie
// is keyed by reversed hosts; its exact values are the tables of exact hosts and its prefix
// values those of wildcard suffixes, so a single reverse walk yields the host candidates in
// precedence order. In the kUri modes a candidate carries its route's hosts as a filter.
//
// Why a radix trie rather than hash maps probed once per distinct prefix length: one walk
// serves the exact bucket and every prefix bucket, its cost is bounded by the path length
// whatever the prefix lengths in the config, and bench/router_bench.cc
// (BM_PrefixLookup_*) shows it ahead of the length-probing alternative once routes use more
// than a handful of prefix lengths.
struct RouteTable::Impl {
  static constexpr uint32_t kNone = ByteTrie::kNone;

  struct HostFilter {
    std::string_view pattern;  // lowercased, as configured ("*.a.com")
    std::string_view literal;  // the exact host, or the wildcard suffix (".a.com")
    bool wildcard;
  };
  // The fields TryBucket() reads for every candidate it visits; the strings it needs only for
  // a glob or for the winner live apart, in CandidateText, to keep buckets dense.
  struct Candidate {
    uint32_t payload;
    uint32_t tokens_begin;  // kUriWithParameter: the path check is tokens[begin, end)
    uint32_t tokens_end;
    uint32_t hosts_begin;  // kUri modes: the route's hosts are host_filters[begin, end)
    uint32_t hosts_end;
    base::MethodMask methods;
    bool has_filter;
    bool has_glob;
  };
  struct CandidateText {
    std::string_view uri;   // as configured (MatchInfo::matched_uri)
    std::string_view host;  // kHostUri: the host pattern of the candidate's table, or ""
    std::string_view glob;  // modes without params: post-check of the path after the prefix
  };
  struct Bucket {
    uint32_t begin;
    uint32_t end;
  };
  // One (route, uri, URI table) triple waiting in a bucket during Build().
  struct PendingCandidate {
    int priority;
    uint32_t path_len;  // length of the uri as configured
    uint32_t order;     // index of the route in config order
    Candidate candidate;
    CandidateText text;
  };
  using PendingBuckets = std::unordered_map<std::string_view, std::vector<PendingCandidate>>;
  struct PendingTable {
    PendingBuckets exact;
    PendingBuckets prefix;
  };

  // The first of the candidate's host filters that accepts `host`, or kNone.
  uint32_t AcceptingHost(const Candidate& c, std::string_view host) const {
    for (uint32_t i = c.hosts_begin; i < c.hosts_end; ++i) {
      const HostFilter& f = host_filters[i];
      if (f.wildcard ? host.ends_with(f.literal) : host == f.literal) return i;
    }
    return kNone;
  }

  // Tries the bucket's candidates in order; on success records the winner in `q`.
  bool TryBucket(uint32_t bucket, Query& q, size_t matched) const;

  bool TryUriTable(uint32_t table, Query& q) const;

  std::deque<std::string> texts;  // owns every string the views above point into
  std::vector<Candidate> candidates;
  std::vector<CandidateText> candidate_texts;  // parallel to candidates
  std::vector<Bucket> buckets;
  std::vector<HostFilter> host_filters;
  std::vector<PathToken> tokens;
  std::vector<ByteTrie> uri_tables;
  ByteTrie hosts;
  uint32_t hostless = kNone;
  bool has_params = false;  // some candidate has a param-mode path check
};

// The state of one Match() call.
struct RouteTable::Query {
  base::MethodMask mask;
  std::string_view host;
  std::string_view path;
  RouteFilter* filter;
  PathParams* params;                 // may be null
  uint32_t winner = kNoMatch;         // index into candidates
  uint32_t winner_host = UINT32_MAX;  // index into host_filters (kUri modes), or none
};

namespace {

constexpr uint32_t kNone = ByteTrie::kNone;
constexpr PathParams kNoParams{};

// A URI table a route goes into, and the host pattern that leads there (kHostUri).
struct RouteSlot {
  uint32_t table;
  std::string_view host;
};

}  // namespace

bool RouteTable::Impl::TryUriTable(uint32_t table, Query& q) const {
  return uri_tables[table].Walk<false>(
      q.path, [&](uint32_t bucket, size_t matched) { return TryBucket(bucket, q, matched); });
}

bool RouteTable::Impl::TryBucket(uint32_t bucket, Query& q, size_t matched) const {
  const Bucket& b = buckets[bucket];
  // The part of the path after the bucket's prefix (matched <= path.size()).
  const std::string_view rest(q.path.data() + matched, q.path.size() - matched);
  for (uint32_t i = b.begin; i < b.end; ++i) {
    const Candidate& c = candidates[i];
    if ((c.methods & q.mask) == 0) continue;
    uint32_t host = kNone;
    if (c.hosts_begin != c.hosts_end && (host = AcceptingHost(c, q.host)) == kNone) continue;
    if (c.has_glob && !GlobMatch(candidate_texts[i].glob, rest)) continue;
    if (q.params != nullptr) q.params->count = 0;
    if (c.tokens_begin != c.tokens_end &&
        !MatchPathTokens(&tokens[c.tokens_begin], c.tokens_end - c.tokens_begin, rest, q.params)) {
      continue;
    }
    if (c.has_filter && q.filter != nullptr &&
        !q.filter->Accept(c.payload, q.params != nullptr ? *q.params : kNoParams)) {
      continue;
    }
    q.winner = i;
    q.winner_host = host;
    return true;
  }
  return false;
}

RouteTable::RouteTable() : impl_(std::make_unique<Impl>()) {}
RouteTable::~RouteTable() = default;

RouteTableConstSharedPtr RouteTable::Build(std::vector<RouteKey> keys, Mode mode) {
  std::shared_ptr<RouteTable> table(new RouteTable());
  table->route_count_ = keys.size();
  table->mode_ = mode;
  Impl& impl = *table->impl_;
  const bool by_host = mode == Mode::kHostUri;
  const bool with_params = mode == Mode::kUriWithParameter;

  // Group (route, uri) pairs by URI table and bucket. Bucket keys view impl.texts.
  std::vector<Impl::PendingTable> pending;
  auto table_in = [&pending](uint32_t& slot) {
    if (slot == kNone) {
      slot = static_cast<uint32_t>(pending.size());
      pending.emplace_back();
    }
    return slot;
  };
  // Reversed host -> (table of the exact host, table of the wildcard suffix).
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> host_slots;
  std::vector<RouteSlot> slots;
  for (size_t order = 0; order < keys.size(); ++order) {
    base::CourtesyPoint();
    RouteKey& key = keys[order];
    slots.clear();
    const auto hosts_begin = static_cast<uint32_t>(impl.host_filters.size());
    for (const std::string& host : key.hosts) {
      const std::string_view lower = impl.texts.emplace_back(base::ToLower(host));
      const HostPattern pattern = ParseHostPattern(lower);
      if (by_host) {
        std::string reversed(pattern.literal.rbegin(), pattern.literal.rend());
        auto& pair = host_slots.try_emplace(std::move(reversed), kNone, kNone).first->second;
        slots.push_back({table_in(pattern.is_wildcard ? pair.second : pair.first), lower});
      } else {
        impl.host_filters.push_back({lower, pattern.literal, pattern.is_wildcard});
      }
    }
    const auto hosts_end = static_cast<uint32_t>(impl.host_filters.size());
    if (!by_host || key.hosts.empty()) slots.push_back({table_in(impl.hostless), {}});

    for (std::string& owned : key.uris) {
      const std::string_view uri = impl.texts.emplace_back(std::move(owned));
      Impl::Candidate c{key.payload,    0,    0, hosts_begin, hosts_end, key.methods,
                        key.has_filter, false};
      Impl::CandidateText text{uri, {}, {}};
      bool is_prefix = false;
      std::string_view literal;
      if (with_params) {
        const ParamUriPattern pattern = ParseParamUriPattern(uri);
        is_prefix = pattern.is_prefix;
        literal = pattern.literal;
        if (pattern.has_check) {
          c.tokens_begin = static_cast<uint32_t>(impl.tokens.size());
          // A uri with too many rests never matches (pattern.h).
          if (!TokenizeParamUri(uri, literal.size(), &impl.tokens)) continue;
          c.tokens_end = static_cast<uint32_t>(impl.tokens.size());
          impl.has_params = true;
        }
      } else {
        const UriPattern pattern = ParseUriPattern(uri);
        is_prefix = pattern.is_prefix;
        literal = pattern.literal;
        text.glob = pattern.glob;
        c.has_glob = !pattern.glob.empty();
      }
      for (const RouteSlot& slot : slots) {
        text.host = slot.host;
        Impl::PendingBuckets& buckets =
            is_prefix ? pending[slot.table].prefix : pending[slot.table].exact;
        buckets[literal].push_back(Impl::PendingCandidate{key.priority,
                                                          static_cast<uint32_t>(uri.size()),
                                                          static_cast<uint32_t>(order), c, text});
      }
    }
  }

  // Sort every bucket into match order and lay the buckets out.
  auto emit = [&impl](const std::vector<Impl::PendingCandidate>& list) {
    Impl::Bucket bucket{static_cast<uint32_t>(impl.candidates.size()), 0};
    for (const Impl::PendingCandidate& p : list) {
      impl.candidates.push_back(p.candidate);
      impl.candidate_texts.push_back(p.text);
    }
    bucket.end = static_cast<uint32_t>(impl.candidates.size());
    impl.buckets.push_back(bucket);
    return static_cast<uint32_t>(impl.buckets.size() - 1);
  };
  impl.uri_tables.reserve(pending.size());
  std::vector<ByteTrie::Entry> entries;
  for (Impl::PendingTable& t : pending) {
    entries.clear();
    for (auto& [path, list] : t.exact) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Impl::PendingCandidate& a, const Impl::PendingCandidate& b) {
                         if (a.priority != b.priority) return a.priority > b.priority;
                         return a.order < b.order;
                       });
      entries.push_back(ByteTrie::Entry{std::string(path), emit(list), kNone});
    }
    for (auto& [prefix, list] : t.prefix) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Impl::PendingCandidate& a, const Impl::PendingCandidate& b) {
                         if (a.priority != b.priority) return a.priority > b.priority;
                         if (a.path_len != b.path_len) return a.path_len > b.path_len;
                         return a.order < b.order;
                       });
      entries.push_back(ByteTrie::Entry{std::string(prefix), kNone, emit(list)});
    }
    impl.uri_tables.push_back(ByteTrie::Build(std::move(entries)));
  }

  entries.clear();
  for (auto& [reversed, pair] : host_slots) {
    entries.push_back(ByteTrie::Entry{reversed, pair.first, pair.second});
  }
  impl.hosts = ByteTrie::Build(std::move(entries));
  return table;
}

uint32_t RouteTable::Match(const MatchRequest& req, RouteFilter* filter, PathParams* params,
                           MatchInfo* info) const {
  // A filter sees the parameters even when the caller does not want them.
  if (params == nullptr && filter != nullptr && impl_->has_params) {
    PathParams scratch;
    return MatchWith(req, filter, &scratch, info);
  }
  return MatchWith(req, filter, params, info);
}

uint32_t RouteTable::MatchWith(const MatchRequest& req, RouteFilter* filter, PathParams* params,
                               MatchInfo* info) const {
  const Impl& impl = *impl_;
  Query q{base::MaskOf(req.method), req.host, req.path, filter, params, kNoMatch, kNone};
  // Host candidates come out of the reverse walk already in precedence order: the exact
  // host, then wildcard suffixes from the longest to the empty one ("*"). The host trie is
  // empty outside kHostUri.
  bool found = impl.hosts.Walk<true>(
      req.host, [&](uint32_t table, size_t) { return impl.TryUriTable(table, q); });
  if (!found && impl.hostless != kNone) found = impl.TryUriTable(impl.hostless, q);
  if (!found) {
    if (params != nullptr) params->count = 0;
    if (info != nullptr) *info = MatchInfo{};
    return kNoMatch;
  }
  if (info != nullptr) {
    const Impl::CandidateText& text = impl.candidate_texts[q.winner];
    info->matched_uri = text.uri;
    info->matched_host =
        q.winner_host != kNone ? impl.host_filters[q.winner_host].pattern : text.host;
  }
  return impl.candidates[q.winner].payload;
}

}  // namespace turnpike::router
