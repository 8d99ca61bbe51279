#include "daemon/services.h"

#include <spdlog/spdlog.h>

namespace turnpike::daemon {
namespace {

class Context final : public ServiceContext {
 public:
  Context(Clock& clock, MetricsRegistry& metrics, int workers, const nlohmann::json& attr)
      : clock_(clock), metrics_(metrics), workers_(workers), attr_(attr) {}
  Clock& clock() override { return clock_; }
  MetricsRegistry& metrics() override { return metrics_; }
  int worker_count() const override { return workers_; }
  const nlohmann::json& attr() const override { return attr_; }

 private:
  Clock& clock_;
  MetricsRegistry& metrics_;
  int workers_;
  const nlohmann::json& attr_;
};

}  // namespace

Status ServiceHost::StartAll(const proxy::PluginRegistry& registry) {
  if (started_) return Status::Ok();
  started_ = true;
  const nlohmann::json empty = nlohmann::json::object();
  for (const PluginFactory* factory : registry.Factories()) {
    Service* service = factory->service();
    if (service == nullptr) continue;
    std::string name(factory->name());
    const nlohmann::json* attr = gateway_.PluginAttr(name);
    Context ctx(clock_, metrics_, std::max(1, gateway_.worker_processes),
                attr != nullptr ? *attr : empty);
    Status s = service->Start(ctx);
    if (!s.ok()) {
      StopAll();
      return Status::Error("plugin " + name + ": " + s.message());
    }
    spdlog::debug("plugin {}: service started", name);
    running_.emplace_back(std::move(name), service);
  }
  return Status::Ok();
}

void ServiceHost::StopAll() {
  while (!running_.empty()) {
    auto [name, service] = running_.back();
    running_.pop_back();
    service->Stop();
    spdlog::debug("plugin {}: service stopped", name);
  }
}

}  // namespace turnpike::daemon
