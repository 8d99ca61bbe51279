// DiscoveryService: the control thread's node sources as a control service: the c-ares
// resolver, the discovery providers (one per registered factory) and the discovery::Directory
// that turns their answers into node sets (see discovery/directory.h).
//
// Control hands it the bindings of every snapshot it publishes (Apply), before the workers
// see the snapshot, so a slot whose nodes are already known is filled before first use.
// ready() is the directory's: false until the first snapshot's domain names and services had
// their first answers.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "daemon/control_service.h"
#include "discovery/ares_resolver.h"
#include "discovery/directory.h"
#include "discovery/registry.h"

namespace turnpike::daemon {

class DiscoveryService final : public ControlService {
 public:
  // `providers` outlives the service. `discovery`: config.yaml's `discovery:` entries (one
  // provider each; Start() fails naming an unknown one or a section its factory rejects).
  DiscoveryService(const discovery::ProviderRegistry* providers,
                   std::vector<std::pair<std::string, nlohmann::json>> discovery)
      : providers_(providers), discovery_(std::move(discovery)) {}

  std::string_view name() const override { return "discovery"; }
  Status Start(uv_loop_t* loop) override;
  void Stop() override;
  bool ready() const override { return directory_ == nullptr || directory_->ready(); }

  // Control thread, after each snapshot build and before publishing it.
  void Apply(std::vector<discovery::Binding> bindings);

 private:
  const discovery::ProviderRegistry* providers_;
  std::vector<std::pair<std::string, nlohmann::json>> discovery_;
  std::unique_ptr<discovery::AresResolver> resolver_;
  std::unique_ptr<discovery::Directory> directory_;
};

}  // namespace turnpike::daemon
