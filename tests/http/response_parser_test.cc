// ResponseParser: status lines, body framing (length, chunked, until close), responses that
// never have a body, interim 1xx heads and keep-alive.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "http/parser.h"
#include "parse_test_util.h"

namespace turnpike::http {
namespace {

using test::Concat;
using test::FedBody;
using test::FeedInPieces;
using test::Within;

bool Parse(ResponseParser* parser, std::string_view text, ResponseHead* head) {
  return parser->ParseHead(text.data(), text.size(), head);
}

TEST(ResponseParserTest, StatusReasonAndHeaders) {
  const std::string buf =
      "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
      "X-Upstream: a, b\r\n\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, buf, &head));
  EXPECT_EQ(head.status, 404);
  EXPECT_EQ(head.reason, "Not Found");
  EXPECT_EQ(head.version_minor, 1);
  ASSERT_EQ(head.headers.size(), 3u);
  EXPECT_EQ(head.headers[0].name, "Content-Type");
  EXPECT_EQ(head.headers[0].value, "text/plain");
  EXPECT_EQ(head.headers[1].name, "Content-Length");
  EXPECT_EQ(head.headers[1].value, "3");
  EXPECT_EQ(head.headers[2].name, "X-Upstream");
  EXPECT_EQ(head.headers[2].value, "a, b");
  for (const Header& h : head.headers) {
    EXPECT_TRUE(Within(h.name, buf));
    EXPECT_TRUE(Within(h.value, buf));
  }
  EXPECT_TRUE(Within(head.reason, buf));
  EXPECT_EQ(head.framing, Framing::kContentLength);
  EXPECT_EQ(head.content_length, 3u);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_FALSE(parser.message_complete());
}

TEST(ResponseParserTest, WorksWithoutAnInitialReset) {
  ResponseParser parser;  // the constructor leaves it ready for a GET response
  ResponseHead head;
  const std::string buf = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(Parse(&parser, buf, &head));
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(parser.message_complete());
}

TEST(ResponseParserTest, ReasonWithSpacesAndEmptyReason) {
  ResponseParser parser;
  ResponseHead head;
  parser.Reset(false);
  const std::string spaced =
      "HTTP/1.1 503 Service Temporarily Unavailable\r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(Parse(&parser, spaced, &head));
  EXPECT_EQ(head.reason, "Service Temporarily Unavailable");

  parser.Reset(false);
  const std::string empty = "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(Parse(&parser, empty, &head));
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.reason.empty());
}

TEST(ResponseParserTest, ContentLengthBodyInPieces) {
  const std::string head_text = "HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\n";
  const std::string body = "abcdefghijklmnopqrstuvwxyz";
  for (size_t piece : {1, 5, 26}) {
    SCOPED_TRACE(piece);
    ResponseParser parser;
    parser.Reset(false);
    ResponseHead head;
    ASSERT_TRUE(Parse(&parser, head_text, &head));
    FedBody fed = FeedInPieces(&parser, body, piece);
    EXPECT_FALSE(fed.error);
    EXPECT_FALSE(fed.misbehaved);
    EXPECT_TRUE(fed.complete);
    EXPECT_EQ(fed.consumed, body.size());
    EXPECT_EQ(fed.body, body);
    EXPECT_TRUE(parser.FinishAtEof());  // already complete
  }
}

TEST(ResponseParserTest, ContentLengthBodyLeavesFollowingBytes) {
  const std::string head_text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
  const std::string rest = "okHTTP/1.1 200 OK\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, head_text, &head));
  std::vector<std::string_view> out;
  BodyChunk c = parser.FeedBody(rest.data(), rest.size(), &out);
  EXPECT_TRUE(c.complete);
  EXPECT_EQ(c.consumed, 2u);
  EXPECT_EQ(Concat(out), "ok");
}

TEST(ResponseParserTest, ChunkedBodyInPieces) {
  const std::string head_text =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
  const std::string body =
      "4;name=val\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n";
  for (size_t piece : {1, 2, 3, 8, 1000}) {
    SCOPED_TRACE(piece);
    ResponseParser parser;
    parser.Reset(false);
    ResponseHead head;
    ASSERT_TRUE(Parse(&parser, head_text, &head));
    EXPECT_EQ(head.framing, Framing::kChunked);
    EXPECT_TRUE(head.keep_alive);
    FedBody fed = FeedInPieces(&parser, body, piece);
    EXPECT_FALSE(fed.error);
    EXPECT_FALSE(fed.misbehaved);
    EXPECT_TRUE(fed.complete);
    EXPECT_EQ(fed.consumed, body.size());
    EXPECT_EQ(fed.body, "Wikipedia in\r\n\r\nchunks.");
  }
}

TEST(ResponseParserTest, InvalidChunkIsAnError) {
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &head));
  FedBody fed = FeedInPieces(&parser, "xyz\r\n", 64);
  EXPECT_TRUE(fed.error);
  EXPECT_FALSE(fed.complete);
}

TEST(ResponseParserTest, UntilCloseBodyCompletedByFinishAtEof) {
  const std::string head_text = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
  const std::string body = "streamed until the server closes";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, head_text, &head));
  EXPECT_EQ(head.framing, Framing::kUntilClose);
  EXPECT_FALSE(head.keep_alive);  // the connection carries only this response
  EXPECT_FALSE(parser.message_complete());

  FedBody fed = FeedInPieces(&parser, body, 7);
  EXPECT_FALSE(fed.error);
  EXPECT_FALSE(fed.misbehaved);
  EXPECT_FALSE(fed.complete);
  EXPECT_EQ(fed.consumed, body.size());
  EXPECT_EQ(fed.body, body);

  EXPECT_TRUE(parser.FinishAtEof());
  EXPECT_TRUE(parser.message_complete());
}

TEST(ResponseParserTest, UntilCloseWithEmptyBody) {
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.0 200 OK\r\n\r\n", &head));
  EXPECT_EQ(head.framing, Framing::kUntilClose);
  EXPECT_TRUE(parser.FinishAtEof());
}

TEST(ResponseParserTest, NonChunkedTransferEncodingIsRefused) {
  // A client would read it until close (RFC 9112 §6.3), but a proxy that drops the
  // Transfer-Encoding header would hand the coded bytes on as the content: nginx answers
  // "upstream sent unknown Transfer-Encoding" with 502, and so does Turnpike.
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  EXPECT_FALSE(Parse(&parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", &head));
}

TEST(ResponseParserTest, TruncatedContentLengthBodyFailsAtEof) {
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", &head));
  FedBody fed = FeedInPieces(&parser, "only5", 64);
  EXPECT_FALSE(fed.complete);
  EXPECT_EQ(fed.body, "only5");
  EXPECT_FALSE(parser.FinishAtEof());
  EXPECT_FALSE(parser.message_complete());
}

TEST(ResponseParserTest, TruncatedChunkedBodyFailsAtEof) {
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &head));
  FedBody fed = FeedInPieces(&parser, "5\r\nhel", 64);
  EXPECT_FALSE(fed.complete);
  EXPECT_FALSE(parser.FinishAtEof());
}

TEST(ResponseParserTest, EofRightAfterHeadOfLengthResponseFails) {
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n", &head));
  EXPECT_FALSE(parser.FinishAtEof());
}

TEST(ResponseParserTest, HeadResponseWithContentLengthHasNoBody) {
  ResponseParser parser;
  parser.Reset(/*head_request=*/true);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", &head));
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.framing, Framing::kNone);
  EXPECT_EQ(head.content_length, 0u);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_TRUE(parser.message_complete());
  // The header itself is kept for the client.
  ASSERT_EQ(head.headers.size(), 1u);
  EXPECT_EQ(head.headers[0].value, "1234");

  // Whatever follows belongs to the next response.
  std::vector<std::string_view> out;
  BodyChunk c = parser.FeedBody("HTTP/1.1", 8, &out);
  EXPECT_TRUE(c.complete);
  EXPECT_EQ(c.consumed, 0u);
  EXPECT_TRUE(out.empty());
}

TEST(ResponseParserTest, HeadResponseWithChunkedHasNoBody) {
  ResponseParser parser;
  parser.Reset(true);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &head));
  EXPECT_EQ(head.framing, Framing::kNone);
  EXPECT_TRUE(parser.message_complete());
  EXPECT_TRUE(head.keep_alive);
}

TEST(ResponseParserTest, HeadResponseWithoutLengthKeepsConnectionAlive) {
  // RFC 9112 §6.3 rule 1: a response to HEAD ends with its head; no Content-Length or
  // Transfer-Encoding is needed and the connection stays reusable.
  ResponseParser parser;
  parser.Reset(true);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", &head));
  EXPECT_EQ(head.framing, Framing::kNone);
  EXPECT_TRUE(parser.message_complete());
  EXPECT_TRUE(head.keep_alive);
}

TEST(ResponseParserTest, NoContentAndNotModifiedHaveNoBody) {
  for (std::string_view text :
       {std::string_view("HTTP/1.1 204 No Content\r\n\r\n"),
        std::string_view("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"),
        std::string_view("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"),
        std::string_view("HTTP/1.1 304 Not Modified\r\nContent-Length: 500\r\n\r\n")}) {
    SCOPED_TRACE(text);
    ResponseParser parser;
    parser.Reset(false);
    ResponseHead head;
    ASSERT_TRUE(Parse(&parser, text, &head));
    EXPECT_EQ(head.framing, Framing::kNone);
    EXPECT_EQ(head.content_length, 0u);
    EXPECT_TRUE(head.keep_alive);
    EXPECT_TRUE(parser.message_complete());
    EXPECT_TRUE(parser.FinishAtEof());
  }
}

TEST(ResponseParserTest, ContentLengthZeroIsNotUntilClose) {
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &head));
  EXPECT_EQ(head.framing, Framing::kNone);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_TRUE(parser.message_complete());
}

TEST(ResponseParserTest, InterimHeadThenFinalHead) {
  const std::string wire =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 4\r\nLocation: /n/1\r\n\r\ndone";
  std::string_view rest = wire;
  ResponseParser parser;
  ResponseHead head;

  const int want_status[] = {100, 103};
  for (int status : want_status) {
    SCOPED_TRACE(status);
    parser.Reset(false);
    size_t scan = 0;
    size_t len = FindHeadEnd(rest, &scan);
    ASSERT_NE(len, 0u);
    ASSERT_TRUE(parser.ParseHead(rest.data(), len, &head));
    EXPECT_EQ(head.status, status);
    EXPECT_EQ(head.framing, Framing::kNone);
    EXPECT_TRUE(parser.message_complete());  // an interim head is a message of its own
    rest.remove_prefix(len);
  }
  EXPECT_EQ(head.headers.size(), 1u);  // the 103's Link

  parser.Reset(false);
  size_t scan = 0;
  size_t len = FindHeadEnd(rest, &scan);
  ASSERT_NE(len, 0u);
  ASSERT_TRUE(parser.ParseHead(rest.data(), len, &head));
  EXPECT_EQ(head.status, 201);
  EXPECT_EQ(head.reason, "Created");
  EXPECT_EQ(head.framing, Framing::kContentLength);
  ASSERT_EQ(head.headers.size(), 2u);
  EXPECT_FALSE(parser.message_complete());
  rest.remove_prefix(len);
  FedBody fed = FeedInPieces(&parser, rest, 64);
  EXPECT_TRUE(fed.complete);
  EXPECT_EQ(fed.body, "done");
}

TEST(ResponseParserTest, KeepAliveRules) {
  struct Case {
    std::string_view text;
    bool keep_alive;
  };
  for (const Case& c : {
           Case{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
           Case{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", false},
           Case{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: Close\r\n\r\n", false},
           Case{"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
           Case{"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n", true},
       }) {
    SCOPED_TRACE(c.text);
    ResponseParser parser;
    parser.Reset(false);
    ResponseHead head;
    ASSERT_TRUE(Parse(&parser, c.text, &head));
    EXPECT_EQ(head.keep_alive, c.keep_alive);
  }
}

TEST(ResponseParserTest, ConnectionCloseWithTokens) {
  const std::string buf =
      "HTTP/1.1 200 OK\r\nConnection: close, X-Secret\r\nX-Secret: s\r\nContent-Length: 0\r\n\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, buf, &head));
  EXPECT_FALSE(head.keep_alive);
  ASSERT_EQ(head.connection_token_count, 2);
  EXPECT_EQ(head.connection_tokens[0], "close");
  EXPECT_EQ(head.connection_tokens[1], "X-Secret");
  EXPECT_TRUE(IsListedIn("x-secret", head.connection_tokens, head.connection_token_count));
}

TEST(ResponseParserTest, MalformedHeadIsRejected) {
  for (std::string_view text : {
           std::string_view("HTTP/1.1 abc OK\r\n\r\n"),
           std::string_view("HTTP/1.1 1000 OK\r\n\r\n"),
           std::string_view("HTTX/1.1 200 OK\r\n\r\n"),
           std::string_view("<html>not http</html>\r\n\r\n"),
           std::string_view("HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"),
           std::string_view("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
           std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
           std::string_view("HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"),
       }) {
    SCOPED_TRACE(text);
    ResponseParser parser;
    parser.Reset(false);
    ResponseHead head;
    EXPECT_FALSE(Parse(&parser, text, &head));
  }
}

TEST(ResponseParserTest, StatusCodeMustBeThreeDigits) {
  // RFC 9112 §4: status-code = 3DIGIT; RFC 9110 §15: 100..599.
  for (std::string_view text : {std::string_view("HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"),
                                std::string_view("HTTP/1.1 0 OK\r\nContent-Length: 0\r\n\r\n"),
                                std::string_view("HTTP/1.1 099 OK\r\nContent-Length: 0\r\n\r\n")}) {
    SCOPED_TRACE(text);
    ResponseParser parser;
    parser.Reset(false);
    ResponseHead head;
    EXPECT_FALSE(Parse(&parser, text, &head));
  }
}

TEST(ResponseParserTest, ObsFoldIsRejectedOrJoined) {
  const std::string buf =
      "HTTP/1.1 200 OK\r\nX-Fold: first\r\n second\r\nContent-Length: 0\r\n\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  if (Parse(&parser, buf, &head)) {
    ASSERT_EQ(head.headers.size(), 2u);
    EXPECT_NE(head.headers[0].value.find("first"), std::string_view::npos);
    EXPECT_NE(head.headers[0].value.find("second"), std::string_view::npos);
  }
}

TEST(ResponseParserTest, EmptyHeaderValueKeepsItsOwnEntry) {
  const std::string buf = "HTTP/1.1 200 OK\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, buf, &head));
  ASSERT_EQ(head.headers.size(), 2u);
  EXPECT_EQ(head.headers[0].name, "X-Empty");
  EXPECT_TRUE(head.headers[0].value.empty());
  EXPECT_EQ(head.headers[1].name, "Content-Length");
  EXPECT_TRUE(parser.message_complete());
}

TEST(ResponseParserTest, SwitchingProtocolsIsAHeadOnlyMessage) {
  const std::string buf =
      "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n";
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  ASSERT_TRUE(Parse(&parser, buf, &head));
  EXPECT_EQ(head.status, 101);
  EXPECT_EQ(head.framing, Framing::kNone);
  EXPECT_TRUE(parser.message_complete());
}

TEST(ResponseParserTest, ContentLengthWithTransferEncodingIsRejected) {
  // RFC 9112 §6.3: "ought to be handled as an error"; accepting it with Content-Length framing
  // would desynchronise the upstream connection.
  ResponseParser parser;
  parser.Reset(false);
  ResponseHead head;
  const std::string buf =
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_FALSE(Parse(&parser, buf, &head));
}

TEST(ResponseParserTest, ReusedAcrossKeepAliveResponses) {
  ResponseParser parser;
  ResponseHead head;
  for (int i = 0; i < 100; ++i) {
    const bool head_request = i % 3 == 0;
    parser.Reset(head_request);
    const std::string body = "resp" + std::to_string(i);
    const std::string buf =
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    ASSERT_TRUE(Parse(&parser, buf, &head)) << i;
    ASSERT_EQ(head.headers.size(), 1u);
    if (head_request) {
      ASSERT_TRUE(parser.message_complete());
      continue;
    }
    FedBody fed = FeedInPieces(&parser, body, 3);
    ASSERT_TRUE(fed.complete) << i;
    ASSERT_EQ(fed.body, body);
  }
}

}  // namespace
}  // namespace turnpike::http
