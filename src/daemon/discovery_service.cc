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
  // One provider per `discovery:` entry of config.yaml (APISIX loads a module per key), and
  // none for the others: an upstream naming one of those is a config error at build.
  for (const auto& [name, conf] : discovery_) {
    const DiscoveryProviderFactory* factory = providers_->Find(name);
    if (factory == nullptr) return Status::Error("discovery." + name + ": unknown discovery type");
    StatusOr<std::unique_ptr<DiscoveryProvider>> p = factory->Create(conf);
    if (!p.ok()) return Status::Error("discovery." + name + ": " + p.status().message());
    directory_->AddProvider(name, std::move(p).value());
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
