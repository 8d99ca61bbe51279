#include "support/pattern.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace turnpike::testing {

uint64_t Fnv1a(std::string_view data, uint64_t hash) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string Fnv1aHex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::string PatternBytes(uint64_t offset, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (offset + i) % 26);
  return s;
}

PatternBuffer::PatternBuffer(size_t max_slice) : max_slice_(max_slice), data_(max_slice + 26) {
  for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>('a' + i % 26);
}

std::string_view PatternBuffer::Slice(uint64_t offset, size_t len) const {
  return std::string_view(data_.data() + offset % 26, len <= max_slice_ ? len : max_slice_);
}

void PatternChecker::Feed(std::string_view data) {
  if (ok()) {
    // Compare against a pattern window aligned to the stream offset; 26 * 2520 bytes at a time.
    static const PatternBuffer kReference(26 * 2520);
    size_t done = 0;
    while (done < data.size()) {
      size_t n = std::min(data.size() - done, kReference.max_slice());
      std::string_view expected = kReference.Slice(bytes_ + done, n);
      if (std::memcmp(data.data() + done, expected.data(), n) != 0) {
        for (size_t i = 0; i < n; ++i) {
          if (data[done + i] != expected[i]) {
            mismatch_ = bytes_ + done + i;
            break;
          }
        }
        break;
      }
      done += n;
    }
  }
  bytes_ += data.size();
}

}  // namespace turnpike::testing
