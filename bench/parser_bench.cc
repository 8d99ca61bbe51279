// HTTP/1.x parsing on the request path: FindHeadEnd() alone (next to a plain search for CRLFCRLF),
// RequestParser::ParseHead() on a wrk-like head (4 headers) and a browser-like head (17 headers,
// ~1 KiB), and a 64 KiB chunked body decoded by FeedBody() in 16 KiB reads.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "http/parser.h"

namespace turnpike::http {
namespace {

// What wrk sends by default, plus the Connection header it adds for keep-alive.
const std::string kWrkHead =
    "GET /api/v1/items?id=42 HTTP/1.1\r\n"
    "Host: 127.0.0.1:9080\r\n"
    "User-Agent: wrk/4.2.0\r\n"
    "Accept: */*\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

// A Chrome navigation request with cookies: 17 headers, about 1 KiB.
const std::string kBrowserHead =
    "GET /shop/catalog/electronics/laptops?sort=price&order=asc&page=2&filter=brand%3Dacme "
    "HTTP/1.1\r\n"
    "Host: www.example-shop.com\r\n"
    "Connection: keep-alive\r\n"
    "Cache-Control: max-age=0\r\n"
    "sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"\r\n"
    "sec-ch-ua-mobile: ?0\r\n"
    "sec-ch-ua-platform: \"Linux\"\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7\r\n"
    "Sec-Fetch-Site: same-origin\r\n"
    "Sec-Fetch-Mode: navigate\r\n"
    "Sec-Fetch-User: ?1\r\n"
    "Sec-Fetch-Dest: document\r\n"
    "Referer: https://www.example-shop.com/shop/catalog/electronics\r\n"
    "Accept-Encoding: gzip, deflate, br, zstd\r\n"
    "Accept-Language: en-US,en;q=0.9,de;q=0.8\r\n"
    "Cookie: session=3f9a1c2e7b4d4e0f9a8b7c6d5e4f3a2b; cart=eyJpdGVtcyI6WzEyLDM0LDU2XX0; "
    "_ga=GA1.2.1234567890.1700000000; consent=analytics%3Dtrue%26ads%3Dfalse\r\n"
    "\r\n";

const std::string& HeadFor(int which) { return which == 0 ? kWrkHead : kBrowserHead; }

void CheckedParse(RequestParser* parser, const std::string& text, RequestHead* head) {
  if (parser->ParseHead(text.data(), text.size(), head) != 0 || !parser->message_complete()) {
    std::fprintf(stderr, "parser_bench: head did not parse\n");
    std::abort();
  }
}

// Arg 0: wrk-like head; arg 1: browser-like head.
void BM_FindHeadEnd(benchmark::State& state) {
  const std::string& text = HeadFor(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    size_t scan = 0;
    size_t end = FindHeadEnd(text, &scan);
    benchmark::DoNotOptimize(end);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["head_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_FindHeadEnd)->ArgName("browser")->Arg(0)->Arg(1);

// Baseline: the CRLF-only search FindHeadEnd() generalises (it also accepts bare LF endings).
void BM_FindCrlfCrlfBaseline(benchmark::State& state) {
  std::string_view text = HeadFor(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(text);  // the search must not be hoisted out of the loop
    size_t end = text.find("\r\n\r\n");
    benchmark::DoNotOptimize(end);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_FindCrlfCrlfBaseline)->ArgName("browser")->Arg(0)->Arg(1);

// One keep-alive connection: the same parser and head object for every request, as a worker
// reuses them.
void BM_ParseRequestHead(benchmark::State& state) {
  const std::string& text = HeadFor(static_cast<int>(state.range(0)));
  RequestParser parser;
  RequestHead head;
  CheckedParse(&parser, text, &head);  // warm up the header vector's capacity
  for (auto _ : state) {
    int status = parser.ParseHead(text.data(), text.size(), &head);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(head.headers.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["headers"] = static_cast<double>(head.headers.size());
}
BENCHMARK(BM_ParseRequestHead)->ArgName("browser")->Arg(0)->Arg(1);

// What the connection does per request: find the head end, then parse it.
void BM_FindAndParseRequestHead(benchmark::State& state) {
  const std::string& text = HeadFor(static_cast<int>(state.range(0)));
  RequestParser parser;
  RequestHead head;
  CheckedParse(&parser, text, &head);
  for (auto _ : state) {
    size_t scan = 0;
    size_t len = FindHeadEnd(text, &scan);
    int status = parser.ParseHead(text.data(), len, &head);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_FindAndParseRequestHead)->ArgName("browser")->Arg(0)->Arg(1);

// Encodes `body_size` bytes as chunks of `chunk_size` (the last one may be shorter).
std::string ChunkedBody(size_t body_size, size_t chunk_size) {
  std::string out;
  size_t left = body_size;
  char size_line[32];
  while (left > 0) {
    size_t n = left < chunk_size ? left : chunk_size;
    std::snprintf(size_line, sizeof(size_line), "%zx\r\n", n);
    out += size_line;
    out.append(n, 'x');
    out += "\r\n";
    left -= n;
  }
  out += "0\r\n\r\n";
  return out;
}

// A 64 KiB upload sent in chunks of state.range(0) bytes, decoded from 16 KiB reads. Items are
// requests; bytes are wire bytes of the body.
void BM_FeedChunkedBody(benchmark::State& state) {
  constexpr size_t kBodySize = 64 * 1024;
  constexpr size_t kReadSize = 16 * 1024;
  const std::string head_text =
      "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string wire = ChunkedBody(kBodySize, static_cast<size_t>(state.range(0)));
  RequestParser parser;
  RequestHead head;
  std::vector<std::string_view> spans;
  spans.reserve(256);
  size_t decoded = 0;
  for (auto _ : state) {
    if (parser.ParseHead(head_text.data(), head_text.size(), &head) != 0) {
      state.SkipWithError("head did not parse");
      break;
    }
    decoded = 0;
    size_t pos = 0;
    bool complete = false;
    while (!complete && pos < wire.size()) {
      size_t n = wire.size() - pos < kReadSize ? wire.size() - pos : kReadSize;
      spans.clear();
      BodyChunk c = parser.FeedBody(wire.data() + pos, n, &spans);
      if (c.error) {
        state.SkipWithError("chunked body rejected");
        break;
      }
      for (std::string_view s : spans) decoded += s.size();
      pos += c.consumed;
      complete = c.complete;
    }
    if (!complete || decoded != kBodySize) {
      state.SkipWithError("chunked body incomplete");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(wire.size()));
  state.counters["wire_bytes"] = static_cast<double>(wire.size());
}
BENCHMARK(BM_FeedChunkedBody)->ArgName("chunk")->Arg(1024)->Arg(8 * 1024)->Arg(64 * 1024);

}  // namespace
}  // namespace turnpike::http

BENCHMARK_MAIN();
