// echo: runtime part. header_filter sets the configured headers and marks the body modified;
// body_filter prepends before_body to the first piece, replaces the body with `body` (ending
// it there), and appends after_body to the last piece.
#pragma once

#include <memory>

#include "plugins/echo/config.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::echo {

class EchoPlugin final : public Plugin {
 public:
  explicit EchoPlugin(Config config) : config_(std::move(config)) {}
  uint32_t phases() const override { return kPhaseHeaderFilter | kPhaseBodyFilter; }
  void HeaderFilter(PluginContext& ctx) const override;
  void BodyFilter(PluginContext& ctx, BodyPiece& piece) const override;

 private:
  Config config_;
};

class EchoFactory final : public TypedPluginFactory<EchoFactory, Config, EchoPlugin> {
 public:
  static constexpr std::string_view kName = "echo";
  static constexpr int kPriority = 412;
  static constexpr auto kParseConfig = &ParseConfig;
};

}  // namespace turnpike::plugins::echo
