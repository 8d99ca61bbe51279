#include "upstream/health_state.h"

namespace turnpike::upstream {
namespace {

uint8_t Bump(uint8_t* counter) {
  if (*counter < 255) ++*counter;
  return *counter;
}

}  // namespace

std::string_view HealthName(Health h) {
  switch (h) {
    case Health::kMostlyHealthy:
      return "mostly_healthy";
    case Health::kMostlyUnhealthy:
      return "mostly_unhealthy";
    case Health::kUnhealthy:
      return "unhealthy";
    case Health::kHealthy:
      break;
  }
  return "healthy";
}

bool TargetState::Report(Outcome outcome, int limit) {
  if (limit <= 0) return false;
  const bool success = outcome == Outcome::kSuccess;
  if (success && health_ == Health::kHealthy) return false;
  if (!success && health_ == Health::kUnhealthy) return false;
  const bool was_up = up();
  uint8_t count = 0;
  if (success) {
    http_ = tcp_ = timeout_ = 0;
    count = Bump(&success_);
  } else {
    success_ = 0;
    count = Bump(outcome == Outcome::kHttpFailure  ? &http_
                 : outcome == Outcome::kTcpFailure ? &tcp_
                                                   : &timeout_);
  }
  if (count >= limit) {
    health_ = success ? Health::kHealthy : Health::kUnhealthy;
  } else if (health_ == Health::kHealthy && !success) {
    health_ = Health::kMostlyHealthy;
  } else if (health_ == Health::kUnhealthy && success) {
    health_ = Health::kMostlyUnhealthy;
  }
  return was_up != up();
}

}  // namespace turnpike::upstream
