#include "upstream/node_set.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

namespace turnpike::upstream {
namespace {

Node V4(const char* ip, uint16_t port, int weight = 1, int priority = 0) {
  Node n;
  n.host = ip;
  n.port = port;
  n.weight = weight;
  n.priority = priority;
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  inet_pton(AF_INET, ip, &sin.sin_addr);
  std::memcpy(&n.addr, &sin, sizeof(sin));
  n.addr_len = sizeof(sin);
  return n;
}

TEST(NodeSetTest, SameNodesComparesEveryField) {
  NodeSet a{{V4("10.0.0.1", 80), V4("10.0.0.2", 81, 3, 1)}};
  NodeSet b = a;
  EXPECT_TRUE(SameNodes(a, b));
  EXPECT_TRUE(SameNodes(NodeSet{}, NodeSet{}));

  NodeSet c = a;
  c.nodes[1].host = "other";
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes[1].port = 82;
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes[1].weight = 4;
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes[1].priority = 0;
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  reinterpret_cast<sockaddr_in*>(&c.nodes[1].addr)->sin_addr.s_addr ^= 1;  // re-resolved
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes[1].addr_len = sizeof(sockaddr_in6);
  EXPECT_FALSE(SameNodes(a, c));
}

TEST(NodeSetTest, OrderAndSizeMatter) {
  NodeSet a{{V4("10.0.0.1", 80), V4("10.0.0.2", 80)}};
  NodeSet swapped{{V4("10.0.0.2", 80), V4("10.0.0.1", 80)}};
  NodeSet shorter{{V4("10.0.0.1", 80)}};
  EXPECT_FALSE(SameNodes(a, swapped));
  EXPECT_FALSE(SameNodes(a, shorter));
  EXPECT_FALSE(SameNodes(shorter, a));
}

TEST(NodeSetTest, BytesPastAddrLenAreIgnored) {
  NodeSet a{{V4("10.0.0.1", 80)}};
  NodeSet b = a;
  reinterpret_cast<char*>(&b.nodes[0].addr)[sizeof(sockaddr_in) + 4] = 42;
  EXPECT_TRUE(SameNodes(a, b));
}

}  // namespace
}  // namespace turnpike::upstream
