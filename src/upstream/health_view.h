// HealthView: a read-only view of the upstream health checkers, for APISIX's
// control API
// (`/v1/healthcheck`, `/v1/healthcheck/{upstreams|routes|services}/{id}`,
// reference §3.4).
//
// The daemon's health checker implements it; the control API asks it for
// ready-made JSON in APISIX's shapes (apisix/control/v1.lua):
//
//   {"name": "/apisix/upstreams/1", "type": "http",
//    "nodes": [{"ip": "127.0.0.1", "port": 1980, "hostname": "127.0.0.1",
//               "status": "healthy",   // or mostly_healthy, mostly_unhealthy,
//               unhealthy "counter": {"success": 0, "http_failure": 0,
//               "tcp_failure": 0,
//                           "timeout_failure": 0}}]}
//
// `name` is "/apisix/" + the upstream's resource key: "upstreams/<id>" for an
// upstream object, "routes/<id>" or "services/<id>" for an inline one. `type`
// is checks.active.type. An upstream whose checker has not started yet (no
// request used it: APISIX creates checkers on first use) has no "nodes" member,
// as APISIX shows it.
//
// Thread rules: control thread only (the checker's loop). Cost: O(checked
// targets).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace turnpike::upstream {

class HealthView {
 public:
  virtual ~HealthView() = default;
  // The body of GET /v1/healthcheck: a JSON array of every upstream with checks
  // in the current config, in config order; "{}" when there is none (APISIX's
  // empty Lua table).
  virtual std::string AllJson() const = 0;
  // The body of GET /v1/healthcheck/<kind>/<id> for `name` =
  // "/apisix/<kind>/<id>": one object as above, or nullopt when no upstream of
  // that name has checks (APISIX then answers 404 {"error_msg": "no checker for
  // <kind>[<id>]"} or "... not found").
  virtual std::optional<std::string> OneJson(std::string_view name) const = 0;
};

}  // namespace turnpike::upstream
