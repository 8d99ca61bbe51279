// FinishNode / ParseIpLiteral / SetAddress (discovery/node_source.h): the texts a request
// uses ($upstream_addr's IP, the Host header of pass_host=node) derived once per node.
#include "discovery/node_source.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

namespace turnpike::discovery {
namespace {

upstream::Node Finish(const std::string& host, int port) {
  upstream::Node node;
  DiscoveredNode from{host, port, 1, 0};
  EXPECT_TRUE(ParseIpLiteral(host, static_cast<uint16_t>(port == 0 ? kDefaultPort : port), &node))
      << host;
  FinishNode(from, &node);
  return node;
}

TEST(NodeSourceTest, Ipv4TextsAndHostHeader) {
  upstream::Node n = Finish("10.0.0.2", 8080);
  EXPECT_EQ(n.ip_text, "10.0.0.2");
  EXPECT_EQ(n.host_header, "10.0.0.2:8080");
  EXPECT_EQ(n.port, 8080);
  EXPECT_EQ(Finish("0.0.0.0", 1).ip_text, "0.0.0.0");
  EXPECT_EQ(Finish("255.255.255.255", 65535).host_header, "255.255.255.255:65535");
  // Port 80 (also port 0, the scheme's default) is left out of the Host header.
  EXPECT_EQ(Finish("127.66.1.9", 80).host_header, "127.66.1.9");
  upstream::Node d = Finish("127.66.1.9", 0);
  EXPECT_EQ(d.port, 80);
  EXPECT_EQ(d.host_header, "127.66.1.9");
}

TEST(NodeSourceTest, Ipv6TextsAndHostHeader) {
  upstream::Node n = Finish("::1", 8080);
  EXPECT_EQ(n.ip_text, "::1");
  EXPECT_EQ(n.host_header, "[::1]:8080");
  EXPECT_EQ(Finish("fe80:0:0::1", 80).ip_text, "fe80::1");  // the address's canonical text
  EXPECT_EQ(Finish("fe80:0:0::1", 80).host_header, "[fe80:0:0::1]");
}

TEST(NodeSourceTest, ResolvedNameKeepsItsNameInTheHostHeader) {
  upstream::Node resolved;
  ASSERT_TRUE(ParseIpLiteral("192.168.7.1", 0, &resolved));
  upstream::Node node;
  SetAddress(reinterpret_cast<const sockaddr*>(&resolved.addr), resolved.addr_len, 9000, &node);
  FinishNode(DiscoveredNode{"backend.internal", 9000, 1, 0}, &node);
  EXPECT_EQ(node.ip_text, "192.168.7.1");
  EXPECT_EQ(node.host_header, "backend.internal:9000");
}

TEST(NodeSourceTest, Ipv4TextMatchesInetNtop) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    in_addr a{};
    a.s_addr = rng();
    char want[INET_ADDRSTRLEN];
    ASSERT_NE(inet_ntop(AF_INET, &a, want, sizeof(want)), nullptr);
    upstream::Node n = Finish(want, 1000 + i);
    EXPECT_EQ(n.ip_text, want);
    EXPECT_EQ(n.host_header, std::string(want) + ":" + std::to_string(1000 + i));
  }
}

}  // namespace
}  // namespace turnpike::discovery
