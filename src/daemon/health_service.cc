#include "daemon/health_service.h"

namespace turnpike::daemon {

Status HealthService::Start(uv_loop_t* loop) {
  checker_ = std::make_unique<health::HealthChecker>(loop);
  checker_->Start();
  return Status::Ok();
}

void HealthService::Apply(const proxy::Snapshot& snapshot) {
  if (checker_) checker_->Apply(HealthBindings(snapshot));
}

std::vector<health::Binding> HealthBindings(const proxy::Snapshot& snapshot) {
  std::vector<health::Binding> out;
  for (const auto& up : snapshot.upstreams) {
    if (up->health == nullptr) continue;
    out.push_back({"/apisix/" + up->key, up->checks, up->nodes, up->health,
                   up->pass_host == config::PassHost::kNode});
  }
  return out;
}

}  // namespace turnpike::daemon
