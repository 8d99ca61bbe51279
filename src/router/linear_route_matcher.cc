#include "router/linear_route_matcher.h"

#include <array>
#include <limits>

#include "base/strings.h"
#include "router/pattern.h"

namespace turnpike::router {
namespace {

// Lexicographic rank of a matching (route, host, uri) triple; smaller wins.
//   [0] host class: 0 exact host, 1 wildcard host, 2 host-less route (kHostUri; else 0)
//   [1] minus the wildcard suffix length (longer suffix first; kHostUri only)
//   [2] uri class: 0 exact path, 1 prefix
//   [3] minus the prefix length (longer prefix first)
//   [4] minus the priority
//   [5] minus the configured uri length (prefix buckets only)
//   [6] config order
using Rank = std::array<int64_t, 7>;

struct Capture {
  std::string_view name;
  std::string_view value;
};

// Backtracking full match of `path` from `xi` against the param-mode uri `pat` from `pi`:
// ':' starting a segment is ([^/]+) up to the segment end, '*' is (.*) (named when it starts
// a segment: the rest of the segment is its name), anything else is itself. Greedy, leftmost
// choice first, as a regex engine tries them; captures in uri order.
bool ParamMatch(std::string_view pat, size_t pi, std::string_view path, size_t xi,
                std::vector<Capture>* caps) {
  if (pi == pat.size()) return xi == path.size();
  const bool segment_start = pi == 0 || pat[pi - 1] == '/';
  const char c = pat[pi];
  auto segment_end = [&pat](size_t from) {
    const size_t slash = pat.find('/', from);
    return slash == std::string_view::npos ? pat.size() : slash;
  };
  if (segment_start && c == ':') {
    const size_t next = segment_end(pi);
    const std::string_view name = pat.substr(pi + 1, next - pi - 1);
    size_t longest = xi;
    while (longest < path.size() && path[longest] != '/') ++longest;
    for (size_t e = longest; e > xi; --e) {
      caps->push_back({name, path.substr(xi, e - xi)});
      if (ParamMatch(pat, next, path, e, caps)) return true;
      caps->pop_back();
    }
    return false;
  }
  if (c == '*') {
    size_t next = pi + 1;
    std::string_view name;
    if (segment_start) {
      next = segment_end(pi);
      name = pat.substr(pi + 1, next - pi - 1);
    }
    for (size_t e = path.size() + 1; e-- > xi;) {
      const size_t mark = caps->size();
      if (!name.empty()) caps->push_back({name, path.substr(xi, e - xi)});
      if (ParamMatch(pat, next, path, e, caps)) return true;
      caps->resize(mark);
    }
    return false;
  }
  return xi < path.size() && path[xi] == c && ParamMatch(pat, pi + 1, path, xi + 1, caps);
}

bool HostMatches(std::string_view pattern, std::string_view host) {
  const HostPattern hp = ParseHostPattern(pattern);
  return hp.is_wildcard ? host.ends_with(hp.literal) : host == hp.literal;
}

}  // namespace

LinearRouteMatcher::LinearRouteMatcher(const std::vector<RouteKey>& keys, Mode mode) : mode_(mode) {
  routes_.reserve(keys.size());
  for (const RouteKey& key : keys) {
    Route r{{}, key.uris, key.methods, key.priority, key.payload, key.has_filter};
    for (const std::string& h : key.hosts) r.hosts.push_back(base::ToLower(h));
    routes_.push_back(std::move(r));
  }
}

uint32_t LinearRouteMatcher::Match(const MatchRequest& req, RouteFilter* filter, PathParams* params,
                                   MatchInfo* info) const {
  const std::string_view host = req.host;
  const std::string_view path = req.path;
  const base::MethodMask mask = base::MaskOf(req.method);
  Rank best;
  best.fill(std::numeric_limits<int64_t>::max());
  uint32_t winner = kNoMatch;
  MatchInfo best_info;
  PathParams best_params;
  std::vector<Capture> caps;
  for (size_t order = 0; order < routes_.size(); ++order) {
    const Route& r = routes_[order];
    if ((r.methods & mask) == 0) continue;
    // kHostUri: one pass per host (each is its own host table) or one host-less pass.
    // Other modes: one pass, with the first matching host as a filter.
    int64_t host_class = 0;
    int64_t suffix_len = 0;
    std::string_view matched_host;
    const size_t passes = mode_ == Mode::kHostUri ? std::max<size_t>(r.hosts.size(), 1) : 1;
    for (size_t h = 0; h < passes; ++h) {
      if (mode_ == Mode::kHostUri) {
        host_class = 2;
        suffix_len = 0;
        matched_host = {};
        if (!r.hosts.empty()) {
          const HostPattern hp = ParseHostPattern(r.hosts[h]);
          if (!HostMatches(r.hosts[h], host)) continue;
          host_class = hp.is_wildcard ? 1 : 0;
          suffix_len = hp.is_wildcard ? static_cast<int64_t>(hp.literal.size()) : 0;
          matched_host = r.hosts[h];
        }
      } else if (!r.hosts.empty()) {
        bool any = false;
        for (const std::string& pattern : r.hosts) {
          if (HostMatches(pattern, host)) {
            matched_host = pattern;
            any = true;
            break;
          }
        }
        if (!any) continue;
      }
      for (const std::string& uri : r.uris) {
        bool is_prefix = false;
        std::string_view literal;
        caps.clear();
        if (mode_ == Mode::kUriWithParameter) {
          const ParamUriPattern up = ParseParamUriPattern(uri);
          is_prefix = up.is_prefix;
          literal = up.literal;
          if (up.has_check ? !ParamMatch(uri, 0, path, 0, &caps)
                           : (is_prefix ? !path.starts_with(literal) : path != literal)) {
            continue;
          }
        } else {
          const UriPattern up = ParseUriPattern(uri);
          is_prefix = up.is_prefix;
          literal = up.literal;
          if (is_prefix) {
            if (!path.starts_with(literal)) continue;
            if (!up.glob.empty() && !GlobMatch(up.glob, path.substr(literal.size()))) continue;
          } else if (path != literal) {
            continue;
          }
        }
        const Rank rank = {host_class,
                           -suffix_len,
                           is_prefix ? 1 : 0,
                           is_prefix ? -static_cast<int64_t>(literal.size()) : 0,
                           -static_cast<int64_t>(r.priority),
                           is_prefix ? -static_cast<int64_t>(uri.size()) : 0,
                           static_cast<int64_t>(order)};
        if (!(rank < best)) continue;
        PathParams found;
        for (const Capture& cap : caps) found.Add(cap.name, cap.value);
        if (r.has_filter && filter != nullptr && !filter->Accept(r.payload, found)) continue;
        best = rank;
        winner = r.payload;
        best_params = found;
        best_info = MatchInfo{uri, matched_host};
      }
    }
  }
  if (params != nullptr) *params = winner == kNoMatch ? PathParams{} : best_params;
  if (info != nullptr) *info = best_info;
  return winner;
}

}  // namespace turnpike::router
