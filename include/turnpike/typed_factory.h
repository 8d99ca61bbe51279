// TypedPluginFactory: the PluginFactory of a plugin with a config part and a runtime part,
// written once. A plugin names itself, its priority and its config parser; Create() parses
// the configuration into `Config` and constructs the immutable `PluginT` from it.
//
//   class EchoFactory final : public TypedPluginFactory<EchoFactory, Config, EchoPlugin> {
//    public:
//     static constexpr std::string_view kName = "echo";
//     static constexpr int kPriority = 412;
//     static constexpr auto kParseConfig = &ParseConfig;
//   };
//
// `kParseConfig` is `StatusOr<Config>(const nlohmann::json&)` or, for a parser that reads
// the plugin's metadata, attributes or owner, `StatusOr<Config>(const nlohmann::json&,
// FactoryContext&)`. The plugin is `std::make_shared<PluginT>(std::move(config))` unless
// Derived declares its own
//   StatusOr<PluginConstSharedPtr> MakePlugin(Config config, FactoryContext& ctx) const;
// (file-logger passes its shared log file that way).
//
// Thread and cost: those of PluginFactory::Create (control thread, once per instance and
// snapshot build).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <type_traits>
#include <utility>

#include "turnpike/factory_context.h"
#include "turnpike/plugin.h"
#include "turnpike/status.h"

namespace turnpike {

template <typename Derived, typename Config, typename PluginT>
class TypedPluginFactory : public PluginFactory {
 public:
  std::string_view name() const override { return Derived::kName; }
  int priority() const override { return Derived::kPriority; }

  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext& ctx) const final {
    StatusOr<Config> config = Parse(conf, ctx);
    if (!config.ok()) return config.status();
    return static_cast<const Derived&>(*this).MakePlugin(std::move(config).value(), ctx);
  }

  // The default construction; Derived may hide it with its own.
  StatusOr<PluginConstSharedPtr> MakePlugin(Config config, FactoryContext& /*ctx*/) const {
    return PluginConstSharedPtr(std::make_shared<const PluginT>(std::move(config)));
  }

 private:
  static StatusOr<Config> Parse(const nlohmann::json& conf, FactoryContext& ctx) {
    constexpr auto parse = Derived::kParseConfig;
    if constexpr (std::is_invocable_v<decltype(parse), const nlohmann::json&, FactoryContext&>) {
      return parse(conf, ctx);
    } else {
      static_assert(std::is_invocable_r_v<StatusOr<Config>, decltype(parse), const nlohmann::json&>,
                    "kParseConfig must be StatusOr<Config>(const json&[, FactoryContext&])");
      return parse(conf);
    }
  }
};

}  // namespace turnpike
