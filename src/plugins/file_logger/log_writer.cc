#include "plugins/file_logger/log_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace turnpike::plugins::file_logger {

LogFile::LogFile(std::string path, size_t capacity)
    : path_(std::move(path)), capacity_(capacity) {
  pending_.reserve(capacity_);
  writing_.reserve(capacity_);
}

LogFile::~LogFile() {
  if (fd_ >= 0) close(fd_);
}

bool LogFile::Append(std::string_view line) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.size() + line.size() + 1 > capacity_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    pending_.append(line);
    pending_.push_back('\n');
    if (!wake_sent_ && writer_ != nullptr && pending_.size() > capacity_ / 2) {
      wake_sent_ = true;
      wake = true;
    }
    if (wake) writer_->Wake();
  }
  return true;
}

void LogFile::Open() {
  if (fd_ >= 0) close(fd_);
  fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  struct stat st{};
  if (fd_ >= 0 && fstat(fd_, &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
}

void LogFile::Flush(bool check_rotation, bool force_reopen) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.swap(writing_);
    wake_sent_ = false;
  }
  if (force_reopen) {
    Open();
  } else if (fd_ >= 0 && check_rotation) {
    struct stat st{};
    if (stat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) Open();
  }
  if (writing_.empty()) return;
  if (fd_ < 0) Open();
  if (fd_ < 0) {
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    writing_.clear();
    return;
  }
  const char* p = writing_.data();
  size_t left = writing_.size();
  while (left > 0) {
    ssize_t n = write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  writing_.clear();
}

LogWriter::LogWriter(std::chrono::milliseconds flush_interval, size_t buffer_bytes)
    : interval_(flush_interval), buffer_bytes_(buffer_bytes) {
  thread_ = std::thread([this] { Run(); });
}

LogWriter::~LogWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  for (const auto& f : files_) {
    std::lock_guard<std::mutex> lock(f->mu_);
    f->writer_ = nullptr;
  }
}

std::shared_ptr<LogFile> LogWriter::File(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : files_) {
    if (f->path() == path) return f;
  }
  auto f = std::make_shared<LogFile>(path, buffer_bytes_);
  f->writer_ = this;
  files_.push_back(f);
  return f;
}

void LogWriter::Reopen() {
  reopen_.store(true, std::memory_order_relaxed);
  Wake();
}

void LogWriter::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_one();
}

void LogWriter::FlushNow() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t ticket = ++flush_requests_;
  wake_ = true;
  cv_.notify_one();
  done_cv_.wait(lock, [&] { return flushes_done_ >= ticket || stop_; });
}

void LogWriter::Run() {
  auto last_rotation_check = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<LogFile>> files;
  for (;;) {
    uint64_t served;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, interval_, [&] { return stop_ || wake_; });
      wake_ = false;
      stopping = stop_;
      served = flush_requests_;
      files = files_;
    }
    auto now = std::chrono::steady_clock::now();
    bool check = now - last_rotation_check >= std::chrono::seconds(1);
    if (check) last_rotation_check = now;
    bool reopen = reopen_.exchange(false, std::memory_order_relaxed);
    for (const auto& f : files) f->Flush(check, reopen);
    {
      std::lock_guard<std::mutex> lock(mu_);
      flushes_done_ = served;
    }
    done_cv_.notify_all();
    if (stopping) return;
  }
}

}  // namespace turnpike::plugins::file_logger
