#include "daemon/builtin_providers.h"

#include <memory>

#include "discovery/consul_provider.h"
#include "discovery/dns_provider.h"
#include "discovery/kubernetes_provider.h"
#include "discovery/nacos_provider.h"

namespace turnpike::daemon {

void RegisterBuiltinProviders(discovery::ProviderRegistry* registry) {
  // One line per provider; a provider runs only when config.yaml has its `discovery:` entry. Static
  // `nodes` need no provider: the snapshot build fills IP literals, and the Directory resolves
  // domain names (discovery/node_source.h).
  registry->Register(std::make_unique<discovery::DnsProviderFactory>());
  registry->Register(std::make_unique<discovery::ConsulProviderFactory>());
  registry->Register(std::make_unique<discovery::KubernetesProviderFactory>());
  registry->Register(std::make_unique<discovery::NacosProviderFactory>());
}

}  // namespace turnpike::daemon
