// response-rewrite: runtime part.
//
// header_filter: evaluates `vars` (request variables and `status`); when it matches, replaces
// the status, marks the body modified when `body` or `filters` will change it, and applies
// the header operations (add, set, remove; values resolved per request). The decision is
// kept in RequestScratch for body_filter.
// body_filter (matched requests only): `body` replaces the body with the first piece and ends
// it; `filters` hold the pieces back (up to max_resp_body_size) and run the substitutions on
// the whole body with the last piece.
//
// Filters need the plain body: a response with a Content-Encoding other than identity passes
// through unfiltered and keeps its Content-Encoding (APISIX inflates gzip and brotli bodies
// first; Turnpike does not decode bodies yet).
#pragma once

#include <memory>

#include "plugins/response_rewrite/config.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::response_rewrite {

class ResponseRewritePlugin final : public Plugin {
 public:
  explicit ResponseRewritePlugin(Config config) : config_(std::move(config)) {}
  uint32_t phases() const override {
    return kPhaseHeaderFilter |
           (config_.body || !config_.filters.empty() ? uint32_t{kPhaseBodyFilter} : 0u);
  }
  void HeaderFilter(PluginContext& ctx) const override;
  void BodyFilter(PluginContext& ctx, BodyPiece& piece) const override;

 private:
  // RequestScratch(this) holds one of these per request ("" = vars did not match).
  static constexpr char kRewrite = 'r';  // rewrite the body
  static constexpr char kPass = 'p';     // matched, but the body passes through

  void RunFilters(std::string* body, BodyPiece& piece) const;

  Config config_;
};

class ResponseRewriteFactory final
    : public TypedPluginFactory<ResponseRewriteFactory, Config, ResponseRewritePlugin> {
 public:
  static constexpr std::string_view kName = "response-rewrite";
  static constexpr int kPriority = 899;
  static constexpr auto kParseConfig = &ParseConfig;
};

}  // namespace turnpike::plugins::response_rewrite
