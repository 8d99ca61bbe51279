// limit-count's sliding window on Redis: the counters' names and the verdict from what the
// check-and-increment script saw (RedisStore::IncrementSliding), with APISIX's semantics so
// APISIX and Turnpike on one Redis share one limit.
//
// Windows are aligned to the wall clock: window id = floor(now / window). A key's counter
// for a window is "<counter>.<id>.counter" ("plugin-limit-count:/apisix/routes/1:123:
// 10.0.0.1.28333333.counter"), expiring two windows after it was opened. A request is
// rejected when the current window's count is at the limit, or when the previous window's
// count (capped at the limit), spread evenly over its window, still covers the part of the
// sliding window left (`left_ms`) so much that it and the current count reach the limit.
//
// Pure functions; any thread. No allocation beyond `out`'s growth.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace turnpike::plugins::limit_count {

// The counters of `counter` (the whole Redis key before the window) for the window that
// holds `now_ms` and the one before it, and the milliseconds left of the current window.
struct SlidingKeys {
  int64_t window_id = 0;
  uint64_t left_ms = 0;  // in (0, window_s * 1000]
};
SlidingKeys MakeSlidingKeys(std::string_view counter, uint64_t window_s, int64_t now_ms,
                            std::string* current, std::string* previous);

struct SlidingVerdict {
  bool allowed = false;
  uint64_t remaining = 0;  // admitted: floor(limit - count - previous' share), at least 0
  uint64_t reset_cs = 0;   // hundredths of a second, rounded up: until the window ends, or
                           // rejected by the estimate, until the estimate lets one through
};
// `admitted`, `count` and `previous` are the script's answer (count after the increment when
// admitted; previous capped at the limit).
SlidingVerdict JudgeSliding(bool admitted, uint64_t count, uint64_t previous, uint64_t limit,
                            uint64_t window_s, uint64_t left_ms);

}  // namespace turnpike::plugins::limit_count
