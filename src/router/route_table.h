// RouteTable: the immutable route matcher (APISIX's radixtree routers, reference §2.2-2.3).
//
// Built on the control thread from a list of RouteKeys, then shared read-only by all
// workers. Match() is the worker hot path: no allocation, no locks, and its cost depends on
// the length of the host and path (and on the routes that share the matching buckets), not on
// the number of routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/http_method.h"
#include "router/path_params.h"

namespace turnpike::router {

// Which APISIX router (`apisix.router.http`) the table reproduces.
enum class Mode : uint8_t {
  // radixtree_host_uri (the default): routes bound to a host first, host by host from the
  // most specific, then the host-less routes.
  kHostUri,
  // radixtree_uri: one tree on the path; a route's hosts are only a filter on its candidates,
  // so a host-bound route has no precedence over a host-less one.
  kUri,
  // radixtree_uri_with_parameter: kUri plus `:name` and `*name` path parameters (pattern.h).
  kUriWithParameter,
};

// What the matcher needs to know about one route. `payload` is an opaque index the caller
// uses to find its own route object (returned by Match()). The exact reading of `uris` and
// `hosts` (including a '*' inside a path, ':' in the param mode, and the host "*") is in
// router/pattern.h.
struct RouteKey {
  std::vector<std::string> uris;   // exact ("/a"), or prefix when ending in '*' ("/a/*", "/a*")
  std::vector<std::string> hosts;  // exact ("a.com") or wildcard ("*.a.com"); empty = any
  base::MethodMask methods = base::kAnyMethod;
  int priority = 0;  // higher first, within one bucket
  uint32_t payload = 0;
  bool has_filter = false;  // Match() asks its RouteFilter about this route
};

struct MatchRequest {
  base::Method method = base::Method::kGet;
  std::string_view host;  // lowercased, without port
  std::string_view path;  // normalized, without query string
};

// Which of the winning route's patterns matched. Views into the table (valid while it lives).
struct MatchInfo {
  std::string_view matched_uri;   // the uri as configured, e.g. "/foo*" or "/user/:id"
  std::string_view matched_host;  // the host pattern, lowercased (e.g. "*.com"); "" if none
};

// The per-route conditions the table does not know (remote_addrs, vars, filter_func...).
// Called on the worker thread during Match(), for candidates whose RouteKey::has_filter is
// set, after their methods, hosts and path checks passed; `params` holds the candidate's path
// parameters. Returning false skips the candidate exactly as a method mismatch does.
class RouteFilter {
 public:
  virtual bool Accept(uint32_t payload, const PathParams& params) = 0;

 protected:
  ~RouteFilter() = default;
};

class RouteTable;
using RouteTableConstSharedPtr = std::shared_ptr<const RouteTable>;

class RouteTable {
 public:
  static constexpr uint32_t kNoMatch = UINT32_MAX;

  // Control thread. Keys are taken in config order (that order breaks remaining ties).
  static RouteTableConstSharedPtr Build(std::vector<RouteKey> keys, Mode mode = Mode::kHostUri);

  // Worker, hot path. Returns the payload of the winning route or kNoMatch.
  //
  // Precedence (reference §2.2-2.3). In kHostUri, routes bound to a host come first (exact
  // host, then the longest matching wildcard suffix, then shorter ones), then host-less
  // routes; in the other modes all routes compete on the path alone. For one set of routes:
  // the exact-path bucket first, then prefix buckets from the longest matching prefix to the
  // shortest; within a bucket by priority (desc), then, for prefixes, longer configured uri
  // first, then config order. The first candidate whose methods accept the method, whose
  // hosts (kUri modes) accept the host, whose path check passes, and — when its key has
  // `has_filter` — that `filter` accepts, wins.
  //
  // `filter`, `params` and `info` may be null (a null filter accepts everything). On a match
  // *params holds the winner's path parameters (none outside kUriWithParameter) and *info its
  // patterns; on kNoMatch params->count is 0 and *info is empty. Parameter values view
  // `req.path`.
  uint32_t Match(const MatchRequest& req, RouteFilter* filter, PathParams* params,
                 MatchInfo* info) const;

  uint32_t Match(base::Method method, std::string_view host, std::string_view path) const {
    return Match(MatchRequest{method, host, path}, nullptr, nullptr, nullptr);
  }

  size_t size() const { return route_count_; }
  Mode mode() const { return mode_; }

  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

 private:
  RouteTable();
  struct Impl;
  struct Query;
  uint32_t MatchWith(const MatchRequest& req, RouteFilter* filter, PathParams* params,
                     MatchInfo* info) const;
  std::unique_ptr<Impl> impl_;
  size_t route_count_ = 0;
  Mode mode_ = Mode::kHostUri;
};

}  // namespace turnpike::router
