// LogFile: an append-only log file whose lines a background thread writes, so that the
// thread that logs (a worker, in the log phase) never waits on a disk. LogFiles hands them
// out by path. file-logger writes its entries through one, the daemon its access log.
//
// The daemon has one implementation (src/logging/log_writer.h: one writer thread for every
// file) and gives it to the plugins that need it through their factories.
//
//   // control thread, at create time
//   std::shared_ptr<LogFile> file = log_files->File(config.path);
//   // worker, log phase
//   file->Append(line);  // a memcpy under a short lock; never blocks on I/O
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace turnpike {

class LogFile {
 public:
  virtual ~LogFile() = default;

  // Any thread, hot path. Queues `line` and a '\n' as one unit: lines of different threads
  // never mix mid-line. Allocates nothing. False when the line was dropped because the
  // file's buffer is full (the writer fell behind); what was queued before stays queued.
  virtual bool Append(std::string_view line) = 0;

  virtual const std::string& path() const = 0;
  // Lines dropped by Append() because the buffer was full.
  virtual uint64_t dropped() const = 0;
  // Failed opens and writes (the bytes of such a flush are lost).
  virtual uint64_t write_errors() const = 0;
};

class LogFiles {
 public:
  virtual ~LogFiles() = default;

  // Control thread (plugin create, config load). The file for `path`: every caller naming
  // the same path shares one file and one buffer, so their lines never interleave. Opened
  // by the writer when it first has something to write; a path that cannot be opened drops
  // what is written to it (counted in write_errors()) until it can.
  virtual std::shared_ptr<LogFile> File(const std::string& path) = 0;
};

}  // namespace turnpike
