#include "plugins/ip_restriction/ip_restriction.h"

namespace turnpike::plugins::ip_restriction {

IpRestrictionPlugin::IpRestrictionPlugin(Config config)
    : config_(std::move(config)), body_(ReplyBody(config_.message)) {
  remote_addr_.kind = VarRef::Kind::kBuiltin;
  remote_addr_.builtin = BuiltinVar::kRemoteAddr;
  remote_addr_.source = "remote_addr";
}

bool IpRestrictionPlugin::Allows(std::string_view ip) const {
  // An address that does not parse matches neither list: kept out by a whitelist, let
  // through by a blacklist (lua-resty-ipmatcher's match() is false for it too).
  bool listed = config_.matcher.Match(ip);
  return config_.whitelist ? listed : !listed;
}

PhaseResult IpRestrictionPlugin::Access(PluginContext& ctx) const {
  std::optional<std::string_view> ip = ctx.Get(remote_addr_);
  if (Allows(ip.value_or(std::string_view()))) return PhaseResult::kContinue;
  ctx.Respond(config_.response_code, body_);
  return PhaseResult::kRespond;
}

}  // namespace turnpike::plugins::ip_restriction
