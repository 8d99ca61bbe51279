// Helpers on parsed messages: hop-by-hop names, Connection token lookup, reason phrases and
// the no-body rule for responses.
#include "http/message.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>

namespace turnpike::http {
namespace {

// The names ClassifyHeaderName knows, spelled in lower case.
const std::map<std::string, HeaderId>& KnownNames() {
  static const std::map<std::string, HeaderId> names = {
      {"connection", HeaderId::kConnection},
      {"keep-alive", HeaderId::kKeepAlive},
      {"proxy-connection", HeaderId::kProxyConnection},
      {"te", HeaderId::kTe},
      {"trailer", HeaderId::kTrailer},
      {"transfer-encoding", HeaderId::kTransferEncoding},
      {"upgrade", HeaderId::kUpgrade},
      {"host", HeaderId::kHost},
      {"content-length", HeaderId::kContentLength},
      {"expect", HeaderId::kExpect},
      {"server", HeaderId::kServer},
      {"x-real-ip", HeaderId::kXRealIp},
      {"forwarded", HeaderId::kForwarded},
      {"x-forwarded-for", HeaderId::kXForwardedFor},
      {"x-forwarded-host", HeaderId::kXForwardedHost},
      {"x-forwarded-port", HeaderId::kXForwardedPort},
      {"x-forwarded-proto", HeaderId::kXForwardedProto},
  };
  return names;
}

// The reference: lower-case the ASCII letters, look the name up.
HeaderId ReferenceId(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  auto it = KnownNames().find(lower);
  return it == KnownNames().end() ? HeaderId::kOther : it->second;
}

TEST(ClassifyHeaderNameTest, EveryKnownNameInAnyCase) {
  for (const auto& [lower, id] : KnownNames()) {
    std::string upper = lower;
    std::string mixed = lower;
    for (size_t i = 0; i < lower.size(); ++i) {
      if (lower[i] >= 'a' && lower[i] <= 'z') {
        upper[i] = static_cast<char>(lower[i] - 32);
        if (i % 2 == 0) mixed[i] = upper[i];
      }
    }
    EXPECT_EQ(ClassifyHeaderName(lower), id) << lower;
    EXPECT_EQ(ClassifyHeaderName(upper), id) << upper;
    EXPECT_EQ(ClassifyHeaderName(mixed), id) << mixed;
  }
}

// Every known name with any one byte replaced by any other byte agrees with the reference:
// the word-wise compare ignores the case bit of letters only (a '-' is not a CR, an 'A' is
// not an 'a' + 0x20 of something else).
TEST(ClassifyHeaderNameTest, EveryOneByteChangeAgreesWithTheReference) {
  for (const auto& [lower, id] : KnownNames()) {
    for (size_t i = 0; i < lower.size(); ++i) {
      for (int b = 0; b < 256; ++b) {
        std::string name = lower;
        name[i] = static_cast<char>(b);
        ASSERT_EQ(ClassifyHeaderName(name), ReferenceId(name))
            << lower << " with byte " << b << " at " << i;
      }
    }
  }
}

TEST(ClassifyHeaderNameTest, OtherNamesAndLengths) {
  for (std::string_view name :
       {"", "t", "hos", "hostt", "user-agent", "accept", "cookie", "x-forwarded-hosx",
        "x-forwarded-portt", "content-type", "x-client", "content_length", "x-forwarded-prot0"}) {
    EXPECT_EQ(ClassifyHeaderName(name), HeaderId::kOther) << "'" << name << "'";
  }
}

// A Header made by hand is classified when asked; the parser's id is taken as it is.
TEST(ClassifyHeaderNameTest, HeaderIdOfClassifiesHeadersMadeByHand) {
  Header by_hand{"Connection", "close"};
  EXPECT_EQ(by_hand.id, HeaderId::kUnclassified);
  EXPECT_EQ(HeaderIdOf(by_hand), HeaderId::kConnection);
  Header parsed{"Connection", "close", HeaderId::kOther};
  EXPECT_EQ(HeaderIdOf(parsed), HeaderId::kOther);
}

TEST(IsHopByHopTest, TheSevenHopByHopHeaders) {
  for (std::string_view name : {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
                                "Transfer-Encoding", "Upgrade"}) {
    EXPECT_TRUE(IsHopByHop(name)) << name;
  }
}

TEST(IsHopByHopTest, CaseInsensitive) {
  EXPECT_TRUE(IsHopByHop("connection"));
  EXPECT_TRUE(IsHopByHop("CONNECTION"));
  EXPECT_TRUE(IsHopByHop("keep-alive"));
  EXPECT_TRUE(IsHopByHop("proxy-CONNECTION"));
  EXPECT_TRUE(IsHopByHop("te"));
  EXPECT_TRUE(IsHopByHop("tE"));
  EXPECT_TRUE(IsHopByHop("TRAILER"));
  EXPECT_TRUE(IsHopByHop("transfer-encoding"));
  EXPECT_TRUE(IsHopByHop("upgrade"));
}

TEST(IsHopByHopTest, EndToEndHeadersAreNot) {
  for (std::string_view name :
       {"", "T", "Host", "Content-Length", "Content-Type", "Trailers", "Upgrade-Insecure-Requests",
        "Connectio", "Connections", "Keep-Alive ", "X-Connection", "Proxy-Authorization",
        "Transfer-Encodin", "Accept-Encoding", "Te-"}) {
    EXPECT_FALSE(IsHopByHop(name)) << "'" << name << "'";
  }
}

TEST(IsListedInTest, CaseInsensitiveMatchAgainstTokens) {
  const std::string_view tokens[] = {"close", "X-Foo", "keep-alive"};
  EXPECT_TRUE(IsListedIn("x-foo", tokens, 3));
  EXPECT_TRUE(IsListedIn("X-FOO", tokens, 3));
  EXPECT_TRUE(IsListedIn("Close", tokens, 3));
  EXPECT_TRUE(IsListedIn("Keep-Alive", tokens, 3));
  EXPECT_FALSE(IsListedIn("X-Fo", tokens, 3));
  EXPECT_FALSE(IsListedIn("X-Foo-Bar", tokens, 3));
  EXPECT_FALSE(IsListedIn("", tokens, 3));
}

TEST(IsListedInTest, OnlyTheFirstCountTokensAreLookedAt) {
  const std::string_view tokens[] = {"a", "b", "c"};
  EXPECT_FALSE(IsListedIn("c", tokens, 2));
  EXPECT_TRUE(IsListedIn("b", tokens, 2));
  EXPECT_FALSE(IsListedIn("a", tokens, 0));
  EXPECT_FALSE(IsListedIn("a", nullptr, 0));
}

TEST(ReasonPhraseTest, StandardPhrases) {
  EXPECT_EQ(ReasonPhrase(100), "Continue");
  EXPECT_EQ(ReasonPhrase(101), "Switching Protocols");
  EXPECT_EQ(ReasonPhrase(200), "OK");
  EXPECT_EQ(ReasonPhrase(201), "Created");
  EXPECT_EQ(ReasonPhrase(204), "No Content");
  EXPECT_EQ(ReasonPhrase(206), "Partial Content");
  EXPECT_EQ(ReasonPhrase(301), "Moved Permanently");
  EXPECT_EQ(ReasonPhrase(302), "Found");
  EXPECT_EQ(ReasonPhrase(304), "Not Modified");
  EXPECT_EQ(ReasonPhrase(307), "Temporary Redirect");
  EXPECT_EQ(ReasonPhrase(308), "Permanent Redirect");
  EXPECT_EQ(ReasonPhrase(400), "Bad Request");
  EXPECT_EQ(ReasonPhrase(401), "Unauthorized");
  EXPECT_EQ(ReasonPhrase(403), "Forbidden");
  EXPECT_EQ(ReasonPhrase(404), "Not Found");
  EXPECT_EQ(ReasonPhrase(408), "Request Timeout");
  EXPECT_EQ(ReasonPhrase(411), "Length Required");
  EXPECT_EQ(ReasonPhrase(429), "Too Many Requests");
  EXPECT_EQ(ReasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(ReasonPhrase(500), "Internal Server Error");
  EXPECT_EQ(ReasonPhrase(501), "Not Implemented");
  EXPECT_EQ(ReasonPhrase(502), "Bad Gateway");
  EXPECT_EQ(ReasonPhrase(505), "HTTP Version Not Supported");
}

// The phrases a client sees on gateway-generated errors follow nginx (what APISIX answers with).
TEST(ReasonPhraseTest, NginxCompatiblePhrases) {
  EXPECT_EQ(ReasonPhrase(405), "Not Allowed");
  EXPECT_EQ(ReasonPhrase(413), "Request Entity Too Large");
  EXPECT_EQ(ReasonPhrase(414), "Request-URI Too Large");
  EXPECT_EQ(ReasonPhrase(503), "Service Temporarily Unavailable");
  EXPECT_EQ(ReasonPhrase(504), "Gateway Time-out");
}

TEST(ReasonPhraseTest, UnknownStatus) {
  EXPECT_EQ(ReasonPhrase(0), "Unknown");
  EXPECT_EQ(ReasonPhrase(299), "Unknown");
  EXPECT_EQ(ReasonPhrase(599), "Unknown");
  EXPECT_EQ(ReasonPhrase(-1), "Unknown");
  EXPECT_EQ(ReasonPhrase(1000), "Unknown");
}

TEST(ResponseHasNoBodyTest, StatusRules) {
  EXPECT_TRUE(ResponseHasNoBody(100, false));
  EXPECT_TRUE(ResponseHasNoBody(101, false));
  EXPECT_TRUE(ResponseHasNoBody(103, false));
  EXPECT_TRUE(ResponseHasNoBody(199, false));
  EXPECT_TRUE(ResponseHasNoBody(204, false));
  EXPECT_TRUE(ResponseHasNoBody(304, false));
  EXPECT_FALSE(ResponseHasNoBody(200, false));
  EXPECT_FALSE(ResponseHasNoBody(205, false));
  EXPECT_FALSE(ResponseHasNoBody(206, false));
  EXPECT_FALSE(ResponseHasNoBody(302, false));
  EXPECT_FALSE(ResponseHasNoBody(404, false));
  EXPECT_FALSE(ResponseHasNoBody(500, false));
}

TEST(ResponseHasNoBodyTest, HeadRequestNeverHasABody) {
  for (int status : {100, 200, 204, 206, 301, 304, 404, 500, 503}) {
    EXPECT_TRUE(ResponseHasNoBody(status, true)) << status;
  }
}

TEST(MessageHeadTest, RequestClearResetsEveryField) {
  RequestHead h;
  h.method = base::Method::kPost;
  h.method_name = "POST";
  h.target = "/a?b";
  h.path = "/a";
  h.query = "b";
  h.version_minor = 0;
  h.headers.push_back({"Host", "x"});
  h.host = "x";
  h.framing = Framing::kChunked;
  h.content_length = 7;
  h.keep_alive = false;
  h.expect_continue = true;
  h.connection_token_count = 3;
  size_t capacity = h.headers.capacity();
  h.Clear();
  EXPECT_EQ(h.method, base::Method::kOther);
  EXPECT_TRUE(h.method_name.empty());
  EXPECT_TRUE(h.target.empty());
  EXPECT_TRUE(h.path.empty());
  EXPECT_TRUE(h.query.empty());
  EXPECT_EQ(h.version_minor, 1);
  EXPECT_TRUE(h.headers.empty());
  EXPECT_EQ(h.headers.capacity(), capacity);  // reused between requests
  EXPECT_TRUE(h.host.empty());
  EXPECT_EQ(h.framing, Framing::kNone);
  EXPECT_EQ(h.content_length, 0u);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_FALSE(h.expect_continue);
  EXPECT_EQ(h.connection_token_count, 0);
}

TEST(MessageHeadTest, ResponseClearResetsEveryField) {
  ResponseHead h;
  h.status = 404;
  h.reason = "Not Found";
  h.version_minor = 0;
  h.headers.push_back({"Content-Length", "3"});
  h.framing = Framing::kUntilClose;
  h.content_length = 3;
  h.keep_alive = false;
  h.connection_token_count = 1;
  h.Clear();
  EXPECT_EQ(h.status, 0);
  EXPECT_TRUE(h.reason.empty());
  EXPECT_EQ(h.version_minor, 1);
  EXPECT_TRUE(h.headers.empty());
  EXPECT_EQ(h.framing, Framing::kNone);
  EXPECT_EQ(h.content_length, 0u);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_EQ(h.connection_token_count, 0);
}

}  // namespace
}  // namespace turnpike::http
