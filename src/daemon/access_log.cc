#include "daemon/access_log.h"

#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

namespace turnpike::daemon {
namespace {

class SpdlogAccessLog : public proxy::AccessLog {
 public:
  explicit SpdlogAccessLog(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
  ~SpdlogAccessLog() override { logger_->flush(); }
  void Write(std::string_view line) override { logger_->info(line); }

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace

StatusOr<std::shared_ptr<proxy::AccessLog>> OpenAccessLog(const std::string& path) {
  try {
    // One background thread writes; a full queue drops the oldest lines rather than block a
    // worker.
    spdlog::init_thread_pool(16384, 1);
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path);
    auto logger = std::make_shared<spdlog::async_logger>(
        "access", sink, spdlog::thread_pool(), spdlog::async_overflow_policy::overrun_oldest);
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    spdlog::register_logger(logger);  // so flush_every and shutdown() flush it
    spdlog::flush_every(std::chrono::seconds(1));
    return std::shared_ptr<proxy::AccessLog>(std::make_shared<SpdlogAccessLog>(logger));
  } catch (const spdlog::spdlog_ex& e) {
    return Status::Error("access log " + path + ": " + e.what());
  }
}

}  // namespace turnpike::daemon
