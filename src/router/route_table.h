// RouteTable: the immutable route matcher (APISIX `radixtree_host_uri` semantics).
//
// Built on the control thread from a list of RouteKeys, then shared read-only by all
// workers. Match() is the worker hot path: no allocation, no locks, and its cost depends on
// the length of the host and path, not on the number of routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/http_method.h"

namespace turnpike::router {

// What the matcher needs to know about one route. `payload` is an opaque index the caller
// uses to find its own route object (returned by Match()). The exact reading of `uris` and
// `hosts` (including a '*' inside a path, and the host "*") is in router/pattern.h.
struct RouteKey {
  std::vector<std::string> uris;    // exact ("/a"), or prefix when ending in '*' ("/a/*", "/a*")
  std::vector<std::string> hosts;   // lowercased; exact ("a.com") or wildcard ("*.a.com"); empty = any
  base::MethodMask methods = base::kAnyMethod;
  int priority = 0;                 // higher first, within one bucket
  uint32_t payload = 0;
};

class RouteTable;
using RouteTableConstSharedPtr = std::shared_ptr<const RouteTable>;

class RouteTable {
 public:
  static constexpr uint32_t kNoMatch = UINT32_MAX;

  // Control thread. Keys are taken in config order (that order breaks remaining ties).
  static RouteTableConstSharedPtr Build(std::vector<RouteKey> keys);

  // Worker, hot path. `host` must already be lowercased and without port; `path` is the
  // request path without query string. Returns the payload of the winning route or kNoMatch.
  //
  // Precedence (reference §2.2-2.3): routes bound to a host first (exact host, then the
  // longest matching wildcard suffix, then shorter ones), then host-less routes. Within
  // each: the exact-path bucket first, then prefix buckets from the longest matching prefix
  // to the shortest; within a bucket by priority (desc), then, for prefixes, longer original
  // path first, then config order. The first route whose methods accept `method` wins.
  uint32_t Match(base::Method method, std::string_view host, std::string_view path) const;

  size_t size() const { return route_count_; }

  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

 private:
  RouteTable();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t route_count_ = 0;
};

}  // namespace turnpike::router
