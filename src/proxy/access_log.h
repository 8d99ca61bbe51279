// AccessLog: where finished requests are reported, one line each.
//
// Workers call Write() at the end of every exchange when an access log is configured; the
// implementation (daemon/) must be thread-safe and must not block the caller on I/O.
#pragma once

#include <string_view>

namespace turnpike::proxy {

class AccessLog {
 public:
  virtual ~AccessLog() = default;
  // Any worker thread. `line` is only valid during the call (no trailing newline).
  virtual void Write(std::string_view line) = 0;
};

}  // namespace turnpike::proxy
