// request-id: configuration part. APISIX's `request-id` plugin (priority 12015): gives every
// request an id in a header, unless the client already sent one, and echoes it in the
// response.
//
//   request-id: {header_name: X-Request-Id, include_in_response: true, algorithm: uuid,
//                range_id: {char_set: "abc...", length: 16}}
//
// algorithm: uuid (v4, the default), nanoid, range_id, ksuid, uuidv7 (APISIX's enum).
#pragma once

#include <cstddef>
#include <string>

#include "turnpike/plugin.h"

namespace turnpike::plugins::request_id {

enum class Algorithm { kUuid, kNanoid, kRangeId, kKsuid, kUuidV7 };

// APISIX's default char_set, typo included ("...GHIGKL...": no 'J', two 'G's), so that
// ids are drawn from the same alphabet as APISIX's.
inline constexpr char kDefaultCharSet[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIGKLMNOPQRSTUVWXYZ0123456789";

struct Config {
  std::string header_name = "X-Request-Id";
  bool include_in_response = true;
  Algorithm algorithm = Algorithm::kUuid;
  std::string char_set = kDefaultCharSet;  // range_id.char_set (at least 6 characters)
  size_t length = 16;                      // range_id.length (at least 6)
};

// Control thread. Validates like APISIX's schema.
StatusOr<Config> ParseConfig(const nlohmann::json& conf);

}  // namespace turnpike::plugins::request_id
