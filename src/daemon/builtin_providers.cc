#include "daemon/builtin_providers.h"

namespace turnpike::daemon {

void RegisterBuiltinProviders(discovery::ProviderRegistry* /*registry*/) {
  // None yet. dns, nacos, consul and kubernetes come here, one line each:
  //   registry->Register(std::make_unique<discovery::DnsProviderFactory>());
  // Static `nodes` need no provider: the snapshot build fills IP literals, and the
  // Directory resolves domain names (discovery/node_source.h).
}

}  // namespace turnpike::daemon
