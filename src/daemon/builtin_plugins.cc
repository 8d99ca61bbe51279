#include "daemon/builtin_plugins.h"

#include <memory>

#include "plugins/echo/echo.h"

namespace turnpike::daemon {

void RegisterBuiltinPlugins(proxy::PluginRegistry* registry) {
  registry->Register(std::make_unique<plugins::echo::EchoFactory>());
}

}  // namespace turnpike::daemon
