// The fields the request parser reports against llhttp's own view of the same heads: a
// reference that collects names and values from llhttp's on_header_field/on_header_value
// callbacks on its own, on thousands of generated heads with every kind of optional
// whitespace, obs-text, empty values, obs-folds and malformed lines. The parser must agree on
// every head the reference accepts and refuse every one it refuses.
#include <gtest/gtest.h>
#include <llhttp.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "http/parser.h"

namespace turnpike::http {
namespace {

struct Reference {
  std::vector<Header> headers;
  bool in_value = false;
  bool broken = false;  // a name or value in pieces that are not contiguous (obs-fold)
};

bool Extend(std::string_view* dst, const char* at, size_t len) {
  if (dst->empty()) {
    *dst = std::string_view(at, len);
    return true;
  }
  if (dst->data() + dst->size() != at) return false;
  *dst = std::string_view(dst->data(), dst->size() + len);
  return true;
}

int OnField(llhttp_t* p, const char* at, size_t len) {
  auto* r = static_cast<Reference*>(p->data);
  if (r->in_value || r->headers.empty()) {
    r->headers.emplace_back();
    r->in_value = false;
  }
  if (!Extend(&r->headers.back().name, at, len)) r->broken = true;
  return 0;
}

int OnValue(llhttp_t* p, const char* at, size_t len) {
  auto* r = static_cast<Reference*>(p->data);
  r->in_value = true;
  if (!Extend(&r->headers.back().value, at, len)) r->broken = true;
  return 0;
}

// llhttp's fields of a whole request head, trailing whitespace trimmed; false when llhttp
// refuses the head, reports a field in pieces, or the head has an obs-fold (a line that starts
// with whitespace: llhttp 8's strict mode takes it, Turnpike refuses it; the callbacks alone
// miss a fold that continues an empty value, which the parser refuses too).
bool ReferenceFields(std::string_view head, std::vector<Header>* out) {
  if (head.find("\n ") != std::string_view::npos || head.find("\n\t") != std::string_view::npos) {
    return false;
  }
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_header_field = &OnField;
  settings.on_header_value = &OnValue;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_REQUEST, &settings);
  Reference r;
  parser.data = &r;
  if (llhttp_execute(&parser, head.data(), head.size()) != HPE_OK || r.broken) return false;
  for (Header& h : r.headers) {
    while (!h.value.empty() && (h.value.back() == ' ' || h.value.back() == '\t')) {
      h.value.remove_suffix(1);
    }
  }
  *out = std::move(r.headers);
  return true;
}

std::string Pick(std::mt19937& rng, std::string_view from, size_t min, size_t max) {
  std::string s(std::uniform_int_distribution<size_t>(min, max)(rng), ' ');
  for (char& c : s) c = from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  return s;
}

TEST(FieldParsingTest, AgreesWithLlhttpsCallbacks) {
  std::mt19937 rng(20261204);
  const std::string token = "abcxyzABCXYZ0189!#$%&'*+-.^_`|~";
  std::string value_bytes = "abcXYZ019 \t\"(),/:;<=>?@[\\]{}";
  value_bytes += "\x80\xa0\xff";
  const std::string_view ows = " \t";
  int accepted = 0;
  int refused = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string head = "GET / HTTP/1.1\r\nHost: h\r\n";
    const int fields = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < fields; ++i) {
      const int shape = std::uniform_int_distribution<int>(0, 39)(rng);
      std::string name = "x-" + Pick(rng, token, 0, 12);
      if (shape == 0) name.insert(0, " ");                 // whitespace before the name
      if (shape == 1) name += " ";                         // ... before the colon
      if (shape == 2) name.insert(name.size() / 2, "\t");  // ... inside the name
      head += name;
      if (shape != 3) head += ":";  // no colon at all
      head += Pick(rng, ows, 0, shape == 4 ? 3 : 1);
      if (shape != 5) head += Pick(rng, value_bytes, 0, 20);  // 5: an empty value
      head += Pick(rng, ows, 0, shape == 6 ? 3 : 0);
      head += shape == 7 ? "\n" : "\r\n";                           // a bare LF
      if (shape == 8) head += Pick(rng, ows, 1, 2) + "folded\r\n";  // obs-fold
    }
    head += "\r\n";
    std::vector<Header> want;
    const bool reference_ok = ReferenceFields(head, &want);
    RequestParser parser;
    RequestHead got;
    const int status = parser.ParseHead(head.data(), head.size(), &got);
    if (!reference_ok) {
      EXPECT_EQ(status, 400) << head;
      ++refused;
      continue;
    }
    ASSERT_EQ(status, 0) << head;
    ++accepted;
    ASSERT_EQ(got.headers.size(), want.size()) << head;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got.headers[i].name, want[i].name) << head;
      EXPECT_EQ(got.headers[i].value, want[i].value) << head;
      EXPECT_EQ(got.headers[i].name.data(), want[i].name.data()) << head;
    }
  }
  // Both kinds were exercised in numbers.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 500);
}

// The response parser's fields after the status line: trimmed, classified, plain lines marked.
TEST(FieldParsingTest, ResponseFieldsStartAfterTheStatusLine) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nX-A:\t a b \t\r\nX-Empty:\r\nServer: s\r\nContent-Length: 0\r\n\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead r;
  ASSERT_TRUE(parser.ParseHead(head.data(), head.size(), &r));
  ASSERT_EQ(r.headers.size(), 4u);
  EXPECT_EQ(r.headers[0].name, "X-A");
  EXPECT_EQ(r.headers[0].value, "a b");
  EXPECT_EQ(r.headers[1].name, "X-Empty");
  EXPECT_EQ(r.headers[1].value, "");
  EXPECT_EQ(r.headers[2].id, HeaderId::kServer);
  EXPECT_TRUE(r.headers[2].plain_line);
  EXPECT_EQ(r.headers[3].id, HeaderId::kContentLength);
  EXPECT_EQ(r.reason, "OK");
}

// A second Transfer-Encoding line is 400, a coding after chunked 501: the lines counted are
// the ones llhttp read before it stopped.
TEST(FieldParsingTest, TransferEncodingErrorsAreTold) {
  auto parse = [](std::string_view text) {
    RequestParser parser;
    RequestHead head;
    return parser.ParseHead(text.data(), text.size(), &head);
  };
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"), 501);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                  "transfer-encoding: chunked\r\n\r\n"),
            400);
}

}  // namespace
}  // namespace turnpike::http
