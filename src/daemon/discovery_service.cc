#include "daemon/discovery_service.h"

#include <spdlog/spdlog.h>

namespace turnpike::daemon {

Status DiscoveryService::Start(uv_loop_t* loop) {
  resolver_ = std::make_unique<discovery::AresResolver>(loop);
  if (Status s = resolver_->Start(); !s.ok()) {
    // Not fatal: upstreams with IP-literal nodes work; domain names fail to resolve (503).
    spdlog::error("{}; domain names in upstream nodes will not resolve", s.message());
  }
  directory_ = std::make_unique<discovery::Directory>(loop, resolver_.get());
  for (const DiscoveryProviderFactory* factory : providers_->Factories()) {
    // config.yaml's `discovery:` section is not read yet: every provider starts with {}.
    StatusOr<std::unique_ptr<DiscoveryProvider>> p = factory->Create(nlohmann::json::object());
    if (!p.ok()) {
      return Status::Error("discovery." + std::string(factory->name()) + ": " +
                           p.status().message());
    }
    directory_->AddProvider(std::string(factory->name()), std::move(p).value());
  }
  return directory_->Start();
}

void DiscoveryService::Stop() {
  if (directory_) directory_->Stop();
  if (resolver_) resolver_->Stop();
}

void DiscoveryService::Apply(std::vector<discovery::Binding> bindings) {
  if (directory_) directory_->Apply(std::move(bindings));
}

}  // namespace turnpike::daemon
