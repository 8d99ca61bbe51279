// Fuzz target: the client side of a connection. FindHeadEnd over a stream that arrives in
// pieces, RequestParser::ParseHead, FeedBody (Content-Length and chunked, cut at fuzzed
// points), pipelined requests on one parser; then the path normalization and form decoding
// that run on what the parser returned.
//
// Input: [ctrl] [ctrl & 15 read sizes] [bytes the client sends]. Read i has
// sizes[i % n] + 1 bytes (n = 0: one read). ctrl & 16: bodies are skipped (FeedBody with no
// output, as for a request answered before its body was read).
//
// Checked: no crash or UB; the head end found incrementally is the one a single scan finds;
// every view lies in the bytes it was parsed from; FeedBody takes all it is given unless the
// message ended, and a Content-Length body is exactly the next content_length bytes; a path
// IsNormalPath accepts normalizes to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "http/form_args.h"
#include "http/parser.h"
#include "http/uri.h"

namespace {

using turnpike::fuzz::ChoppedStream;
using turnpike::fuzz::InputReader;
using turnpike::fuzz::OnlyCrlfLineEnds;
using turnpike::fuzz::Within;
namespace http = turnpike::http;

constexpr int kMaxRequests = 16;

void CheckHead(const http::RequestHead& head, std::string_view buf) {
  FUZZ_CHECK(head.target.find('#') == std::string_view::npos);  // fragments never route
  FUZZ_CHECK(head.path.find('#') == std::string_view::npos);
  FUZZ_CHECK(Within(head.target, buf));
  FUZZ_CHECK(!head.target.empty());
  FUZZ_CHECK(!head.path.empty());
  FUZZ_CHECK(head.path == "/" || Within(head.path, buf));
  FUZZ_CHECK(Within(head.query, buf) || head.query.empty());
  FUZZ_CHECK(Within(head.host, buf) || head.host.empty());
  for (const http::Header& h : head.headers) {
    FUZZ_CHECK(!h.name.empty());
    FUZZ_CHECK(h.name.find_first_of(" \t") == std::string_view::npos);
    FUZZ_CHECK(Within(h.name, buf));
    FUZZ_CHECK(Within(h.value, buf) || h.value.empty());
  }
  FUZZ_CHECK(head.connection_token_count <= 8);
  for (uint8_t i = 0; i < head.connection_token_count; ++i) {
    FUZZ_CHECK(Within(head.connection_tokens[i], buf));
  }
  if (head.framing == http::Framing::kContentLength) FUZZ_CHECK(head.content_length > 0);
  FUZZ_CHECK(head.framing != http::Framing::kUntilClose);
}

void CheckPath(std::string_view path) {
  if (path[0] != '/') return;  // "*" (OPTIONS); the proxy normalizes origin-form paths only
  std::string normal;
  bool ok = http::NormalizePath(path, &normal);
  if (http::IsNormalPath(path)) {
    FUZZ_CHECK(ok);
    FUZZ_CHECK(normal == path);
  }
  if (ok) FUZZ_CHECK(!normal.empty() && normal[0] == '/');
}

void CheckForm(std::string_view body) {
  http::FormArgs form;
  form.Parse(body);
  size_t amp = body.find('&');
  std::string_view first = body.substr(0, amp);
  (void)form.Get(first.substr(0, first.find('=')));
  (void)form.Get("a");
  FUZZ_CHECK(form.size() <= body.size() + 1);  // fields are split on '&'
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InputReader in(turnpike::fuzz::AsText(data, size));
  const uint8_t ctrl = in.Byte();
  std::string_view sizes = in.Bytes(ctrl & 15);
  const bool skip_bodies = (ctrl & 16) != 0;
  ChoppedStream conn(in.rest(), sizes);
  const std::string_view all = conn.stream();
  const char* base = all.data();

  http::RequestParser parser;
  http::RequestHead head;
  std::vector<std::string_view> spans;
  std::string body;
  size_t begin = 0;  // start of the current message
  conn.Arrive();
  for (int request = 0; request < kMaxRequests; ++request) {
    // The head: scan what has arrived, resuming, until its end is there.
    size_t scan_pos = 0;
    size_t head_len = 0;
    for (;;) {
      std::string_view pending = all.substr(begin, conn.available() - begin);
      head_len = http::FindHeadEnd(pending, &scan_pos);
      if (head_len != 0) {
        size_t fresh = 0;
        FUZZ_CHECK(http::FindHeadEnd(pending, &fresh) == head_len);
        FUZZ_CHECK(head_len <= pending.size());
        FUZZ_CHECK(pending[head_len - 1] == '\n');
        FUZZ_CHECK(http::FirstLineLength(pending) < head_len);
        break;
      }
      size_t fresh = 0;
      FUZZ_CHECK(http::FindHeadEnd(pending, &fresh) == 0);
      FUZZ_CHECK(http::FirstLineLength(pending) <= pending.size());
      if (!conn.Arrive()) return 0;  // the client closed before a whole head
    }
    std::string_view head_buf = all.substr(begin, head_len);
    int err = parser.ParseHead(base + begin, head_len, &head);
    if (err != 0) {
      FUZZ_CHECK(err == 400 || err == 501 || err == 505);
      return 0;  // answered, connection closed
    }
    CheckHead(head, head_buf);
    FUZZ_CHECK(OnlyCrlfLineEnds(head_buf));
    CheckPath(head.path);
    begin += head_len;

    // The body, from whatever has arrived, one read at a time.
    body.clear();
    size_t body_begin = begin;
    while (!parser.message_complete()) {
      if (begin == conn.available() && !conn.Arrive()) return 0;  // truncated body
      size_t n = conn.available() - begin;
      std::string_view piece = all.substr(begin, n);
      spans.clear();
      http::BodyChunk r = parser.FeedBody(piece.data(), n, skip_bodies ? nullptr : &spans);
      for (std::string_view s : spans) {
        FUZZ_CHECK(Within(s, piece));
        body.append(s);
      }
      if (r.error) return 0;  // 400, connection closed
      FUZZ_CHECK(r.consumed <= n);
      FUZZ_CHECK(r.complete == parser.message_complete());
      if (!r.complete) FUZZ_CHECK(r.consumed == n);
      begin += r.consumed;
    }
    if (head.framing == http::Framing::kContentLength) {
      FUZZ_CHECK(begin - body_begin == head.content_length);
      if (!skip_bodies) FUZZ_CHECK(body == all.substr(body_begin, begin - body_begin));
    } else if (head.framing == http::Framing::kChunked) {
      FUZZ_CHECK(body.size() <= begin - body_begin);
    } else {
      FUZZ_CHECK(begin == body_begin);
    }
    if (!skip_bodies) CheckForm(body);
    // A finished message ignores further body input.
    spans.clear();
    http::BodyChunk after = parser.FeedBody(all.data() + begin, conn.available() - begin, &spans);
    FUZZ_CHECK(after.complete && !after.error && after.consumed == 0);
    if (!head.keep_alive) return 0;  // the connection closes after the response
  }
  return 0;
}
