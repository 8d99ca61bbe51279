// RequestParser::ParseHead: request line, target forms, headers and the status answered for bad
// heads. Bodies and pipelining are in request_body_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "http/parser.h"
#include "parse_test_util.h"

namespace turnpike::http {
namespace {

using base::Method;
using test::Within;

// Parses `text` (a complete head) and returns ParseHead's status.
int Parse(RequestParser* parser, std::string_view text, RequestHead* head) {
  return parser->ParseHead(text.data(), text.size(), head);
}

int ParseFresh(std::string_view text) {
  RequestParser parser;
  RequestHead head;
  return Parse(&parser, text, &head);
}

// ---------------------------------------------------------------- request line

TEST(RequestParserTest, OriginFormRequestLine) {
  const std::string buf = "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.com\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.method, Method::kGet);
  EXPECT_EQ(head.method_name, "GET");
  EXPECT_EQ(head.target, "/a/b?x=1&y=2");
  EXPECT_EQ(head.path, "/a/b");
  EXPECT_EQ(head.query, "x=1&y=2");
  EXPECT_EQ(head.version_minor, 1);
  EXPECT_EQ(head.host, "example.com");
  EXPECT_EQ(head.framing, Framing::kNone);
  EXPECT_EQ(head.content_length, 0u);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_FALSE(head.expect_continue);
  EXPECT_EQ(head.connection_token_count, 0);
  EXPECT_TRUE(parser.message_complete());  // no body: complete after the head
  // Zero copies: the views point into the caller's buffer.
  EXPECT_TRUE(Within(head.target, buf));
  EXPECT_TRUE(Within(head.path, buf));
  EXPECT_TRUE(Within(head.query, buf));
  EXPECT_TRUE(Within(head.host, buf));
}

TEST(RequestParserTest, NoQuery) {
  const std::string buf = "GET /plain HTTP/1.1\r\nHost: h\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.path, "/plain");
  EXPECT_TRUE(head.query.empty());
}

TEST(RequestParserTest, EmptyQueryAfterQuestionMark) {
  const std::string buf = "GET /p? HTTP/1.1\r\nHost: h\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.target, "/p?");
  EXPECT_EQ(head.path, "/p");
  EXPECT_TRUE(head.query.empty());
}

TEST(RequestParserTest, QueryKeepsLaterQuestionMarksAndFragmentsOfEncoding) {
  const std::string buf = "GET /p?a=%20?b HTTP/1.1\r\nHost: h\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.path, "/p");
  EXPECT_EQ(head.query, "a=%20?b");
}

TEST(RequestParserTest, MethodsMapToEnum) {
  struct Case {
    std::string_view name;
    Method method;
  };
  for (const Case& c :
       {Case{"GET", Method::kGet}, Case{"POST", Method::kPost}, Case{"PUT", Method::kPut},
        Case{"DELETE", Method::kDelete}, Case{"PATCH", Method::kPatch}, Case{"HEAD", Method::kHead},
        Case{"OPTIONS", Method::kOptions}, Case{"TRACE", Method::kTrace},
        Case{"PURGE", Method::kPurge}, Case{"PROPFIND", Method::kOther},
        Case{"MKCOL", Method::kOther}}) {
    SCOPED_TRACE(c.name);
    const std::string buf = std::string(c.name) + " /x HTTP/1.1\r\nHost: h\r\n\r\n";
    RequestParser parser;
    RequestHead head;
    ASSERT_EQ(Parse(&parser, buf, &head), 0);
    EXPECT_EQ(head.method, c.method);
    EXPECT_EQ(head.method_name, c.name);
  }
}

TEST(RequestParserTest, Http10) {
  const std::string buf = "GET /old HTTP/1.0\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);  // Host is optional in HTTP/1.0
  EXPECT_EQ(head.version_minor, 0);
  EXPECT_TRUE(head.host.empty());
  EXPECT_FALSE(head.keep_alive);
  EXPECT_TRUE(parser.message_complete());
}

TEST(RequestParserTest, AbsoluteFormTarget) {
  const std::string buf = "GET http://a.com:8080/x?y HTTP/1.1\r\nHost: other.com\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.target, "http://a.com:8080/x?y");
  EXPECT_EQ(head.host, "a.com:8080");  // the target's authority wins over Host (RFC 9112 §3.2.2)
  EXPECT_EQ(head.path, "/x");
  EXPECT_EQ(head.query, "y");
  EXPECT_TRUE(Within(head.host, buf));
  EXPECT_TRUE(Within(head.path, buf));
}

TEST(RequestParserTest, AbsoluteFormWithoutPath) {
  RequestParser parser;
  RequestHead head;
  const std::string bare = "GET http://a.com HTTP/1.1\r\nHost: a.com\r\n\r\n";
  ASSERT_EQ(Parse(&parser, bare, &head), 0);
  EXPECT_EQ(head.host, "a.com");
  EXPECT_EQ(head.path, "/");
  EXPECT_TRUE(head.query.empty());

  const std::string query_only = "GET https://b.org?q=1 HTTP/1.1\r\nHost: b.org\r\n\r\n";
  ASSERT_EQ(Parse(&parser, query_only, &head), 0);
  EXPECT_EQ(head.host, "b.org");
  EXPECT_EQ(head.path, "/");
  EXPECT_EQ(head.query, "q=1");
}

TEST(RequestParserTest, AsteriskFormForOptions) {
  const std::string buf = "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.method, Method::kOptions);
  EXPECT_EQ(head.target, "*");
}

TEST(RequestParserTest, TargetThatIsNeitherOriginNorAbsoluteFormIs400) {
  EXPECT_EQ(ParseFresh("GET foo/bar HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
}

TEST(RequestParserTest, MalformedRequestLineIs400) {
  for (std::string_view text : {
           std::string_view("GET\r\nHost: h\r\n\r\n"),
           std::string_view("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n"),
           std::string_view("G@T / HTTP/1.1\r\nHost: h\r\n\r\n"),
           std::string_view("get / HTTP/1.1\r\nHost: h\r\n\r\n"),
           std::string_view("GET / HTTX/1.1\r\nHost: h\r\n\r\n"),
           std::string_view("GET /\x7f HTTP/1.1\r\nHost: h\r\n\r\n"),
           std::string_view("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),  // TLS hello
       }) {
    EXPECT_EQ(ParseFresh(text), 400) << ::testing::PrintToString(text);
  }
}

// The header comment allows 400 or 505; 505 is only right for a well-formed version this
// server does not speak (RFC 9110 §15.6.6). Junk in or after the version is a malformed
// request line, and a head without any request line is no version at all: both are 400.
TEST(RequestParserTest, MalformedVersionOrMissingRequestLineIs400) {
  for (std::string_view text : {
           std::string_view("GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n"),
           std::string_view("GET / HTTP/1.x\r\nHost: h\r\n\r\n"),
           std::string_view("GET / HTTP/x.1\r\nHost: h\r\n\r\n"),
           std::string_view("GET / HTTP/1.1garbage\r\nHost: h\r\n\r\n"),
           std::string_view("\r\n\r\n"),  // a complete head as far as FindHeadEnd is concerned
           std::string_view("\n\n"),
       }) {
    EXPECT_EQ(ParseFresh(text), 400) << ::testing::PrintToString(text);
  }
}

TEST(RequestParserTest, ExtraSpacesInRequestLineAreRejectedOrParsedOnWordBoundaries) {
  // RFC 9112 §3: a recipient MAY parse on whitespace boundaries; either way, never misparse.
  const std::string buf = "GET  /x  HTTP/1.1\r\nHost: h\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  int status = Parse(&parser, buf, &head);
  if (status == 0) {
    EXPECT_EQ(head.target, "/x");
    EXPECT_EQ(head.version_minor, 1);
  } else {
    EXPECT_EQ(status, 400);
  }
}

TEST(RequestParserTest, LeadingEmptyLineBeforeRequestLineIsIgnored) {
  // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request-line.
  const std::string buf = "\r\nGET /after-crlf HTTP/1.1\r\nHost: h\r\n\r\n";
  size_t scan = 0;
  ASSERT_EQ(FindHeadEnd(buf, &scan), buf.size());
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.path, "/after-crlf");
}

TEST(RequestParserTest, Http2VersionIs505) {
  EXPECT_EQ(ParseFresh("GET / HTTP/2.0\r\nHost: h\r\n\r\n"), 505);
}

TEST(RequestParserTest, OtherUnsupportedMajorVersionsAre505) {
  EXPECT_EQ(ParseFresh("GET / HTTP/3.0\r\nHost: h\r\n\r\n"), 505);
  EXPECT_EQ(ParseFresh("GET / HTTP/0.9\r\nHost: h\r\n\r\n"), 505);
}

TEST(RequestParserTest, VersionlessHttp09RequestIsNotServed) {
  const int status = ParseFresh("GET /\r\nHost: h\r\n\r\n");
  EXPECT_TRUE(status == 400 || status == 505) << status;
}

TEST(RequestParserTest, Http12IsServedAsHttp11OrRefused) {
  // RFC 9110 §2.5 prefers serving a higher minor version as 1.1; llhttp refuses it. Either is
  // acceptable here, as long as it is not a 400.
  RequestParser parser;
  RequestHead head;
  const std::string buf = "GET / HTTP/1.2\r\nHost: h\r\n\r\n";
  const int status = Parse(&parser, buf, &head);
  EXPECT_TRUE(status == 0 || status == 505) << status;
}

TEST(RequestParserTest, ConnectIsNotAccepted) {
  // authority-form targets are for forward proxies; a gateway refuses them.
  EXPECT_EQ(ParseFresh("CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:443\r\n\r\n"), 400);
}

TEST(RequestParserTest, Http2PrefaceIsNotAccepted) {
  EXPECT_NE(ParseFresh("PRI * HTTP/2.0\r\n\r\n"), 0);
}

TEST(RequestParserTest, BareLfLineEndingsAre400) {
  // RFC 9112 §2.2 lets a recipient accept a bare LF; Turnpike does not, so that no other
  // parser on the way can disagree with it about where a line ends (strict_parsing_test.cc).
  const std::string no_headers = "GET /lf HTTP/1.0\n\n";
  size_t scan = 0;
  ASSERT_EQ(FindHeadEnd(no_headers, &scan), no_headers.size());
  EXPECT_EQ(ParseFresh(no_headers), 400);
  EXPECT_EQ(ParseFresh("GET /lf HTTP/1.1\nHost: h\nX-A: b\n\n"), 400);
}

TEST(RequestParserTest, EmptyHeadIsRejected) {
  EXPECT_NE(ParseFresh("\r\n\r\n"), 0);
  EXPECT_NE(ParseFresh("\n\n"), 0);
}

// ---------------------------------------------------------------- headers

TEST(RequestParserTest, HeadersInArrivalOrderWithExactViews) {
  const std::string buf =
      "GET / HTTP/1.1\r\n"
      "Host: example.com\r\n"
      "User-Agent: curl/8.5.0\r\n"
      "accept: */*\r\n"
      "X-Multi-Word: two words, and a comma\r\n"
      "X-Dup: 1\r\n"
      "X-Dup: 2\r\n"
      "X-Tight:v\r\n"
      "\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.headers.size(), 7u);
  const std::pair<std::string_view, std::string_view> want[] = {
      {"Host", "example.com"}, {"User-Agent", "curl/8.5.0"},
      {"accept", "*/*"},       {"X-Multi-Word", "two words, and a comma"},
      {"X-Dup", "1"},          {"X-Dup", "2"},
      {"X-Tight", "v"},
  };
  for (size_t i = 0; i < head.headers.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(head.headers[i].name, want[i].first);
    EXPECT_EQ(head.headers[i].value, want[i].second);
    EXPECT_TRUE(Within(head.headers[i].name, buf));
    EXPECT_TRUE(Within(head.headers[i].value, buf));
  }
  // The views are the bytes on the wire, not copies that happen to be equal.
  EXPECT_EQ(head.headers[0].name.data(), buf.data() + buf.find("Host"));
  EXPECT_EQ(head.headers[2].value.data(), buf.data() + buf.find("*/*"));
}

TEST(RequestParserTest, HeaderValueExcludesSurroundingWhitespace) {
  const std::string buf = "GET / HTTP/1.1\r\nHost:   h.com\r\nX-Pad: \t padded\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.headers.size(), 2u);
  EXPECT_EQ(head.headers[0].value, "h.com");
  EXPECT_EQ(head.host, "h.com");
  EXPECT_EQ(head.headers[1].value, "padded");
}

TEST(RequestParserTest, HeaderValueExcludesTrailingWhitespace) {
  // RFC 9110 §5.5: a field value excludes leading and trailing whitespace.
  const std::string buf = "GET / HTTP/1.1\r\nHost: example.com \r\nX-Pad: padded \t \r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.headers.size(), 2u);
  EXPECT_EQ(head.host, "example.com");
  EXPECT_EQ(head.headers[0].value, "example.com");
  EXPECT_EQ(head.headers[1].value, "padded");
}

TEST(RequestParserTest, ObsFoldIsRejectedOrJoined) {
  const std::string buf = "GET / HTTP/1.1\r\nHost: h\r\nX-Fold: first\r\n second\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  const int status = Parse(&parser, buf, &head);
  if (status == 0) {
    ASSERT_EQ(head.headers.size(), 2u);
    EXPECT_NE(head.headers[1].value.find("first"), std::string_view::npos);
    EXPECT_NE(head.headers[1].value.find("second"), std::string_view::npos);
  } else {
    EXPECT_EQ(status, 400);
  }
}

TEST(RequestParserTest, ControlCharactersInHeaderValueAre400) {
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n"), 400);
  EXPECT_EQ(ParseFresh(std::string_view("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 35)), 400);
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n"), 400);
}

TEST(RequestParserTest, EmptyHeaderValueKeepsItsOwnEntry) {
  const std::string buf = "GET / HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nX-Next: v\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.headers.size(), 3u);
  EXPECT_EQ(head.headers[1].name, "X-Empty");
  EXPECT_EQ(head.headers[1].value, "");
  EXPECT_EQ(head.headers[2].name, "X-Next");
  EXPECT_EQ(head.headers[2].value, "v");
}

TEST(RequestParserTest, ManyHeaders) {
  std::string buf = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 100; ++i) {
    buf += "X-H" + std::to_string(i) + ": value-" + std::to_string(i) + "\r\n";
  }
  buf += "\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.headers.size(), 101u);
  EXPECT_EQ(head.headers[100].name, "X-H99");
  EXPECT_EQ(head.headers[100].value, "value-99");
}

TEST(RequestParserTest, WhitespaceBeforeColonIs400) {
  // RFC 9112 §5.1: a server MUST reject such a request (request smuggling vector).
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost : h\r\n\r\n"), 400);
}

TEST(RequestParserTest, InvalidHeaderNameIs400) {
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost: h\r\nBad\"Name: v\r\n\r\n"), 400);
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n"), 400);
}

TEST(RequestParserTest, HostRequiredForHttp11) {
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nX-A: b\r\n\r\n"), 400);
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(ParseFresh("GET / HTTP/1.0\r\nX-A: b\r\n\r\n"), 0);
}

TEST(RequestParserTest, HostHeaderNameIsCaseInsensitive) {
  const std::string buf = "GET / HTTP/1.1\r\nhOsT: Mixed.Case\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_EQ(head.host, "Mixed.Case");  // raw, as sent
}

TEST(RequestParserTest, DuplicateHostIs400) {
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(ParseFresh("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\nhost: b\r\n\r\n"), 400);
  EXPECT_EQ(ParseFresh("GET / HTTP/1.0\r\nHost: a\r\nHOST: b\r\n\r\n"), 400);
}

TEST(RequestParserTest, AbsoluteFormStillNeedsHostHeaderInHttp11) {
  // RFC 9112 §3.2: an HTTP/1.1 request without a Host field gets 400, whatever the target.
  EXPECT_EQ(ParseFresh("GET http://a.com/ HTTP/1.1\r\n\r\n"), 400);
}

TEST(RequestParserTest, ExpectContinue) {
  RequestParser parser;
  RequestHead head;
  const std::string buf =
      "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n";
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  EXPECT_TRUE(head.expect_continue);
  EXPECT_FALSE(parser.message_complete());

  RequestParser parser2;  // the first request's body never came
  const std::string mixed_case =
      "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nexpect: 100-Continue\r\n\r\n";
  ASSERT_EQ(Parse(&parser2, mixed_case, &head), 0);
  EXPECT_TRUE(head.expect_continue);
}

TEST(RequestParserTest, ExpectContinueIgnoredForOtherValuesAndHttp10) {
  RequestParser parser;
  RequestHead head;
  const std::string other = "PUT /f HTTP/1.1\r\nHost: h\r\nExpect: something\r\n\r\n";
  ASSERT_EQ(Parse(&parser, other, &head), 0);
  EXPECT_FALSE(head.expect_continue);

  RequestParser parser10;
  const std::string http10 = "PUT /f HTTP/1.0\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n";
  ASSERT_EQ(Parse(&parser10, http10, &head), 0);
  EXPECT_FALSE(head.expect_continue);  // RFC 9110 §10.1.1: ignore it from HTTP/1.0 clients
}

TEST(RequestParserTest, ConnectionTokens) {
  const std::string buf = "GET / HTTP/1.1\r\nHost: h\r\nConnection: close, X-Foo\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.connection_token_count, 2);
  EXPECT_EQ(head.connection_tokens[0], "close");
  EXPECT_EQ(head.connection_tokens[1], "X-Foo");
  EXPECT_FALSE(head.keep_alive);
  EXPECT_TRUE(IsListedIn("x-foo", head.connection_tokens, head.connection_token_count));
  EXPECT_FALSE(IsListedIn("X-Bar", head.connection_tokens, head.connection_token_count));
  EXPECT_TRUE(Within(head.connection_tokens[1], buf));
}

TEST(RequestParserTest, ConnectionTokensFromSeveralHeadersSkippingEmptyOnes) {
  const std::string buf =
      "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive ,, X-A\r\nconnection: X-B\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.connection_token_count, 3);
  EXPECT_EQ(head.connection_tokens[0], "keep-alive");
  EXPECT_EQ(head.connection_tokens[1], "X-A");
  EXPECT_EQ(head.connection_tokens[2], "X-B");
  EXPECT_TRUE(head.keep_alive);
}

TEST(RequestParserTest, ConnectionTokensCappedAtEight) {
  const std::string buf =
      "GET / HTTP/1.1\r\nHost: h\r\nConnection: t1, t2, t3, t4, t5, t6, t7, t8, t9, t10\r\n\r\n";
  RequestParser parser;
  RequestHead head;
  ASSERT_EQ(Parse(&parser, buf, &head), 0);
  ASSERT_EQ(head.connection_token_count, 8);
  EXPECT_EQ(head.connection_tokens[7], "t8");
}

TEST(RequestParserTest, KeepAliveByVersionAndConnectionHeader) {
  struct Case {
    std::string_view version;
    std::string_view connection;  // empty: no Connection header
    bool keep_alive;
  };
  for (const Case& c :
       {Case{"1.1", "", true}, Case{"1.1", "close", false}, Case{"1.1", "Close", false},
        Case{"1.1", "keep-alive", true}, Case{"1.1", "Upgrade-Whatever", true},
        Case{"1.0", "", false}, Case{"1.0", "keep-alive", true}, Case{"1.0", "Keep-Alive", true},
        Case{"1.0", "close", false}}) {
    SCOPED_TRACE(::testing::Message() << c.version << " '" << c.connection << "'");
    std::string buf = "GET / HTTP/" + std::string(c.version) + "\r\nHost: h\r\n";
    if (!c.connection.empty()) buf += "Connection: " + std::string(c.connection) + "\r\n";
    buf += "\r\n";
    RequestParser parser;
    RequestHead head;
    ASSERT_EQ(Parse(&parser, buf, &head), 0);
    EXPECT_EQ(head.keep_alive, c.keep_alive);
  }
}

}  // namespace
}  // namespace turnpike::http
