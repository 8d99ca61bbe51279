// Software prefetch of whole objects: for hot paths that know, a step ahead, which cold memory
// they will touch next (the next round-robin node of a 10k-node set, its pool slot, its idle
// connection), so that its cache misses overlap the work in between instead of stalling it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace turnpike::base {

inline constexpr size_t kCacheLine = 64;
inline constexpr int kPrefetchRead = 0;
inline constexpr int kPrefetchWrite = 1;  // the lines will be written: fetched for ownership

// Starts loading every cache line of [p, p + n) into all cache levels. A hint: no fault (any
// address may be given), no effect on any result, no wait.
template <int kRw = kPrefetchRead>
inline void PrefetchLines(const void* p, size_t n) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t line = begin & ~uintptr_t{kCacheLine - 1}; line < begin + n; line += kCacheLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), kRw, 3);
  }
}

}  // namespace turnpike::base
