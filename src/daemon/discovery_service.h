// DiscoveryService: the control thread's node sources as a control service: the c-ares
// resolver, the discovery providers (one per registered factory) and the discovery::Directory
// that turns their answers into node sets (see discovery/directory.h).
//
// Control hands it the bindings of every snapshot it publishes (Apply), before the workers
// see the snapshot, so a slot whose nodes are already known is filled before first use.
// ready() is the directory's: false until the first snapshot's domain names and services had
// their first answers.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "admin/status_api.h"
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

  // The control API's /v1/discovery/<name>/dump: provider `name`'s Dump() (null when it has
  // none), or nullopt when no such provider runs.
  std::optional<nlohmann::json> Dump(std::string_view name) const;
  // /v1/discovery/<name>/show_dump_file (APISIX's consul control API): the text of the file
  // that discovery.consul.dump.path names (read on the control thread, at most kMaxDumpFile
  // bytes), 503 "dump params is nil" without one, 503 with the error when it cannot be read;
  // nullopt (no such endpoint) for other providers and when consul is not configured.
  std::optional<admin::HttpAnswer> ShowDumpFile(std::string_view name) const;
  static constexpr size_t kMaxDumpFile = 64 << 20;

 private:
  const discovery::ProviderRegistry* providers_;
  std::vector<std::pair<std::string, nlohmann::json>> discovery_;
  // The providers the directory owns, by name (Dump()).
  std::map<std::string, const DiscoveryProvider*, std::less<>> by_name_;
  std::unique_ptr<discovery::AresResolver> resolver_;
  std::unique_ptr<discovery::Directory> directory_;
};

}  // namespace turnpike::daemon
