// Deterministic payloads and digests shared by tests and the backend's contract:
// /bytes/<n> sends byte i = 'a' + i % 26, and /echo reports the 64-bit FNV-1a of the body.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::testing {

inline constexpr uint64_t kFnv1aOffset = 14695981039346656037ull;

// FNV-1a (64-bit) of `data`, continuing from `hash` so large bodies can be digested in pieces.
uint64_t Fnv1a(std::string_view data, uint64_t hash = kFnv1aOffset);
std::string Fnv1aHex(uint64_t hash);  // 16 lowercase hex digits, as /echo prints it

// `n` bytes of the /bytes pattern starting at stream offset `offset`.
std::string PatternBytes(uint64_t offset, size_t n);

// Zero-copy slices of the pattern for streaming large bodies.
class PatternBuffer {
 public:
  explicit PatternBuffer(size_t max_slice);
  // Pattern bytes [offset, offset + len); len <= max_slice. Valid while the buffer lives.
  std::string_view Slice(uint64_t offset, size_t len) const;
  size_t max_slice() const { return max_slice_; }

 private:
  size_t max_slice_;
  std::vector<char> data_;
};

// Verifies a streamed body against the pattern without storing it.
class PatternChecker {
 public:
  void Feed(std::string_view data);
  uint64_t bytes() const { return bytes_; }
  bool ok() const { return mismatch_ == UINT64_MAX; }
  uint64_t first_mismatch() const { return mismatch_; }  // stream offset, if !ok()

 private:
  uint64_t bytes_ = 0;
  uint64_t mismatch_ = UINT64_MAX;
};

}  // namespace turnpike::testing
