// EncodeForwardedRequestHead with plugin edits: control bytes a plugin hands in are %XX, the
// proxy's own headers (framing, hop-by-hop, Host, X-Real-IP) cannot be set by a plugin, its
// X-Forwarded-Proto/Host/Port replace the proxy's, its X-Forwarded-For ends with the client.
#include "http/request_encoder.h"

#include <gtest/gtest.h>

#include <string>

#include "parse_test_util.h"

namespace turnpike::http {
namespace {

RequestHead Head() {
  RequestHead h;
  h.method_name = "GET";
  h.target = "/a?b=1";
  h.path = "/a";
  h.query = "b=1";
  h.host = "client.example:8080";
  h.headers = {{"Host", "client.example:8080"},
               {"X-Forwarded-For", "9.9.9.9"},
               {"X-Keep", "k"},
               {"Content-Length", "3"}};
  h.framing = Framing::kContentLength;
  h.content_length = 3;
  return h;
}

ForwardedRequest Forwarded(const HeaderEdits* edits) {
  ForwardedRequest f;
  f.host = "client.example:8080";
  f.remote_addr = "127.0.0.1";
  f.forwarded_host = "client.example:8080";
  f.local_port = "9080";
  f.edits = edits;
  return f;
}

std::string Encode(const RequestHead& h, const ForwardedRequest& f) {
  std::string out = "garbage";
  EncodeForwardedRequestHead(h, f, &out);
  return out;
}

TEST(RequestEncoderTest, PlainRequest) {
  EXPECT_EQ(Encode(Head(), Forwarded(nullptr)),
            "GET /a?b=1 HTTP/1.1\r\nHost: client.example:8080\r\nX-Keep: k\r\n"
            "X-Real-IP: 127.0.0.1\r\nX-Forwarded-For: 9.9.9.9, 127.0.0.1\r\n"
            "X-Forwarded-Proto: http\r\nX-Forwarded-Host: client.example:8080\r\n"
            "X-Forwarded-Port: 8080\r\nContent-Length: 3\r\n\r\n");
}

// A websocket route's upgrade: the client's own Upgrade and Connection are hop-by-hop and
// dropped as always; the proxy states the upgrade itself.
TEST(RequestEncoderTest, UpgradeIsStatedByTheProxy) {
  RequestHead h = Head();
  h.headers = {{"Host", "client.example:8080"},
               {"Connection", "keep-alive, Upgrade"},
               {"Upgrade", "websocket"},
               {"Sec-WebSocket-Key", "k=="}};
  h.connection_tokens[0] = "keep-alive";
  h.connection_tokens[1] = "Upgrade";
  h.connection_token_count = 2;
  h.framing = Framing::kNone;
  h.content_length = 0;
  ForwardedRequest f = Forwarded(nullptr);
  std::string dropped = Encode(h, f);
  EXPECT_EQ(dropped.find("Upgrade"), std::string::npos) << dropped;
  EXPECT_EQ(dropped.find("Connection"), std::string::npos) << dropped;
  f.upgrade = "websocket";
  EXPECT_EQ(Encode(h, f),
            "GET /a?b=1 HTTP/1.1\r\nHost: client.example:8080\r\nSec-WebSocket-Key: k==\r\n"
            "X-Real-IP: 127.0.0.1\r\nX-Forwarded-For: 127.0.0.1\r\n"
            "X-Forwarded-Proto: http\r\nX-Forwarded-Host: client.example:8080\r\n"
            "X-Forwarded-Port: 8080\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n");
}

TEST(RequestEncoderTest, ControlBytesFromPluginsAreEscaped) {
  HeaderEdits edits;
  edits.Set("X-Val", "a\r\nX-Injected: 1");
  edits.Add("X-Na\nme", std::string_view("v\0w\x7f", 4));
  ForwardedRequest f = Forwarded(&edits);
  f.method = "GET\r\nX";
  f.target = "/p\r\nX-Injected: 2 HTTP/1.1";
  f.host = "h\r\nX-Injected: 3";
  f.host_from_plugin = true;
  const std::string out = Encode(Head(), f);
  EXPECT_EQ(out.find("\r\nX-Injected"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("GET%0D%0AX /p%0D%0AX-Injected:%202%20HTTP/1.1 HTTP/1.1\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("\r\nHost: h%0D%0AX-Injected: 3\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nX-Val: a%0D%0AX-Injected: 1\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nX-Na%0Ame: v%00w%7F\r\n"), std::string::npos) << out;
}

// The scan goes eight bytes at a time: every unsafe byte at every position of a long value is
// found, and bytes from 0x80 up (UTF-8), spaces in values and the rest pass as they are.
TEST(RequestEncoderTest, EveryUnsafeByteAtEveryPositionIsEscaped) {
  const std::string clean = "ab \xc3\xa9~!\x80\xff" + std::string(13, 'z');  // 21 bytes
  {
    HeaderEdits edits;
    edits.Set("X-Val", clean);
    const std::string out = Encode(Head(), Forwarded(&edits));
    EXPECT_NE(out.find("\r\nX-Val: " + clean + "\r\n"), std::string::npos) << out;
  }
  for (unsigned char bad : {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1f, 0x7f}) {
    for (size_t at = 0; at < clean.size(); ++at) {
      std::string value = clean;
      value[at] = static_cast<char>(bad);
      value += value;  // a second one, further on
      const std::string want = test::EscapedControls(value);
      HeaderEdits edits;
      edits.Set("X-Val", value);
      const std::string out = Encode(Head(), Forwarded(&edits));
      EXPECT_NE(out.find("\r\nX-Val: " + want + "\r\n"), std::string::npos)
          << "byte " << int{bad} << " at " << at << ": " << out;
    }
  }
}

TEST(RequestEncoderTest, PluginsCannotSetFramingHopByHopHostOrRealIp) {
  HeaderEdits edits;
  for (const char* name : {"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
                           "Upgrade", "TE", "Trailer", "Proxy-Connection", "Host", "X-Real-IP"}) {
    edits.Set(name, "plugin");
  }
  edits.Add("content-length", "99");
  const std::string out = Encode(Head(), Forwarded(&edits));
  EXPECT_EQ(out.find("plugin"), std::string::npos) << out;
  EXPECT_EQ(out.find("99"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nContent-Length: 3\r\n\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nX-Real-IP: 127.0.0.1\r\n"), std::string::npos) << out;
}

TEST(RequestEncoderTest, PluginForwardedHeadersReplaceTheProxysOwn) {
  HeaderEdits edits;
  edits.Set("X-Forwarded-Proto", "https");
  edits.Set("x-forwarded-host", "fwd.example");
  edits.Set("X-Forwarded-Port", "8443");
  edits.Set("X-Forwarded-For", "22.22.22.22");
  const std::string out = Encode(Head(), Forwarded(&edits));
  EXPECT_NE(out.find("\r\nX-Forwarded-For: 22.22.22.22, 127.0.0.1\r\n"
                     "X-Forwarded-Proto: https\r\nX-Forwarded-Host: fwd.example\r\n"
                     "X-Forwarded-Port: 8443\r\nContent-Length: 3\r\n\r\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("9.9.9.9"), std::string::npos) << out;  // the client's chain replaced
}

TEST(RequestEncoderTest, PluginForwardedHeadersAddedOrRemoved) {
  HeaderEdits edits;
  edits.Add("X-Forwarded-For", "1.1.1.1");  // added to the client's chain
  edits.Remove("X-Forwarded-Host");         // not sent at all
  std::string out = Encode(Head(), Forwarded(&edits));
  EXPECT_NE(out.find("\r\nX-Forwarded-For: 9.9.9.9, 1.1.1.1, 127.0.0.1\r\n"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("X-Forwarded-Host"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nX-Forwarded-Proto: http\r\n"), std::string::npos) << out;
  HeaderEdits removed;
  removed.Remove("X-Forwarded-For");  // the chain is the client address alone
  out = Encode(Head(), Forwarded(&removed));
  EXPECT_NE(out.find("\r\nX-Forwarded-For: 127.0.0.1\r\n"), std::string::npos) << out;
}

TEST(RequestEncoderTest, SetThenAddSendsSeveralLines) {
  HeaderEdits edits;
  edits.Add("X-Keep", "added");
  edits.Set("X-Multi", "1");
  edits.Add("X-Multi", "2");
  const std::string out = Encode(Head(), Forwarded(&edits));
  EXPECT_NE(out.find("\r\nX-Keep: k\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nX-Keep: added\r\nX-Multi: 1\r\nX-Multi: 2\r\n"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace turnpike::http
