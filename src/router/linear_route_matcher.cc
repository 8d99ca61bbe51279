#include "router/linear_route_matcher.h"

#include <array>
#include <limits>

#include "base/strings.h"
#include "router/pattern.h"

namespace turnpike::router {
namespace {

// Lexicographic rank of a matching (route, host, uri) triple; smaller wins.
//   [0] host class: 0 exact host, 1 wildcard host, 2 host-less route
//   [1] minus the wildcard suffix length (longer suffix first)
//   [2] uri class: 0 exact path, 1 prefix
//   [3] minus the prefix length (longer prefix first)
//   [4] minus the priority
//   [5] minus the configured uri length (prefix buckets only)
//   [6] config order
using Rank = std::array<int64_t, 7>;

}  // namespace

LinearRouteMatcher::LinearRouteMatcher(const std::vector<RouteKey>& keys) {
  routes_.reserve(keys.size());
  for (const RouteKey& key : keys) {
    Route r{{}, key.uris, key.methods, key.priority, key.payload};
    for (const std::string& h : key.hosts) r.hosts.push_back(base::ToLower(h));
    routes_.push_back(std::move(r));
  }
}

uint32_t LinearRouteMatcher::Match(base::Method method, std::string_view host,
                                   std::string_view path) const {
  const base::MethodMask mask = base::MaskOf(method);
  Rank best;
  best.fill(std::numeric_limits<int64_t>::max());
  uint32_t winner = kNoMatch;
  for (size_t order = 0; order < routes_.size(); ++order) {
    const Route& r = routes_[order];
    if ((r.methods & mask) == 0) continue;
    for (size_t h = 0; h < std::max<size_t>(r.hosts.size(), 1); ++h) {
      int64_t host_class = 2;
      int64_t suffix_len = 0;
      if (!r.hosts.empty()) {
        const HostPattern hp = ParseHostPattern(r.hosts[h]);
        if (hp.is_wildcard) {
          if (!host.ends_with(hp.literal)) continue;
          host_class = 1;
          suffix_len = static_cast<int64_t>(hp.literal.size());
        } else {
          if (host != hp.literal) continue;
          host_class = 0;
        }
      }
      for (const std::string& uri : r.uris) {
        const UriPattern up = ParseUriPattern(uri);
        Rank rank;
        if (up.is_prefix) {
          if (!path.starts_with(up.literal)) continue;
          if (!up.glob.empty() && !GlobMatch(up.glob, path.substr(up.literal.size()))) continue;
          rank = {host_class,
                  -suffix_len,
                  1,
                  -static_cast<int64_t>(up.literal.size()),
                  -static_cast<int64_t>(r.priority),
                  -static_cast<int64_t>(uri.size()),
                  static_cast<int64_t>(order)};
        } else {
          if (path != up.literal) continue;
          rank = {host_class,
                  -suffix_len,
                  0,
                  0,
                  -static_cast<int64_t>(r.priority),
                  0,
                  static_cast<int64_t>(order)};
        }
        if (rank < best) {
          best = rank;
          winner = r.payload;
        }
      }
    }
  }
  return winner;
}

}  // namespace turnpike::router
