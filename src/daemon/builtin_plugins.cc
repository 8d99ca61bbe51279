#include "daemon/builtin_plugins.h"

#include <memory>

#include "plugins/echo/echo.h"
#include "plugins/file_logger/file_logger.h"
#include "plugins/ip_restriction/ip_restriction.h"
#include "plugins/limit_count/limit_count.h"
#include "plugins/prometheus/prometheus.h"
#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "plugins/request_id/request_id.h"
#include "plugins/response_rewrite/response_rewrite.h"

namespace turnpike::daemon {

void RegisterBuiltinPlugins(proxy::PluginRegistry* registry, std::shared_ptr<LogFiles> log_files) {
  registry->Register(std::make_unique<plugins::echo::EchoFactory>());
  registry->Register(
      std::make_unique<plugins::file_logger::FileLoggerFactory>(std::move(log_files)));
  registry->Register(std::make_unique<plugins::request_id::RequestIdFactory>());
  registry->Register(std::make_unique<plugins::ip_restriction::IpRestrictionFactory>());
  registry->Register(std::make_unique<plugins::response_rewrite::ResponseRewriteFactory>());
  registry->Register(std::make_unique<plugins::limit_count::LimitCountFactory>());
  registry->Register(std::make_unique<plugins::prometheus::PrometheusFactory>());
  registry->Register(std::make_unique<plugins::proxy_rewrite::ProxyRewriteFactory>());
}

}  // namespace turnpike::daemon
