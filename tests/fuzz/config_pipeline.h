// What the daemon does with a routes file after loading it, for the config fuzz targets:
// print every error and warning, then build the snapshot (plugin configurations, `vars`,
// remote_addrs, services, the route table) as a reload or `turnpike check` would.
//
// Two departures from the daemon, so that a fuzz run has no side effects: nodes whose host is
// not an IP literal are dropped before the build (no DNS lookups), and file-logger
// configurations are validated (file_logger::ParseConfig) without opening their files.
#pragma once

#include <arpa/inet.h>

#include <memory>
#include <string>
#include <vector>

#include "config/loader.h"
#include "fuzz/fuzz_util.h"
#include "plugins/echo/echo.h"
#include "plugins/file_logger/config.h"
#include "plugins/ip_restriction/ip_restriction.h"
#include "plugins/request_id/request_id.h"
#include "plugins/response_rewrite/response_rewrite.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"

namespace turnpike::fuzz {

// file-logger's config part only: Create() validates and returns a plugin that does nothing.
struct FileLoggerConfigOnly final : Plugin {
  explicit FileLoggerConfigOnly(plugins::file_logger::Config) {}
  uint32_t phases() const override { return kPhaseLog; }
};
class FileLoggerConfigFactory final
    : public TypedPluginFactory<FileLoggerConfigFactory, plugins::file_logger::Config,
                                FileLoggerConfigOnly> {
 public:
  static constexpr std::string_view kName = "file-logger";
  static constexpr int kPriority = 399;
  static constexpr auto kParseConfig = &plugins::file_logger::ParseConfig;
};

inline const proxy::PluginRegistry& FuzzPluginRegistry() {
  static const proxy::PluginRegistry* registry = [] {
    auto* r = new proxy::PluginRegistry;
    r->Register(std::make_unique<plugins::echo::EchoFactory>());
    r->Register(std::make_unique<FileLoggerConfigFactory>());
    r->Register(std::make_unique<plugins::request_id::RequestIdFactory>());
    r->Register(std::make_unique<plugins::ip_restriction::IpRestrictionFactory>());
    r->Register(std::make_unique<plugins::response_rewrite::ResponseRewriteFactory>());
    return r;
  }();
  return *registry;
}

inline bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

inline void DropNamedNodes(config::UpstreamSpec* spec) {
  std::erase_if(spec->nodes, [](const config::NodeSpec& n) { return !IsIpLiteral(n.host); });
}

inline void CheckErrors(const std::vector<config::ConfigError>& errors) {
  for (const config::ConfigError& e : errors) FUZZ_CHECK(!e.ToString().empty());
}

// Reports and builds `result` as the daemon would (see above). `gateway` may be null (then
// config.yaml's defaults apply).
inline void RunConfigPipeline(config::LoadResult<config::RoutesConfig>* result,
                              const config::GatewayConfig* gateway) {
  CheckErrors(result->errors);
  CheckErrors(result->warnings);
  if (!result->value) {
    FUZZ_CHECK(!result->errors.empty());
    return;
  }
  config::RoutesConfig& routes = *result->value;
  for (config::UpstreamSpec& u : routes.upstreams) DropNamedNodes(&u);
  for (config::RouteSpec& r : routes.routes) {
    if (r.upstream) DropNamedNodes(&*r.upstream);
  }
  for (config::ServiceSpec& s : routes.services) {
    if (s.upstream) DropNamedNodes(&*s.upstream);
  }
  static const config::GatewayConfig kDefaults;
  proxy::BuildReport report;
  proxy::SnapshotConstSharedPtr snap = proxy::BuildSnapshot(
      {gateway != nullptr ? gateway : &kDefaults, &routes, nullptr, 1, &FuzzPluginRegistry()},
      &report);
  FUZZ_CHECK(snap != nullptr);
  FUZZ_CHECK(snap->table != nullptr);
  FUZZ_CHECK(snap->table->size() == snap->routes.size());
  CheckErrors(report.errors);
}

}  // namespace turnpike::fuzz
