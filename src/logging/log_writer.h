// LogWriter: the process's one writer of log files (turnpike/log_file.h). Every line of the
// access log and of every file-logger instance goes through it, so that no worker ever
// touches a disk.
//
// How a line travels. A worker's Append() copies the line and a '\n' into the file's
// in-memory buffer under the file's own mutex (a memcpy: no I/O, no allocation, no other
// lock except once per half-full buffer to wake the writer). One line is one copy, so lines
// of different workers never interleave mid-line. The writer thread swaps the buffer for an
// empty one every flush interval (50 ms by default), or as soon as a buffer passes half
// full, and write()s it whole to the file, opened O_APPEND.
//
// Bounds. Each file has a buffer of `buffer_bytes` (1 MiB by default; two of them: the one
// being filled and the one being written). When the writer falls behind and a line does not
// fit in what is left, that line is dropped whole — the newest line, never part of one,
// never lines already queued — and counted in LogFile::dropped(). A failed open or write
// loses that flush's bytes, counted in LogFile::write_errors(). Workers never wait.
//
// Rotation. Once a second the writer compares the path's inode with the open file's and
// reopens when they differ or the path is gone (logrotate's rename + create); Reopen()
// forces it at the next flush (nginx's USR1). A file is opened when it first has something
// to write; until its path can be opened, its lines are dropped (write_errors()).
//
// Shutdown. The destructor writes everything queued, then stops the thread and closes the
// files. A LogFile still held by someone after that keeps accepting lines until its buffer
// is full, but nothing writes them: destroy the writer after the last worker stopped.
//
// Steady state allocates nothing on either side (tests/proxy/alloc_test.cc counts every
// thread's allocations, this one's included).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "turnpike/log_file.h"
#include "turnpike/status.h"

namespace turnpike::logging {

class LogWriter final : public LogFiles {
 public:
  static constexpr size_t kDefaultBuffer = 1 << 20;  // per file

  // Starts the writer thread.
  explicit LogWriter(std::chrono::milliseconds flush_interval = std::chrono::milliseconds(50),
                     size_t buffer_bytes = kDefaultBuffer);
  // Writes what is queued, stops the thread, closes the files.
  ~LogWriter() override;
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Control thread. The shared file for `path` (see LogFiles::File), opened lazily.
  std::shared_ptr<LogFile> File(const std::string& path) override;
  // Control thread, at startup: File(), after checking on the calling thread that `path` can
  // be opened for appending (creating it), so that a bad path is an error the caller can
  // report (nginx refuses to start without its access log) instead of lines lost later.
  StatusOr<std::shared_ptr<LogFile>> Open(const std::string& path);

  // Any thread: reopen every file at the next flush (log rotation).
  void Reopen();
  // Any thread: write out what is queued now and wait until it is written (tests, shutdown).
  void FlushNow();

  // Control thread: what each file lost so far (for a report at shutdown).
  struct FileStats {
    std::string path;
    uint64_t dropped = 0;
    uint64_t write_errors = 0;
  };
  std::vector<FileStats> Stats() const;

 private:
  class BufferedFile;  // log_writer.cc
  friend class BufferedFile;

  void Wake();
  void Run();

  const std::chrono::milliseconds interval_;
  const size_t buffer_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;            // guarded by mu_
  bool wake_ = false;            // guarded by mu_
  uint64_t flush_requests_ = 0;  // guarded by mu_: FlushNow's tickets
  uint64_t flushes_done_ = 0;    // guarded by mu_: the last ticket served
  std::condition_variable done_cv_;
  std::atomic<bool> reopen_{false};
  std::vector<std::shared_ptr<BufferedFile>> files_;     // guarded by mu_
  std::vector<std::shared_ptr<BufferedFile>> flushing_;  // writer thread: files_ of this round
  std::thread thread_;
};

}  // namespace turnpike::logging
