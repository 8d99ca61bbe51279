#include "upstream/node_set.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

std::shared_ptr<NodeBlock> Block(std::initializer_list<Node> nodes) {
  auto block = std::make_shared<NodeBlock>();
  block->nodes = nodes;
  return block;
}

TEST(NodeListTest, AppendedBlocksAreSharedNotCopied) {
  NodeBlockConstSharedPtr a = Block({V4("10.0.0.1", 80), V4("10.0.0.2", 80), V4("10.0.0.3", 80)});
  NodeBlockConstSharedPtr b = Block({V4("10.0.1.1", 80)});
  NodeList first;
  first.Append(a);
  first.Append(b);
  NodeList second;
  second.Append(a, 1, 3);
  second.Append(b);
  second.Append(a, 0, 1);  // a block met again is kept once
  ASSERT_EQ(first.size(), 4u);
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(&second[0], &first[1]) << "the same node, not a copy";
  EXPECT_EQ(&second[2], &first[3]);
  EXPECT_EQ(second[3].host, "10.0.0.1");
  EXPECT_EQ(second.blocks(), (std::vector<NodeBlockConstSharedPtr>{a, b}));
  EXPECT_EQ(a.use_count(), 3) << "each list keeps the block alive";
  second.Append(b, 1, 1);  // an empty range: nothing, not even the block
  EXPECT_EQ(second.size(), 4u);
  // Iteration and algorithms see nodes.
  std::vector<std::string> hosts;
  for (const Node& n : first) hosts.push_back(n.host.str());
  EXPECT_EQ(hosts, (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.1"}));
  EXPECT_EQ(
      std::find_if(first.begin(), first.end(), [](const Node& n) { return n.host == "10.0.0.3"; }) -
          first.begin(),
      2);
  // The blocks outlive the lists' makers.
  const Node* kept = &first[0];
  a.reset();
  b.reset();
  EXPECT_EQ(kept->host, "10.0.0.1");
}

TEST(NodeListTest, PushedAndEditedNodesAreTheListsOwn) {
  NodeBlockConstSharedPtr block = Block({V4("10.0.0.1", 80), V4("10.0.0.2", 80)});
  NodeList list;
  list.Append(block);
  list.push_back(list[0]);  // a copy of one of its own nodes
  ASSERT_EQ(list.size(), 3u);
  EXPECT_NE(&list[2], &list[0]);
  EXPECT_EQ(list[2].host, "10.0.0.1");
  NodeList copy = list;
  copy.push_back(V4("10.0.0.9", 80));
  EXPECT_EQ(list.size(), 3u) << "a copy pushes into storage of its own";
  EXPECT_EQ(&copy[2], &list[2]) << "and shares what was pushed before";
  // Editing a shared node edits a copy: the block and the other lists keep theirs.
  copy.Mutable(0).weight = 7;
  EXPECT_EQ(copy[0].weight, 7);
  EXPECT_EQ(list[0].weight, 1);
  EXPECT_EQ(block->nodes[0].weight, 1);
  for (int i = 0; i < 100; ++i) copy.push_back(V4("10.0.1.1", 80));  // nodes never move
  EXPECT_EQ(copy[0].weight, 7);
  EXPECT_EQ(copy[3].host, "10.0.0.9");
}

TEST(NodeListTest, TakeSoleBlockOnlyWhenNobodyElseHoldsIt) {
  NodeList list(std::vector<Node>{V4("10.0.0.1", 80), V4("10.0.0.2", 80)});
  NodeList copy = list;
  EXPECT_TRUE(list.TakeSoleBlock().empty()) << "the copy holds the block too";
  EXPECT_EQ(list.size(), 2u);
  copy = NodeList();
  std::vector<Node> nodes = list.TakeSoleBlock();
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_TRUE(list.empty());
  NodeList pushed;
  pushed.push_back(V4("10.0.0.1", 80));
  EXPECT_TRUE(pushed.TakeSoleBlock().empty()) << "not a block";
  NodeList part;
  part.Append(Block({V4("10.0.0.1", 80), V4("10.0.0.2", 80)}), 0, 1);
  EXPECT_TRUE(part.TakeSoleBlock().empty()) << "not all of the block";
  EXPECT_TRUE(NodeList(std::vector<Node>{}).empty());
}

TEST(NodeSetTest, SameNodesComparesEveryField) {
  NodeSet a{{V4("10.0.0.1", 80), V4("10.0.0.2", 81, 3, 1)}};
  NodeSet b = a;
  EXPECT_TRUE(SameNodes(a, b));
  EXPECT_TRUE(SameNodes(NodeSet{}, NodeSet{}));

  NodeSet c = a;
  c.nodes.Mutable(1).host = "other";
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes.Mutable(1).port = 82;
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes.Mutable(1).weight = 4;
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes.Mutable(1).priority = 0;
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  reinterpret_cast<sockaddr_in*>(&c.nodes.Mutable(1).addr)->sin_addr.s_addr ^= 1;  // re-resolved
  EXPECT_FALSE(SameNodes(a, c));
  c = a;
  c.nodes.Mutable(1).addr_len = sizeof(sockaddr_in6);
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
  reinterpret_cast<char*>(&b.nodes.Mutable(0).addr)[sizeof(sockaddr_in) + 4] = 42;
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
