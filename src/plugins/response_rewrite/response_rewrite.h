// response-rewrite: runtime part.
//
// header_filter: evaluates `vars` (request variables and `status`); when it matches, replaces
// the status, marks the body modified when `body` or `filters` will change it, and applies
// the header operations (add, set, remove; values resolved per request). The decision is
// kept in the request's ResponseRewriteState for body_filter.
// body_filter (matched requests only): `body` replaces the body with the first piece and ends
// it; `filters` hold the pieces back (up to max_resp_body_size) and run the substitutions on
// the whole body with the last piece, matching with the worker's MatchBlock (the instance's
// worker state, when it has filters).
//
// Filters need the plain body: a response with a Content-Encoding other than identity passes
// through unfiltered and keeps its Content-Encoding (APISIX inflates gzip and brotli bodies
// first; Turnpike does not decode bodies yet).
#pragma once

#include <memory>
#include <string>

#include "plugins/response_rewrite/config.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::response_rewrite {

// What one request keeps between header_filter and body_filter (buffers reused by the next
// request).
struct ResponseRewriteState {
  // `vars` matched and `body` or `filters` change the body (not when it passes through
  // encoded, nor after max_resp_body_size when the rest passes through as it comes).
  bool rewrite_body = false;
  std::string header_value;  // a header value rendered from its template
  std::string held;          // body held back for `filters`, up to max_resp_body_size
  std::string rest;          // the part of a piece past max_resp_body_size
  void Clear() {
    rewrite_body = false;
    header_value.clear();
    ClearBuffer(held);
    ClearBuffer(rest);
  }
};

// Per worker, for `filters`: the PCRE2 match data every request of the worker reuses.
struct FilterWorker final : WorkerState {
  explicit FilterWorker(uint32_t pairs) : match(pairs) {}
  MatchBlock match;
};

class ResponseRewritePlugin final : public Plugin {
 public:
  explicit ResponseRewritePlugin(Config config) : config_(std::move(config)) {}
  uint32_t phases() const override {
    return kPhaseHeaderFilter |
           (config_.body || !config_.filters.empty() ? uint32_t{kPhaseBodyFilter} : 0u);
  }
  void HeaderFilter(PluginContext& ctx) const override;
  void BodyFilter(PluginContext& ctx, BodyPiece& piece) const override;
  bool has_worker_state() const override { return !config_.filters.empty(); }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override;

 private:
  void RunFilters(MatchBlock* match, std::string* body, BodyPiece& piece) const;

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
