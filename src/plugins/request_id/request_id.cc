#include "plugins/request_id/request_id.h"

#include <chrono>

namespace turnpike::plugins::request_id {
namespace {

uint64_t UnixMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

RequestIdPlugin::RequestIdPlugin(Config config) : config_(std::move(config)) {
  // ngx.req.get_headers() looks names up lowercased with '_' read as '-'.
  header_.kind = VarRef::Kind::kHeader;
  header_.source = "http_" + config_.header_name;
  for (char c : config_.header_name) {
    header_.name.push_back(c == '_' ? '-' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
  }
}

std::unique_ptr<WorkerState> RequestIdPlugin::CreateWorkerState(
    const WorkerEnvironment& /*env*/) const {
  return std::make_unique<RequestIdWorker>();
}

void RequestIdPlugin::Generate(std::string* out) const {
  FastRandom rng = FastRandom::FromOs();
  Generate(rng, out);
}

void RequestIdPlugin::Generate(FastRandom& rng, std::string* out) const {
  switch (config_.algorithm) {
    case Algorithm::kUuid:
      out->resize(kUuidLength);
      UuidV4(rng, out->data());
      return;
    case Algorithm::kUuidV7:
      out->resize(kUuidLength);
      UuidV7(rng, UnixMillis(), out->data());
      return;
    case Algorithm::kNanoid:
      out->resize(kNanoidLength);
      Nanoid(rng, out->data());
      return;
    case Algorithm::kRangeId:
      out->resize(config_.length);
      RangeId(rng, config_.char_set, config_.length, out->data());
      return;
    case Algorithm::kKsuid:
      out->resize(kKsuidLength);
      Ksuid(rng, UnixMillis() / 1000, out->data());
      return;
  }
}

PhaseResult RequestIdPlugin::Rewrite(PluginContext& ctx) const {
  std::string& id = ctx.RequestState<RequestIdState>(this).id;
  std::optional<std::string_view> sent = ctx.Get(header_);
  if (sent && !sent->empty()) {
    id.assign(*sent);  // kept for the response; the request goes upstream unchanged
    return PhaseResult::kContinue;
  }
  Generate(ctx.worker_state<RequestIdWorker>(*this).rng, &id);
  ctx.SetRequestHeader(config_.header_name, id);
  return PhaseResult::kContinue;
}

void RequestIdPlugin::HeaderFilter(PluginContext& ctx) const {
  std::optional<std::string_view> present = ctx.ResponseHeader(config_.header_name);
  if (present && !present->empty()) return;
  const std::string& id = ctx.RequestState<RequestIdState>(this).id;
  // Empty when rewrite did not run for this request (an answer before the route's rewrite
  // phase, e.g. 404 from a global rule's request): nothing to echo, as in APISIX.
  if (id.empty()) return;
  ctx.SetResponseHeader(config_.header_name, id);
}

}  // namespace turnpike::plugins::request_id
