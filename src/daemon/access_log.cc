#include "daemon/access_log.h"

namespace turnpike::daemon {
namespace {

class FileAccessLog : public proxy::AccessLog {
 public:
  explicit FileAccessLog(std::shared_ptr<LogFile> file) : file_(std::move(file)) {}
  void Write(std::string_view line) override { file_->Append(line); }

 private:
  std::shared_ptr<LogFile> file_;
};

}  // namespace

StatusOr<std::shared_ptr<proxy::AccessLog>> OpenAccessLog(const std::string& path,
                                                          logging::LogWriter& writer) {
  StatusOr<std::shared_ptr<LogFile>> file = writer.Open(path);
  if (!file.ok()) return Status::Error("access log " + file.status().message());
  return std::shared_ptr<proxy::AccessLog>(std::make_shared<FileAccessLog>(file.value()));
}

}  // namespace turnpike::daemon
