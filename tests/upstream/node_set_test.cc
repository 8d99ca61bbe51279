#include "upstream/node_set.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

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

TEST(NodeTextTest, InlineAndHeapTextsCopyMoveAndCompare) {
  const std::string inline_text(NodeText::kInline, 'a');  // the longest kept inline
  const std::string long_text(200, 'b');                  // a long domain name
  for (const std::string& s :
       {std::string(), std::string("127.66.1.2:18080"), inline_text, long_text}) {
    NodeText t;
    t = s;
    EXPECT_EQ(t.view(), s);
    EXPECT_EQ(t.size(), s.size());
    EXPECT_EQ(t.empty(), s.empty());
    EXPECT_EQ(t.heap(), s.size() > NodeText::kInline) << s.size();
    NodeText copy = t;
    EXPECT_EQ(copy, t);
    EXPECT_EQ(copy.str(), s);
    if (t.heap()) {
      EXPECT_NE(copy.data(), t.data());  // its own heap copy
    }
    NodeText moved = std::move(copy);
    EXPECT_EQ(moved.view(), s);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    NodeText assigned("x");
    assigned = moved;
    EXPECT_EQ(assigned.view(), s);
    assigned = NodeText(long_text);  // heap over heap or inline: the old one is freed
    EXPECT_EQ(assigned.view(), long_text);
    assigned = "short";
    EXPECT_EQ(assigned, "short");
    EXPECT_FALSE(assigned.heap());
  }
  EXPECT_FALSE(NodeText("10.0.0.1") == NodeText("10.0.0.10"));
  EXPECT_TRUE(NodeText("10.0.0.1") == "10.0.0.1");
}

TEST(NodeTextTest, NodeIsSmallAndItsIpLiteralTextsAreInline) {
  EXPECT_LE(sizeof(Node), 192u);  // was ~240 with sockaddr_storage and std::strings
  Node n;
  n.host = n.ip_text = "fe80:1234:5678:9abc:def0:1234:5678:9abc";  // the longest IPv6 text
  n.host_header = "[fe80:1234:5678:9abc:def0:1234:5678:9abc]:65535";
  EXPECT_FALSE(n.host.heap());
  EXPECT_FALSE(n.ip_text.heap());
  EXPECT_FALSE(n.host_header.heap());
  Node copy = n;
  EXPECT_EQ(copy.host, n.host);
  EXPECT_EQ(copy.host_header, "[fe80:1234:5678:9abc:def0:1234:5678:9abc]:65535");
}

}  // namespace
}  // namespace turnpike::upstream
