// LogWriter: appends lines to log files from one background thread, so that a worker never
// waits on a disk.
//
// Each path is opened once (O_APPEND) and shared by every plugin instance naming it. A worker
// copies its line into the file's bounded buffer under a short lock (a memcpy, no I/O, no
// allocation); when the buffer is full the line is dropped and counted. The writer thread
// swaps the buffer out every flush interval (sooner when it fills up) and write()s it whole.
// Rotation: every second the writer compares the path's inode with the open file's and
// reopens when they differ or the path is gone (logrotate's rename + create), and Reopen()
// forces it (SIGUSR1-style). Opening fails quietly: lines are dropped until the path works.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace turnpike::plugins::file_logger {

class LogWriter;

class LogFile {
 public:
  LogFile(std::string path, size_t capacity);
  ~LogFile();
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  // Any thread. Queues `line` followed by '\n'. False when the buffer is full (the line is
  // dropped and counted).
  bool Append(std::string_view line);

  const std::string& path() const { return path_; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t write_errors() const { return write_errors_.load(std::memory_order_relaxed); }

 private:
  friend class LogWriter;
  // Writer thread only.
  void Flush(bool check_rotation, bool force_reopen);
  void Open();

  const std::string path_;
  const size_t capacity_;
  LogWriter* writer_ = nullptr;  // woken when the buffer is half full
  std::mutex mu_;
  std::string pending_;  // guarded by mu_
  bool wake_sent_ = false;  // guarded by mu_
  std::string writing_;  // writer thread
  int fd_ = -1;          // writer thread
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> write_errors_{0};
};

class LogWriter {
 public:
  static constexpr size_t kDefaultBuffer = 1 << 20;  // per file

  explicit LogWriter(std::chrono::milliseconds flush_interval = std::chrono::milliseconds(50),
                     size_t buffer_bytes = kDefaultBuffer);
  // Writes what is queued, stops the thread, closes the files.
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Control thread (config load). The file for `path`, shared; opened by the writer thread.
  std::shared_ptr<LogFile> File(const std::string& path);
  // Any thread: reopen every file at the next flush (log rotation).
  void Reopen();
  // Any thread: write out what is queued now and wait for it (tests, shutdown).
  void FlushNow();
  void Wake();

 private:
  void Run();

  const std::chrono::milliseconds interval_;
  const size_t buffer_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;
  uint64_t flush_requests_ = 0;  // FlushNow handshake
  uint64_t flushes_done_ = 0;
  std::condition_variable done_cv_;
  std::atomic<bool> reopen_{false};
  std::vector<std::shared_ptr<LogFile>> files_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace turnpike::plugins::file_logger
