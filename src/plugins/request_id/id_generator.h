// Request id generators for the request-id plugin: UUID v4 (lua-resty-jit-uuid's format),
// UUID v7, nanoid (21 characters of the URL-safe alphabet), range_id (N characters drawn from
// a configured set) and KSUID (27 base62 characters).
//
// Worker, hot path: each generator writes into a caller-provided buffer and never allocates.
// Randomness comes from a xoshiro256** generator the caller keeps (request-id keeps one per
// worker in its worker state), seeded from the OS (getrandom): fast and unpredictable enough
// for correlation ids, and no lock or syscall per id. Not for secrets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace turnpike::plugins::request_id {

inline constexpr size_t kUuidLength = 36;
inline constexpr size_t kNanoidLength = 21;
inline constexpr size_t kKsuidLength = 27;

// Not thread-safe: one per thread that draws from it.
class FastRandom {
 public:
  // Seeded from the OS (a getrandom call; the time and thread id when it has no entropy
  // yet, very early at boot).
  static FastRandom FromOs();
  // Seeded explicitly (tests and benchmarks).
  explicit FastRandom(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-32 for small n).
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(((Next() >> 32) * n) >> 32); }

 private:
  uint64_t s_[4];
};

// Each writes exactly the documented number of characters at `out`.
void UuidV4(FastRandom& rng, char out[kUuidLength]);
// `unix_ms`: milliseconds since the epoch.
void UuidV7(FastRandom& rng, uint64_t unix_ms, char out[kUuidLength]);
void Nanoid(FastRandom& rng, char out[kNanoidLength]);
// `length` characters, each drawn uniformly from `char_set` (not empty).
void RangeId(FastRandom& rng, std::string_view char_set, size_t length, char* out);
// `unix_seconds`: seconds since the epoch.
void Ksuid(FastRandom& rng, uint64_t unix_seconds, char out[kKsuidLength]);

}  // namespace turnpike::plugins::request_id
