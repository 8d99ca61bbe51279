// EncodeProxiedResponseHead for a switch of protocols: the node's hop-by-hop headers are
// dropped as for any response, and the 101 states the upgrade instead of keep-alive/close.
#include "http/response_encoder.h"

#include <gtest/gtest.h>

#include <string>

namespace turnpike::http {
namespace {

ResponseHead SwitchingProtocols() {
  ResponseHead r;
  r.status = 101;
  r.reason = "Switching Protocols";
  r.headers = {{"Upgrade", "websocket"},
               {"Connection", "Upgrade"},
               {"Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="}};
  r.connection_tokens[0] = "Upgrade";
  r.connection_token_count = 1;
  return r;
}

TEST(ResponseEncoderTest, SwitchingProtocolsStatesTheUpgrade) {
  ResponseHeadOptions o;
  o.status = 101;
  o.reason = "Switching Protocols";
  o.framing = BodyFraming::kNoBody;
  o.keep_alive = false;  // a draining worker: the upgrade still wins
  o.upgrade = "websocket";
  std::string out = "garbage";
  EncodeProxiedResponseHead(SwitchingProtocols(), o, &out);
  EXPECT_EQ(out,
            "HTTP/1.1 101 Switching Protocols\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n");
}

TEST(ResponseEncoderTest, WithoutUpgradeTheConnectionHeaderIsTheProxys) {
  ResponseHead r = SwitchingProtocols();
  r.status = 200;
  r.reason = "OK";
  ResponseHeadOptions o;
  o.keep_alive = false;
  o.content_length = 0;
  std::string out;
  EncodeProxiedResponseHead(r, o, &out);
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n");
}

}  // namespace
}  // namespace turnpike::http
