// Helpers shared by the http tests: feeding bodies in pieces, checking that views point into
// the caller's buffer, and the reference for what the encoders escape.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "http/parser.h"

namespace turnpike::http::test {

// True when `view` lies entirely inside `buffer` (the parser copies nothing).
inline bool Within(std::string_view view, std::string_view buffer) {
  const char* begin = buffer.data();
  const char* end = buffer.data() + buffer.size();
  return view.data() >= begin && view.data() + view.size() <= end;
}

// `s` with its control bytes (below 0x20) and DEL as %XX, uppercase hex: what the encoders
// send for a byte a plugin handed in.
inline std::string EscapedControls(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += '%';
      out += "0123456789ABCDEF"[u >> 4];
      out += "0123456789ABCDEF"[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string Concat(const std::vector<std::string_view>& spans) {
  std::string out;
  for (std::string_view s : spans) out.append(s);
  return out;
}

struct FedBody {
  std::string body;     // decoded bytes, concatenated
  size_t consumed = 0;  // total input bytes the parser took
  size_t calls = 0;     // FeedBody calls made
  size_t spans = 0;     // decoded spans reported
  bool complete = false;
  bool error = false;       // FeedBody reported malformed framing
  bool misbehaved = false;  // a span outside its piece, or a short read without completion
};

// Feeds `input` to `feed` (a parser's FeedBody) in pieces of at most `piece` bytes until the
// message completes, an error is reported or the input runs out. Every piece is a view into
// `input`, so the decoded spans must also lie inside it; that is checked here as well.
template <typename Parser>
FedBody FeedInPieces(Parser* parser, std::string_view input, size_t piece) {
  FedBody r;
  size_t pos = 0;
  std::vector<std::string_view> out;
  while (pos < input.size() || r.calls == 0) {
    size_t n = std::min(piece, input.size() - pos);
    out.clear();
    BodyChunk c = parser->FeedBody(input.data() + pos, n, &out);
    ++r.calls;
    for (std::string_view s : out) {
      if (!Within(s, input.substr(pos, n))) {
        r.misbehaved = true;  // a span outside the piece would be a dangling view
        return r;
      }
    }
    r.spans += out.size();
    r.body += Concat(out);
    if (c.error) {
      r.error = true;
      return r;
    }
    r.consumed += c.consumed;
    if (c.complete) {
      r.complete = true;
      return r;
    }
    if (c.consumed != n) {
      r.misbehaved = true;  // not complete yet must mean everything was taken
      return r;
    }
    pos += n;
    if (n == 0) break;
  }
  return r;
}

}  // namespace turnpike::http::test
