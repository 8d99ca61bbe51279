#include "daemon/check.h"

#include <string>

#include "config/loader.h"
#include "proxy/snapshot.h"

namespace turnpike::daemon {

CheckResult CheckRoutes(const config::GatewayConfig& gateway, const proxy::PluginRegistry& registry,
                        std::FILE* err) {
  CheckResult result;
  config::LoadResult<config::RoutesConfig> routes = config::LoadRoutesConfig(gateway.routes_file);
  for (const config::ConfigError& w : routes.warnings) {
    std::fprintf(err, "%s (warning)\n", w.ToString().c_str());
  }
  for (const config::ConfigError& e : routes.errors) {
    std::fprintf(err, "%s\n", e.ToString().c_str());
    ++result.problems;
  }
  if (!routes.value) return result;
  result.loaded = true;
  result.routes = routes.value->routes.size();
  result.upstreams = routes.value->upstreams.size();
  // Compile everything the daemon would (plugin configs, references) to report all errors.
  // Metrics go to a registry of the build's own; services are not started.
  proxy::BuildReport report;
  proxy::BuildInput input;
  input.gateway = &gateway;
  input.routes = &*routes.value;
  input.version = 1;
  input.plugins = &registry;
  proxy::BuildSnapshot(input, &report);
  for (const config::ConfigError& e : report.errors) {
    std::fprintf(err, "%s\n", e.ToString().c_str());
    ++result.problems;
  }
  for (const std::string& w : report.warnings) std::fprintf(err, "%s (warning)\n", w.c_str());
  return result;
}

}  // namespace turnpike::daemon
