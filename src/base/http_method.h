// HTTP methods known to the route matcher, as a bit set so a route's `methods` list is one mask.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace turnpike::base {

// The methods APISIX accepts in a route's `methods` list, plus kOther for anything else a
// client may send (such a request matches only routes without a `methods` list).
enum class Method : uint8_t {
  kGet,
  kPost,
  kPut,
  kDelete,
  kPatch,
  kHead,
  kOptions,
  kConnect,
  kTrace,
  kPurge,
  kOther,
};

using MethodMask = uint16_t;
inline constexpr MethodMask kAnyMethod = 0xffff;

constexpr MethodMask MaskOf(Method m) { return static_cast<MethodMask>(1u << static_cast<int>(m)); }

// Exact, case-sensitive (as on the wire and in APISIX's schema enum). Unknown -> kOther.
Method ParseMethod(std::string_view name);

// The names APISIX allows in a route's `methods`; nullopt for anything else.
std::optional<Method> ParseRouteMethod(std::string_view name);

std::string_view MethodName(Method m);

}  // namespace turnpike::base
