// TimeText: the current time formatted with strftime, re-formatted at most once per second.
// Used for the HTTP Date header (IMF-fixdate, GMT) and the access log's local time. One
// instance per worker loop; not thread-safe.
#pragma once

#include <ctime>
#include <string_view>

namespace turnpike::core {

class TimeText {
 public:
  static constexpr const char* kHttpDate = "%a, %d %b %Y %H:%M:%S GMT";  // with local = false
  static constexpr const char* kLogTime = "%d/%b/%Y:%H:%M:%S %z";        // with local = true

  TimeText(const char* format, bool local) : format_(format), local_(local) {}

  // `now` is wall-clock seconds (time(nullptr) or a test clock).
  std::string_view Get(std::time_t now);

 private:
  const char* format_;
  bool local_;
  std::time_t cached_second_ = -1;
  char text_[40] = {};
  size_t len_ = 0;
};

}  // namespace turnpike::core
