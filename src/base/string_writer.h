// StringWriter: appends to a std::string through a raw cursor, for hot encoders that make
// many small appends (an HTTP head is ~30 of them).
//
// std::string::append checks the size limit and the capacity (small-string or heap), copies,
// stores the new length and a terminator on every call: ~25 instructions before the copy.
// The writer extends the string once by an expected size (zero-filled by std::string, so keep
// the guess close: every byte of it is written twice), copies through a pointer, grows by
// doubling when the guess was short, and cuts the string to what was written in Finish() or
// the destructor. A literal's copy is inlined at its fixed size.
//
// While a writer is open, the string's size() includes the unwritten tail: read it through
// the writer (written()) only. One writer per string at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/strings.h"

namespace turnpike::base {

// memcpy for the short pieces heads are made of: up to 16 bytes in two overlapping moves
// inline (a call to memcpy costs more than the copy), longer ones by memcpy. `n` may be 0
// (then `from` may be null).
inline void CopyBytes(char* to, const char* from, size_t n) {
  if (n >= 8) {
    if (n > 16) {
      std::memcpy(to, from, n);
      return;
    }
    uint64_t a;
    uint64_t b;
    std::memcpy(&a, from, 8);
    std::memcpy(&b, from + n - 8, 8);
    std::memcpy(to, &a, 8);
    std::memcpy(to + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a;
    uint32_t b;
    std::memcpy(&a, from, 4);
    std::memcpy(&b, from + n - 4, 4);
    std::memcpy(to, &a, 4);
    std::memcpy(to + n - 4, &b, 4);
  } else if (n > 0) {
    const char first = from[0];
    const char middle = from[n / 2];
    const char last = from[n - 1];
    to[0] = first;
    to[n / 2] = middle;
    to[n - 1] = last;
  }
}

class StringWriter {
 public:
  // Appends after out's current bytes; `expect`: how many bytes will probably be written.
  StringWriter(std::string* out, size_t expect) : out_(out) {
    const size_t used = out->size();
    out->resize(used + expect);
    p_ = out->data() + used;
    end_ = out->data() + out->size();
  }
  ~StringWriter() { Finish(); }
  StringWriter(const StringWriter&) = delete;
  StringWriter& operator=(const StringWriter&) = delete;

  void Append(std::string_view s) {
    if (static_cast<size_t>(end_ - p_) < s.size()) Grow(s.size());
    CopyBytes(p_, s.data(), s.size());
    p_ += s.size();
  }
  void Push(char c) {
    if (p_ == end_) Grow(1);
    *p_++ = c;
  }
  void AppendDecimal(uint64_t v) {
    char buf[kMaxDecimalDigits];
    Append(FormatDecimal(v, buf));
  }
  // The bytes written so far (this writer's and what the string held before it).
  std::string_view written() const {
    return std::string_view(out_->data(), static_cast<size_t>(p_ - out_->data()));
  }
  // Cuts the string to the bytes written; the writer is done. Idempotent.
  void Finish() {
    if (out_ == nullptr) return;
    out_->resize(static_cast<size_t>(p_ - out_->data()));
    out_ = nullptr;
  }

 private:
  void Grow(size_t n) {
    const size_t used = static_cast<size_t>(p_ - out_->data());
    out_->resize(std::max(used + n, out_->size() * 2));
    p_ = out_->data() + used;
    end_ = out_->data() + out_->size();
  }

  std::string* out_;
  char* p_;
  char* end_;
};

}  // namespace turnpike::base
