#include "core/http_date.h"

namespace turnpike::core {

std::string_view HttpDate::Get(std::time_t now) {
  if (now != cached_second_) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    len_ = std::strftime(text_, sizeof(text_), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second_ = now;
  }
  return std::string_view(text_, len_);
}

}  // namespace turnpike::core
