// PathParams: the path parameters a route of the param router captured (`/user/:id`,
// `/files/*path`), exposed to the request as `uri_param_<name>` variables (reference §7.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace turnpike::router {

// Filled by RouteTable::Match() in Mode::kUriWithParameter. `names[i]` views the route table
// (valid while the table lives), `values[i]` views the request path passed to Match(). Holds
// at most kMax parameters; a route with more matches as usual but the extra values are not
// recorded. Parameters appear in the order of the route's uri.
struct PathParams {
  static constexpr size_t kMax = 8;
  std::string_view names[kMax];
  std::string_view values[kMax];
  uint8_t count = 0;

  // The value of parameter `name` in *value; false if there is none. When a uri repeats a
  // name, the last one wins (APISIX stores captures in a table, later ones overwrite).
  bool Find(std::string_view name, std::string_view* value) const {
    for (size_t i = count; i-- > 0;) {
      if (names[i] == name) {
        *value = values[i];
        return true;
      }
    }
    return false;
  }

  // Records a parameter unless kMax are already recorded.
  void Add(std::string_view name, std::string_view value) {
    if (count < kMax) {
      names[count] = name;
      values[count] = value;
      ++count;
    }
  }
};

}  // namespace turnpike::router
