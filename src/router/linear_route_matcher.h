// LinearRouteMatcher: the naive route matcher RouteTable replaces. It checks every
// (route, host, uri) triple on each request and keeps the best-ranked one, with the same
// semantics as RouteTable::Match() but written as a direct reading of the precedence rules.
//
// Not for the request path (cost grows with the number of routes): it exists as the
// baseline in bench/router_bench.cc and as the oracle of the router's randomized tests.
// Immutable after construction; safe to share between threads.
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

  explicit LinearRouteMatcher(const std::vector<RouteKey>& keys);

  uint32_t Match(base::Method method, std::string_view host, std::string_view path) const;

 private:
  struct Route {
    std::vector<std::string> hosts;  // lowercased
    std::vector<std::string> uris;
    base::MethodMask methods;
    int priority;
    uint32_t payload;
  };
  std::vector<Route> routes_;
};

}  // namespace turnpike::router
