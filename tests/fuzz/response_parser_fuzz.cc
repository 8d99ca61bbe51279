// Fuzz target: the upstream side of a connection, as the proxy reads responses. Heads
// (interim 1xx ones included) found with FindHeadEnd over a stream that arrives in pieces,
// ResponseParser::ParseHead, bodies by length, chunked or until close (FinishAtEof at the
// end of the stream), several responses on one kept-alive connection.
//
// Input: [ctrl] [ctrl & 15 read sizes] [bytes the upstream sends]. Read i has
// sizes[i % n] + 1 bytes (n = 0: one read). ctrl bit 4 + k (k = 0..2): the k-th request on
// the connection was HEAD.
//
// Checked: no crash or UB; statuses have three digits; views lie in the bytes they were
// parsed from; FeedBody takes all it is given unless the message ended; a length body is
// exactly content_length bytes; a body delimited by close completes at EOF, a truncated
// length or chunked body does not.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "http/parser.h"

namespace {

using turnpike::fuzz::ChoppedStream;
using turnpike::fuzz::InputReader;
using turnpike::fuzz::OnlyCrlfLineEnds;
using turnpike::fuzz::Within;
namespace http = turnpike::http;

constexpr int kMaxResponses = 16;
constexpr int kMaxInterim = 8;

void CheckHead(const http::ResponseHead& head, std::string_view buf, bool head_request) {
  FUZZ_CHECK(head.status >= 100 && head.status <= 599);
  FUZZ_CHECK(Within(head.reason, buf) || head.reason.empty());
  for (const http::Header& h : head.headers) {
    FUZZ_CHECK(Within(h.name, buf));
    FUZZ_CHECK(Within(h.value, buf) || h.value.empty());
  }
  FUZZ_CHECK(head.connection_token_count <= 8);
  for (uint8_t i = 0; i < head.connection_token_count; ++i) {
    FUZZ_CHECK(Within(head.connection_tokens[i], buf));
  }
  if (http::ResponseHasNoBody(head.status, head_request)) {
    FUZZ_CHECK(head.framing == http::Framing::kNone);
  }
  if (head.framing == http::Framing::kContentLength) FUZZ_CHECK(head.content_length > 0);
  if (head.framing == http::Framing::kUntilClose) FUZZ_CHECK(!head.keep_alive);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InputReader in(turnpike::fuzz::AsText(data, size));
  const uint8_t ctrl = in.Byte();
  std::string_view sizes = in.Bytes(ctrl & 15);
  ChoppedStream conn(in.rest(), sizes);
  const std::string_view all = conn.stream();

  http::ResponseParser parser;
  http::ResponseHead head;
  std::vector<std::string_view> spans;
  std::string body;
  size_t begin = 0;  // start of the current message
  conn.Arrive();
  for (int response = 0; response < kMaxResponses; ++response) {
    const bool head_request = response < 3 && (ctrl >> (4 + response) & 1) != 0;
    parser.Reset(head_request);
    std::string_view head_buf;
    // Heads until a final one; interim 1xx heads are dropped.
    for (int interim = 0;; ++interim) {
      if (interim == kMaxInterim) return 0;
      size_t scan_pos = 0;
      size_t head_len = 0;
      for (;;) {
        std::string_view pending = all.substr(begin, conn.available() - begin);
        head_len = http::FindHeadEnd(pending, &scan_pos);
        if (head_len != 0) {
          size_t fresh = 0;
          FUZZ_CHECK(http::FindHeadEnd(pending, &fresh) == head_len);
          break;
        }
        if (!conn.Arrive()) return 0;  // EOF before a head: 502
      }
      head_buf = all.substr(begin, head_len);
      if (!parser.ParseHead(head_buf.data(), head_len, &head)) return 0;  // 502
      CheckHead(head, head_buf, head_request);
      FUZZ_CHECK(OnlyCrlfLineEnds(head_buf));
      begin += head_len;
      if (head.status >= 200) break;
      FUZZ_CHECK(parser.message_complete());
      parser.Reset(head_request);
    }

    body.clear();
    size_t body_begin = begin;
    while (!parser.message_complete()) {
      if (begin == conn.available() && !conn.Arrive()) {
        // The upstream closed: only a body delimited by close is whole.
        bool whole = parser.FinishAtEof();
        if (head.framing == http::Framing::kUntilClose) FUZZ_CHECK(whole);
        if (head.framing == http::Framing::kContentLength ||
            head.framing == http::Framing::kChunked) {
          FUZZ_CHECK(!whole);
        }
        return 0;
      }
      size_t n = conn.available() - begin;
      std::string_view piece = all.substr(begin, n);
      spans.clear();
      http::BodyChunk r = parser.FeedBody(piece.data(), n, &spans);
      for (std::string_view s : spans) {
        FUZZ_CHECK(Within(s, piece));
        body.append(s);
      }
      if (r.error) return 0;  // 502 or connection closed
      FUZZ_CHECK(r.consumed <= n);
      FUZZ_CHECK(r.complete == parser.message_complete());
      if (!r.complete) FUZZ_CHECK(r.consumed == n);
      begin += r.consumed;
    }
    FUZZ_CHECK(head.framing != http::Framing::kUntilClose);  // ends only at EOF
    if (head.framing == http::Framing::kContentLength) {
      FUZZ_CHECK(begin - body_begin == head.content_length);
      FUZZ_CHECK(body == all.substr(body_begin, begin - body_begin));
    } else if (head.framing == http::Framing::kChunked) {
      FUZZ_CHECK(body.size() <= begin - body_begin);
    } else {
      FUZZ_CHECK(begin == body_begin);
    }
    FUZZ_CHECK(parser.FinishAtEof());  // complete stays complete
    if (!head.keep_alive) return 0;    // the pool drops the connection
  }
  return 0;
}
