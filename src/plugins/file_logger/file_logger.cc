#include "plugins/file_logger/file_logger.h"

namespace turnpike::plugins::file_logger {

FileLoggerPlugin::FileLoggerPlugin(Config config, std::shared_ptr<LogFile> file)
    : config_(std::move(config)),
      file_(std::move(file)),
      request_body_(CompileVar("request_body").value()) {}

std::unique_ptr<WorkerState> FileLoggerPlugin::CreateWorkerState(
    const WorkerEnvironment& /*env*/) const {
  return std::make_unique<LogLine>();
}

void FileLoggerPlugin::BodyFilter(PluginContext& ctx, BodyPiece& piece) const {
  CollectedResponse& collected = ctx.RequestState<CollectedResponse>(this);
  if (collected.decision == CollectedResponse::Decision::kUndecided) {
    bool collect =
        config_.include_resp_body_expr == nullptr || config_.include_resp_body_expr->Eval(ctx);
    collected.decision =
        collect ? CollectedResponse::Decision::kCollect : CollectedResponse::Decision::kSkip;
  }
  if (collected.decision != CollectedResponse::Decision::kCollect) return;
  uint64_t have = collected.body.size();
  size_t room = config_.max_resp_body_bytes > have
                    ? static_cast<size_t>(config_.max_resp_body_bytes - have)
                    : 0;
  collected.body.append(piece.data.substr(0, std::min(room, piece.data.size())));
}

bool FileLoggerPlugin::Matches(PluginContext& ctx) const {
  if (config_.match.empty()) return true;
  for (const ExpressionConstPtr& e : config_.match) {
    if (e->Eval(ctx)) return true;
  }
  return false;
}

void FileLoggerPlugin::Log(PluginContext& ctx) const {
  if (!Matches(ctx)) return;
  CollectedBodies bodies;
  if (config_.include_resp_body) {
    const CollectedResponse& collected = ctx.RequestState<CollectedResponse>(this);
    if (collected.decision == CollectedResponse::Decision::kCollect) {
      bodies.response = collected.body;
    }
  }
  if (config_.include_req_body &&
      (config_.include_req_body_expr == nullptr || config_.include_req_body_expr->Eval(ctx))) {
    if (std::optional<std::string_view> b = ctx.Get(request_body_)) {
      bodies.request = b->substr(0, std::min<uint64_t>(b->size(), config_.max_req_body_bytes));
    }
  }
  // Formatted on the worker into its buffer, reused by every request of the worker.
  LogLine& worker = ctx.worker_state<LogLine>(*this);
  worker.text.clear();
  FormatEntry(ctx, config_, bodies, &worker.scratch, &worker.text);
  file_->Append(worker.text);
}

FileLoggerFactory::FileLoggerFactory(std::shared_ptr<LogFiles> log_files)
    : log_files_(std::move(log_files)) {}

StatusOr<PluginConstSharedPtr> FileLoggerFactory::MakePlugin(Config config,
                                                             FactoryContext& /*ctx*/) const {
  std::shared_ptr<LogFile> file = log_files_->File(config.path);
  return PluginConstSharedPtr(
      std::make_shared<FileLoggerPlugin>(std::move(config), std::move(file)));
}

}  // namespace turnpike::plugins::file_logger
