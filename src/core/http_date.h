// HttpDate: the current time as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), formatted
// at most once per second. One instance per worker loop; not thread-safe.
#pragma once

#include <ctime>
#include <string_view>

namespace turnpike::core {

class HttpDate {
 public:
  // `now` is wall-clock seconds (time(nullptr) or a test clock).
  std::string_view Get(std::time_t now);

 private:
  std::time_t cached_second_ = -1;
  char text_[40] = {};
  size_t len_ = 0;
};

}  // namespace turnpike::core
