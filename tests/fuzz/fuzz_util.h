// Helpers shared by the fuzz targets: invariant checks that abort (so libFuzzer keeps the
// input as a crash artifact, and a replay build fails), and a reader that splits an input
// into the control bytes and the text a target needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// Aborts with the failed condition when `cond` is false. For invariants of the code under
// test: a violation is a finding, like a crash.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace turnpike::fuzz {

// True when `view` lies entirely inside `buffer` (a view the parser returned must not dangle).
inline bool Within(std::string_view view, std::string_view buffer) {
  return view.data() >= buffer.data() && view.data() + view.size() <= buffer.data() + buffer.size();
}

// Strict framing (issue 7): a head the parsers accept has CRLF line ends only, so llhttp,
// FindHeadEnd and any parser after Turnpike agree on where every line and the head end. The
// corpora keep the inputs that once broke this (corpus/<target>/known-bare-cr-*).
inline bool OnlyCrlfLineEnds(std::string_view head) {
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\r' && (i + 1 == head.size() || head[i + 1] != '\n')) return false;
    if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) return false;
  }
  return true;
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Reads an input front to back: bytes, then lines, then the rest. Never fails; past the end
// every read returns 0 / "".
class InputReader {
 public:
  explicit InputReader(std::string_view input) : rest_(input) {}

  bool empty() const { return rest_.empty(); }
  std::string_view rest() const { return rest_; }

  uint8_t Byte() {
    if (rest_.empty()) return 0;
    auto b = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    return b;
  }

  // Up to `n` bytes.
  std::string_view Bytes(size_t n) {
    std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }

  // The text up to the next '\n' (not included, and consumed), or the rest.
  std::string_view Line() { return Until('\n'); }

  // The text up to the next `sep` (not included, and consumed), or the rest.
  std::string_view Until(char sep) {
    size_t end = rest_.find(sep);
    std::string_view out = rest_.substr(0, end);
    rest_.remove_prefix(end == std::string_view::npos ? rest_.size() : end + 1);
    return out;
  }

 private:
  std::string_view rest_;
};

// Delivers a byte stream in reads of fuzzer-chosen sizes, as a socket would: the sizes are
// `sizes[i % sizes.size()] + 1`, cycling; with no sizes everything arrives in one read.
class ChoppedStream {
 public:
  ChoppedStream(std::string_view stream, std::string_view sizes) : stream_(stream), sizes_(sizes) {}

  std::string_view stream() const { return stream_; }
  // Bytes that have arrived so far: stream().substr(0, available()).
  size_t available() const { return available_; }
  bool at_eof() const { return available_ == stream_.size(); }

  // One more read; false at the end of the stream (the peer closed).
  bool Arrive() {
    if (at_eof()) return false;
    size_t n = stream_.size() - available_;
    if (!sizes_.empty()) {
      size_t want = static_cast<uint8_t>(sizes_[reads_ % sizes_.size()]) + size_t{1};
      if (want < n) n = want;
    }
    ++reads_;
    available_ += n;
    return true;
  }

 private:
  std::string_view stream_;
  std::string_view sizes_;
  size_t available_ = 0;
  size_t reads_ = 0;
};

}  // namespace turnpike::fuzz
