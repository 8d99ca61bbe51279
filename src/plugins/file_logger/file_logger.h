// file-logger: runtime part. body_filter collects the response body when include_resp_body
// asks for it (into the request's CollectedResponse, capped at max_resp_body_bytes); log
// checks `match`, formats the entry (entry.h) on the worker into the worker's line buffer
// (LogLine, its worker state) and appends the line to its LogFile (turnpike/log_file.h),
// which a background thread writes (the worker never touches the disk).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "plugins/file_logger/config.h"
#include "plugins/file_logger/entry.h"
#include "turnpike/log_file.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::file_logger {

// What one request keeps between body_filter and log.
struct CollectedResponse {
  enum class Decision : uint8_t {
    kUndecided,  // no body piece yet
    kCollect,    // collecting (include_resp_body_expr absent or true)
    kSkip,       // include_resp_body_expr said no
  };
  Decision decision = Decision::kUndecided;
  std::string body;  // at most max_resp_body_bytes
  void Clear() {
    decision = Decision::kUndecided;
    ClearBuffer(body);
  }
};

// Per worker: the buffer log lines are formatted into and the formatter's scratch buffers
// (their capacity serves every request).
struct LogLine final : WorkerState {
  std::string text;
  EntryScratch scratch;
};

class FileLoggerPlugin final : public Plugin {
 public:
  FileLoggerPlugin(Config config, std::shared_ptr<LogFile> file);
  uint32_t phases() const override {
    return kPhaseLog | (config_.include_resp_body ? kPhaseBodyFilter : 0u);
  }
  bool reads_request_body() const override { return config_.include_req_body; }
  void BodyFilter(PluginContext& ctx, BodyPiece& piece) const override;
  void Log(PluginContext& ctx) const override;
  bool has_worker_state() const override { return true; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override;

  const Config& config() const { return config_; }
  const LogFile& file() const { return *file_; }

 private:
  bool Matches(PluginContext& ctx) const;

  Config config_;
  std::shared_ptr<LogFile> file_;
  VarRef request_body_;  // $request_body
};

class FileLoggerFactory final
    : public TypedPluginFactory<FileLoggerFactory, Config, FileLoggerPlugin> {
 public:
  static constexpr std::string_view kName = "file-logger";
  static constexpr int kPriority = 399;
  static constexpr auto kParseConfig = &ParseConfig;

  // `log_files` (the daemon's one log writer) is shared by every instance; required.
  explicit FileLoggerFactory(std::shared_ptr<LogFiles> log_files);
  // The instance writes to log_files' file for config.path (one per path, shared).
  StatusOr<PluginConstSharedPtr> MakePlugin(Config config, FactoryContext& ctx) const;

 private:
  std::shared_ptr<LogFiles> log_files_;
};

}  // namespace turnpike::plugins::file_logger
