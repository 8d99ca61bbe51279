#include "plugins/file_logger/file_logger.h"

#include "plugins/file_logger/entry.h"

namespace turnpike::plugins::file_logger {

// The request's scratch slot starts with the decision ('y': collecting, 'n':
// include_resp_body_expr said no), then holds the collected body; empty before the first piece.
void FileLoggerPlugin::BodyFilter(PluginContext& ctx, BodyPiece& piece) const {
  std::string* slot = ctx.RequestScratch(this);
  if (slot == nullptr) return;
  if (slot->empty()) {
    bool collect =
        config_.include_resp_body_expr == nullptr || config_.include_resp_body_expr->Eval(ctx);
    slot->push_back(collect ? 'y' : 'n');
  }
  if ((*slot)[0] != 'y') return;
  uint64_t have = slot->size() - 1;
  size_t room = config_.max_resp_body_bytes > have
                    ? static_cast<size_t>(config_.max_resp_body_bytes - have)
                    : 0;
  slot->append(piece.data.substr(0, std::min(room, piece.data.size())));
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
    std::string* slot = ctx.RequestScratch(this);
    if (slot != nullptr && !slot->empty() && (*slot)[0] == 'y') {
      bodies.response = std::string_view(*slot).substr(1);
    }
  }
  if (config_.include_req_body &&
      (config_.include_req_body_expr == nullptr || config_.include_req_body_expr->Eval(ctx))) {
    static const VarRef request_body = CompileVar("request_body").value();
    if (std::optional<std::string_view> b = ctx.Get(request_body)) {
      bodies.request = b->substr(0, std::min<uint64_t>(b->size(), config_.max_req_body_bytes));
    }
  }
  // Formatted on the worker into a buffer reused by every request of this thread.
  thread_local std::string line;
  line.clear();
  FormatEntry(ctx, config_, bodies, &line);
  file_->Append(line);
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
