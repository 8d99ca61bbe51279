// TargetState: the health of one checked target (ip, port, hostname) as
// lua-resty-healthcheck keeps it (reference §3.4), without its shared
// dictionary: four states and four counters.
//
//   healthy --failure--> mostly_healthy --...--> unhealthy (a failure counter
//   reached its limit) unhealthy --success--> mostly_unhealthy --...--> healthy
//   (successes reached their limit)
//
// A success clears the failure counters and a failure of any kind clears the
// success counter, so each counter counts consecutive reports of its direction;
// a failure counter that reaches its own limit (http_failures, tcp_failures or
// timeouts) makes the target unhealthy, the success counter reaching
// `successes` makes it healthy. A success is ignored while fully healthy and a
// failure while fully unhealthy; a report with limit 0 is ignored (the check is
// disabled). Counters saturate at 255 (limits are at most 254).
//
// A plain value: no thread rules of its own (the health checker keeps its
// targets on the control thread).
#pragma once

#include <cstdint>
#include <string_view>

namespace turnpike::upstream {

enum class Health : uint8_t { kHealthy, kMostlyHealthy, kMostlyUnhealthy, kUnhealthy };

// "healthy", "mostly_healthy", "mostly_unhealthy", "unhealthy" (APISIX's
// /v1/healthcheck).
std::string_view HealthName(Health h);

// What one probe or one proxied attempt says about a target.
enum class Outcome : uint8_t { kSuccess, kHttpFailure, kTcpFailure, kTimeout };

class TargetState {
 public:
  // Applies one report with the limit that governs it (successes for kSuccess,
  // else the failure kind's). Returns true when the target crossed between the
  // healthy side (healthy, mostly_healthy) and the unhealthy side.
  bool Report(Outcome outcome, int limit);

  Health health() const { return health_; }
  // healthy or mostly_healthy: the balancers may pick it.
  bool up() const { return health_ == Health::kHealthy || health_ == Health::kMostlyHealthy; }

  uint8_t successes() const { return success_; }
  uint8_t http_failures() const { return http_; }
  uint8_t tcp_failures() const { return tcp_; }
  uint8_t timeouts() const { return timeout_; }

 private:
  Health health_ = Health::kHealthy;  // targets start healthy
  uint8_t success_ = 0, http_ = 0, tcp_ = 0, timeout_ = 0;
};

}  // namespace turnpike::upstream
