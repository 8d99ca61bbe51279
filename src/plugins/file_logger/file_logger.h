// file-logger: runtime part. body_filter collects the response body when include_resp_body
// asks for it (into the request's plugin scratch, capped at max_resp_body_bytes); log checks
// `match`, formats the entry (entry.h) on the worker and appends the line to its LogFile
// (turnpike/log_file.h), which a background thread writes (the worker never touches the disk).
#pragma once

#include <memory>

#include "plugins/file_logger/config.h"
#include "turnpike/log_file.h"
#include "turnpike/plugin.h"
#include "turnpike/typed_factory.h"

namespace turnpike::plugins::file_logger {

class FileLoggerPlugin final : public Plugin {
 public:
  FileLoggerPlugin(Config config, std::shared_ptr<LogFile> file)
      : config_(std::move(config)), file_(std::move(file)) {}
  uint32_t phases() const override {
    return kPhaseLog | (config_.include_resp_body ? kPhaseBodyFilter : 0u);
  }
  bool reads_request_body() const override { return config_.include_req_body; }
  void BodyFilter(PluginContext& ctx, BodyPiece& piece) const override;
  void Log(PluginContext& ctx) const override;

  const Config& config() const { return config_; }
  const LogFile& file() const { return *file_; }

 private:
  bool Matches(PluginContext& ctx) const;

  Config config_;
  std::shared_ptr<LogFile> file_;
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
