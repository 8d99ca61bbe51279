// request-id: runtime part.
//
// rewrite: when the request carries a non-empty `header_name` header, that value is the id;
// otherwise one is generated (id_generator.h) and set on the request sent upstream.
// header_filter (include_in_response): the id is added to the response unless the response
// already has a non-empty header of that name.
//
// Per request the id lives in the request's RequestIdState (its buffer is reused by the
// next request), so neither phase allocates once warm. Per worker the instance keeps its
// random generator (RequestIdWorker), seeded from the OS when the worker creates it.
#pragma once

#include <memory>
#include <string>

#include "plugins/request_id/config.h"
#include "plugins/request_id/id_generator.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::request_id {

// What one request keeps between rewrite and header_filter.
struct RequestIdState {
  std::string id;  // the client's or the generated id; empty: rewrite did not run
  void Clear() { id.clear(); }
};

// Per worker: the generator ids are drawn from.
struct RequestIdWorker final : WorkerState {
  FastRandom rng = FastRandom::FromOs();
};

class RequestIdPlugin final : public Plugin {
 public:
  explicit RequestIdPlugin(Config config);
  uint32_t phases() const override {
    return kPhaseRewrite | (config_.include_in_response ? uint32_t{kPhaseHeaderFilter} : 0u);
  }
  PhaseResult Rewrite(PluginContext& ctx) const override;
  void HeaderFilter(PluginContext& ctx) const override;
  bool has_worker_state() const override { return true; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override;

  // Worker. Replaces `out` with a new id of the configured algorithm, drawn from `rng`.
  void Generate(FastRandom& rng, std::string* out) const;
  // Tests and tools: the same from a generator of its own, seeded from the OS on every call.
  void Generate(std::string* out) const;

 private:
  Config config_;
  VarRef header_;  // http_<header_name>: the client's header
};

class RequestIdFactory final
    : public TypedPluginFactory<RequestIdFactory, Config, RequestIdPlugin> {
 public:
  static constexpr std::string_view kName = "request-id";
  static constexpr int kPriority = 12015;
  static constexpr auto kParseConfig = &ParseConfig;
};

}  // namespace turnpike::plugins::request_id
