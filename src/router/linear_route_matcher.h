// LinearRouteMatcher: the naive route matcher RouteTable replaces. It checks every
// (route, host, uri) triple on each request and keeps the best-ranked one, with the same
// semantics as RouteTable::Match() but written as a direct reading of the precedence rules;
// path parameters are matched by a backtracking reading of the regular expression
// lua-resty-radixtree builds, independent of RouteTable's matcher.
//
// Not for the request path (cost grows with the number of routes, and it allocates): it
// exists as the baseline in bench/router_bench.cc and as the oracle of the router's
// randomized tests. Immutable after construction; safe to share between threads. It does not
// model the kMaxPathRests limit (router/pattern.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/http_method.h"
#include "router/route_table.h"

namespace turnpike::router {

class LinearRouteMatcher {
 public:
  static constexpr uint32_t kNoMatch = RouteTable::kNoMatch;

  explicit LinearRouteMatcher(const std::vector<RouteKey>& keys, Mode mode = Mode::kHostUri);

  // Same contract as RouteTable::Match(), for filters whose answer depends only on their
  // arguments (the filter is asked about candidates in no particular order).
  uint32_t Match(const MatchRequest& req, RouteFilter* filter, PathParams* params,
                 MatchInfo* info) const;

  uint32_t Match(base::Method method, std::string_view host, std::string_view path) const {
    return Match(MatchRequest{method, host, path}, nullptr, nullptr, nullptr);
  }

 private:
  struct Route {
    std::vector<std::string> hosts;  // lowercased
    std::vector<std::string> uris;
    base::MethodMask methods;
    int priority;
    uint32_t payload;
    bool has_filter;
  };
  std::vector<Route> routes_;
  Mode mode_;
};

}  // namespace turnpike::router
