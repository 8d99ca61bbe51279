#include "logging/log_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace turnpike::logging {
namespace {

int OpenForAppend(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

}  // namespace

// One file: the buffer workers append to (pending_, under mu_) and the one the writer thread
// is writing (writing_); they swap at each flush, so both keep their capacity.
class LogWriter::BufferedFile final : public LogFile {
 public:
  BufferedFile(std::string path, size_t capacity, LogWriter* writer)
      : path_(std::move(path)), capacity_(capacity), writer_(writer) {
    pending_.reserve(capacity_);
    writing_.reserve(capacity_);
  }
  ~BufferedFile() override {
    if (fd_ >= 0) close(fd_);
  }

  bool Append(std::string_view line) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.size() + line.size() + 1 > capacity_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    pending_.append(line);
    pending_.push_back('\n');
    // Waking under mu_ keeps writer_ alive: ~LogWriter clears it under the same lock.
    if (!wake_sent_ && writer_ != nullptr && pending_.size() > capacity_ / 2) {
      wake_sent_ = true;
      writer_->Wake();
    }
    return true;
  }
  const std::string& path() const override { return path_; }
  uint64_t dropped() const override { return dropped_.load(std::memory_order_relaxed); }
  uint64_t write_errors() const override { return write_errors_.load(std::memory_order_relaxed); }

  // Writer thread only. Writes what is queued; first reopens the file when `force_reopen`,
  // or when `check_rotation` finds the path no longer names the open file.
  void Flush(bool check_rotation, bool force_reopen);
  // ~LogWriter: nothing wakes the writer any more.
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    writer_ = nullptr;
  }

 private:
  void Reopen();

  const std::string path_;
  const size_t capacity_;
  std::mutex mu_;
  LogWriter* writer_;       // guarded by mu_; woken when the buffer is half full
  std::string pending_;     // guarded by mu_
  bool wake_sent_ = false;  // guarded by mu_
  std::string writing_;     // writer thread
  int fd_ = -1;             // writer thread
  dev_t dev_ = 0;           // writer thread: what fd_ is
  ino_t ino_ = 0;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> write_errors_{0};
};

void LogWriter::BufferedFile::Reopen() {
  if (fd_ >= 0) close(fd_);
  fd_ = OpenForAppend(path_);
  struct stat st {};
  if (fd_ >= 0 && fstat(fd_, &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
}

void LogWriter::BufferedFile::Flush(bool check_rotation, bool force_reopen) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.swap(writing_);
    wake_sent_ = false;
  }
  if (force_reopen) {
    Reopen();
  } else if (fd_ >= 0 && check_rotation) {
    struct stat st {};
    if (stat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) Reopen();
  }
  if (writing_.empty()) return;
  if (fd_ < 0) Reopen();
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
  thread_.join();  // its last round wrote everything queued
  for (const auto& f : files_) f->Detach();
}

std::shared_ptr<LogFile> LogWriter::File(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : files_) {
    if (f->path() == path) return f;
  }
  auto f = std::make_shared<BufferedFile>(path, buffer_bytes_, this);
  files_.push_back(f);
  return f;
}

StatusOr<std::shared_ptr<LogFile>> LogWriter::Open(const std::string& path) {
  int fd = OpenForAppend(path);
  if (fd < 0) return Status::Error(path + ": " + std::strerror(errno));
  close(fd);
  return File(path);
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

std::vector<LogWriter::FileStats> LogWriter::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FileStats> out;
  for (const auto& f : files_) out.push_back({f->path(), f->dropped(), f->write_errors()});
  return out;
}

void LogWriter::Run() {
  auto last_rotation_check = std::chrono::steady_clock::now();
  for (;;) {
    uint64_t served;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, interval_, [&] { return stop_ || wake_; });
      wake_ = false;
      stopping = stop_;
      served = flush_requests_;
      // Copied into a vector whose capacity is kept: a round allocates nothing (unless a
      // file was added since the last one).
      flushing_.assign(files_.begin(), files_.end());
    }
    auto now = std::chrono::steady_clock::now();
    bool check = now - last_rotation_check >= std::chrono::seconds(1);
    if (check) last_rotation_check = now;
    bool reopen = reopen_.exchange(false, std::memory_order_relaxed);
    for (const auto& f : flushing_) f->Flush(check, reopen);
    {
      std::lock_guard<std::mutex> lock(mu_);
      flushes_done_ = served;
    }
    done_cv_.notify_all();
    if (stopping) return;
  }
}

}  // namespace turnpike::logging
