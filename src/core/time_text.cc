#include "core/time_text.h"

namespace turnpike::core {

std::string_view TimeText::Get(std::time_t now) {
  if (now != cached_second_) {
    std::tm tm{};
    if (local_) {
      localtime_r(&now, &tm);
    } else {
      gmtime_r(&now, &tm);
    }
    len_ = std::strftime(text_, sizeof(text_), format_, &tm);
    cached_second_ = now;
  }
  return std::string_view(text_, len_);
}

}  // namespace turnpike::core
