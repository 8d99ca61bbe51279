#include "base/http_method.h"

#include <array>

namespace turnpike::base {
namespace {
constexpr std::array<std::string_view, 10> kNames = {
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"};
}  // namespace

Method ParseMethod(std::string_view name) {
  auto m = ParseRouteMethod(name);
  return m ? *m : Method::kOther;
}

std::optional<Method> ParseRouteMethod(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Method>(i);
  }
  return std::nullopt;
}

std::string_view MethodName(Method m) {
  auto i = static_cast<size_t>(m);
  return i < kNames.size() ? kNames[i] : std::string_view("OTHER");
}

}  // namespace turnpike::base
