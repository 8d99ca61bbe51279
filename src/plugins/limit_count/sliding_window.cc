#include "plugins/limit_count/sliding_window.h"

#include <algorithm>
#include <cmath>

#include "turnpike/strings.h"

namespace turnpike::plugins::limit_count {
namespace {

void AppendCounter(std::string_view counter, int64_t id, std::string* out) {
  out->assign(counter);
  out->push_back('.');
  if (id < 0) {  // before 1970 with a fake clock only
    out->push_back('-');
    AppendDecimal(out, static_cast<uint64_t>(-id));
  } else {
    AppendDecimal(out, static_cast<uint64_t>(id));
  }
  out->append(".counter");
}

// Milliseconds to hundredths of a second, rounded up (APISIX: ceil(seconds * 100) / 100).
uint64_t CeilCs(double ms) { return ms <= 0 ? 0 : static_cast<uint64_t>(std::ceil(ms / 10)); }

}  // namespace

SlidingKeys MakeSlidingKeys(std::string_view counter, uint64_t window_s, int64_t now_ms,
                            std::string* current, std::string* previous) {
  // window_s <= 2^53 - 1, so its milliseconds fit.
  const auto window_ms = static_cast<int64_t>(window_s * 1000);
  int64_t id = now_ms / window_ms;
  int64_t into = now_ms % window_ms;
  if (into < 0) {  // floor, not truncation
    --id;
    into += window_ms;
  }
  AppendCounter(counter, id, current);
  AppendCounter(counter, id - 1, previous);
  return {id, static_cast<uint64_t>(window_ms - into)};
}

SlidingVerdict JudgeSliding(bool admitted, uint64_t count, uint64_t previous, uint64_t limit,
                            uint64_t window_s, uint64_t left_ms) {
  SlidingVerdict v;
  const double window_ms = static_cast<double>(window_s) * 1000;
  const double rate = static_cast<double>(std::min(previous, limit)) / window_ms;  // per ms
  const double previous_share = rate * static_cast<double>(left_ms);
  if (admitted) {
    v.allowed = true;
    double remaining = static_cast<double>(limit) - static_cast<double>(count) - previous_share;
    v.remaining = remaining > 0 ? static_cast<uint64_t>(std::floor(remaining)) : 0;
    v.reset_cs = CeilCs(static_cast<double>(left_ms));
    return v;
  }
  if (count >= limit || rate == 0) {
    v.reset_cs = CeilCs(static_cast<double>(left_ms));
    return v;
  }
  // When the previous window's share will have shrunk enough for one more.
  double delay = static_cast<double>(left_ms) - static_cast<double>(limit - count) / rate;
  v.reset_cs = CeilCs(delay);
  return v;
}

}  // namespace turnpike::plugins::limit_count
