// ip-restriction: runtime part. access: matches $remote_addr (the client address after
// real-IP processing) against the compiled list; a whitelist lets through only matching
// clients, a blacklist turns matching clients away. Turned-away clients get
// `response_code` with `{"message":"..."}`. One address parse and a binary search per
// request (turnpike::IpMatcher); no allocation.
#pragma once

#include <memory>
#include <string>

#include "plugins/ip_restriction/config.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::ip_restriction {

class IpRestrictionPlugin final : public Plugin {
 public:
  explicit IpRestrictionPlugin(Config config);
  uint32_t phases() const override { return kPhaseAccess; }
  PhaseResult Access(PluginContext& ctx) const override;

  // Worker. Whether a client at `ip` is allowed in.
  bool Allows(std::string_view ip) const;

 private:
  Config config_;
  std::string body_;  // the reply, built at load
  VarRef remote_addr_;
};

class IpRestrictionFactory final
    : public TypedPluginFactory<IpRestrictionFactory, Config, IpRestrictionPlugin> {
 public:
  static constexpr std::string_view kName = "ip-restriction";
  static constexpr int kPriority = 3000;
  static constexpr auto kParseConfig = &ParseConfig;
};

}  // namespace turnpike::plugins::ip_restriction
