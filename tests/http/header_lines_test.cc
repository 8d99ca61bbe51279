// What the parsers note about each field (its HeaderId, whether it arrived as exactly
// "name: value\r\n") and how the encoders use it: lines that go out unchanged are copied as
// they arrived, consecutive ones in one piece. The output must be byte for byte what the same
// headers made by hand (not classified, no plain lines) give.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "http/parser.h"
#include "http/request_encoder.h"
#include "http/response_encoder.h"

namespace turnpike::http {
namespace {

std::vector<Header> ByHand(const std::vector<Header>& parsed) {
  std::vector<Header> out;
  for (const Header& h : parsed) out.push_back(Header{h.name, h.value});
  return out;
}

TEST(HeaderLinesTest, TheParserClassifiesAndMarksPlainLines) {
  const std::string text =
      "GET / HTTP/1.1\r\n"
      "Host: a\r\n"
      "X-Plain: v\r\n"
      "X-No-Space:v\r\n"
      "X-Two-Spaces:  v\r\n"
      "X-Trailing: v \r\n"
      "X-Tab:\tv\r\n"
      "X-Empty: \r\n"
      "CONNECTION: x-plain\r\n"
      "x-forwarded-PROTO: https\r\n"
      "\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(parser.ParseHead(text.data(), text.size(), &head), 0);
  ASSERT_EQ(head.headers.size(), 9u);
  struct Want {
    std::string_view name;
    HeaderId id;
    bool plain;
  };
  const Want want[] = {{"Host", HeaderId::kHost, true},
                       {"X-Plain", HeaderId::kOther, true},
                       {"X-No-Space", HeaderId::kOther, false},
                       {"X-Two-Spaces", HeaderId::kOther, false},
                       {"X-Trailing", HeaderId::kOther, false},
                       {"X-Tab", HeaderId::kOther, false},
                       {"X-Empty", HeaderId::kOther, false},
                       {"CONNECTION", HeaderId::kConnection, true},
                       {"x-forwarded-PROTO", HeaderId::kXForwardedProto, true}};
  for (size_t i = 0; i < head.headers.size(); ++i) {
    const Header& h = head.headers[i];
    EXPECT_EQ(h.name, want[i].name);
    EXPECT_EQ(h.id, want[i].id) << h.name;
    EXPECT_EQ(h.plain_line, want[i].plain) << h.name;
  }
  EXPECT_EQ(head.headers[4].value, "v");  // trimmed: the line is not what an encoder writes
  ASSERT_EQ(head.connection_token_count, 1);
  EXPECT_EQ(head.connection_tokens[0], "x-plain");
}

// Plain and other lines mixed with every kind of header the encoder drops or replaces in
// between: the parsed head and the same headers by hand encode to the same bytes.
TEST(HeaderLinesTest, ForwardedRequestHeadIsTheSameAsFromHeadersMadeByHand) {
  const std::string text =
      "POST /p?q=1 HTTP/1.1\r\n"
      "Host: client.example:8080\r\n"
      "User-Agent: ua\r\n"
      "Accept: */*\r\n"
      "X-Forwarded-For: 9.9.9.9\r\n"
      "X-Keep-1: a\r\n"
      "X-Spaced:   b\r\n"
      "X-Keep-2: c\r\n"
      "Connection: keep-alive, X-Listed\r\n"
      "X-Listed: gone\r\n"
      "X-Keep-3: d\r\n"
      "Content-Length: 3\r\n"
      "X-Edited: client\r\n"
      "X-Last: e\r\n"
      "\r\n";
  RequestParser parser;
  RequestHead parsed;
  ASSERT_EQ(parser.ParseHead(text.data(), text.size(), &parsed), 0);
  RequestHead by_hand = parsed;
  by_hand.headers = ByHand(parsed.headers);
  HeaderEdits edits;
  edits.Set("X-Edited", "plugin");
  const HeaderEdits* some = &edits;
  for (const HeaderEdits* e : {static_cast<const HeaderEdits*>(nullptr), some}) {
    ForwardedRequest f;
    f.host = "client.example:8080";
    f.remote_addr = "127.0.0.1";
    f.forwarded_host = "client.example:8080";
    f.local_port = "9080";
    f.edits = e;
    std::string a;
    std::string b;
    EncodeForwardedRequestHead(parsed, f, &a);
    EncodeForwardedRequestHead(by_hand, f, &b);
    EXPECT_EQ(a, b);
    EXPECT_NE(a.find("User-Agent: ua\r\nAccept: */*\r\nX-Keep-1: a\r\nX-Spaced: b\r\n"
                     "X-Keep-2: c\r\nX-Keep-3: d\r\n"),
              std::string::npos)
        << a;
    EXPECT_EQ(a.find("X-Listed"), std::string::npos) << a;
    EXPECT_EQ(a.find("X-Edited: client") == std::string::npos, e != nullptr) << a;
    EXPECT_NE(a.find("X-Last: e\r\nX-Real-IP: 127.0.0.1\r\n"), std::string::npos) << a;
    EXPECT_EQ(a.find("X-Edited: plugin\r\n") != std::string::npos, e != nullptr) << a;
  }
}

TEST(HeaderLinesTest, ProxiedResponseHeadIsTheSameAsFromHeadersMadeByHand) {
  const std::string text =
      "HTTP/1.1 200 OK\r\n"
      "Server: node\r\n"
      "X-A: 1\r\n"
      "X-B: 2\r\n"
      "Connection: keep-alive\r\n"
      "Content-Type: text/plain\r\n"
      "X-Odd:3\r\n"
      "Content-Length: 5\r\n"
      "X-Edited: node\r\n"
      "X-C: 4\r\n"
      "\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead parsed;
  ASSERT_TRUE(parser.ParseHead(text.data(), text.size(), &parsed));
  ResponseHead by_hand = parsed;
  by_hand.headers = ByHand(parsed.headers);
  HeaderEdits edits;
  edits.Set("x-edited", "plugin");
  const HeaderEdits* some = &edits;
  for (const HeaderEdits* e : {static_cast<const HeaderEdits*>(nullptr), some}) {
    ResponseHeadOptions o;
    o.status = 200;
    o.framing = BodyFraming::kContentLength;
    o.content_length = 5;
    o.server_line = "Server: turnpike\r\n";
    o.edits = e;
    std::string a;
    std::string b;
    EncodeProxiedResponseHead(parsed, o, &a);
    EncodeProxiedResponseHead(by_hand, o, &b);
    EXPECT_EQ(a, b);
    EXPECT_NE(a.find("Server: turnpike\r\nX-A: 1\r\nX-B: 2\r\nContent-Type: text/plain\r\n"
                     "X-Odd: 3\r\n"),
              std::string::npos)
        << a;
    EXPECT_EQ(a.find("Server: node"), std::string::npos) << a;
    EXPECT_EQ(a.find("Content-Length: 5\r\n"), a.rfind("Content-Length: 5\r\n")) << a;
  }
}

}  // namespace
}  // namespace turnpike::http
