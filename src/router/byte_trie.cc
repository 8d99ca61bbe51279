#include "router/byte_trie.h"

#include <algorithm>
#include <deque>

namespace turnpike::router {
namespace {

size_t CommonPrefixLength(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

ByteTrie ByteTrie::Build(std::vector<Entry> entries) {
  ByteTrie trie;
  if (entries.empty()) return trie;

  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.key < b.key; });
  // Merge duplicate keys so that every key owns exactly one node.
  size_t out = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (out > 0 && entries[out - 1].key == entries[i].key) {
      if (entries[i].exact != kNone) entries[out - 1].exact = entries[i].exact;
      if (entries[i].prefix != kNone) entries[out - 1].prefix = entries[i].prefix;
      continue;
    }
    if (out != i) entries[out] = std::move(entries[i]);
    ++out;
  }
  entries.resize(out);

  // Breadth-first construction so that the children of a node are contiguous. In a sorted
  // range whose keys share `depth` bytes, the keys of one child share the byte at `depth`,
  // and their common prefix is the common prefix of the first and the last key.
  struct Pending {
    uint32_t node;
    size_t begin;
    size_t end;
  };
  trie.nodes_.emplace_back();
  trie.first_bytes_.push_back('\0');
  std::deque<Pending> queue;
  queue.push_back({0, 0, entries.size()});
  while (!queue.empty()) {
    Pending p = queue.front();
    queue.pop_front();
    const size_t depth = trie.nodes_[p.node].depth;
    size_t begin = p.begin;
    if (begin < p.end && entries[begin].key.size() == depth) {
      trie.nodes_[p.node].exact = entries[begin].exact;
      trie.nodes_[p.node].prefix = entries[begin].prefix;
      ++begin;
    }
    const uint32_t inherited =
        trie.nodes_[p.node].prefix != kNone ? p.node : trie.nodes_[p.node].prefix_parent;
    const uint32_t first_child = static_cast<uint32_t>(trie.nodes_.size());
    uint32_t child_count = 0;
    for (size_t group = begin; group < p.end;) {
      const char byte = entries[group].key[depth];
      size_t group_end = group + 1;
      while (group_end < p.end && entries[group_end].key[depth] == byte) ++group_end;
      const std::string& first = entries[group].key;
      const size_t child_depth = CommonPrefixLength(first, entries[group_end - 1].key);

      Node child;
      child.label_begin = static_cast<uint32_t>(trie.labels_.size());
      child.label_len = static_cast<uint32_t>(child_depth - depth);
      child.depth = static_cast<uint32_t>(child_depth);
      child.prefix_parent = inherited;
      trie.labels_.append(first, depth, child_depth - depth);
      trie.first_bytes_.push_back(byte);
      queue.push_back({static_cast<uint32_t>(trie.nodes_.size()), group, group_end});
      trie.nodes_.push_back(child);
      ++child_count;
      group = group_end;
    }
    trie.nodes_[p.node].first_child = first_child;
    trie.nodes_[p.node].child_count = child_count;
  }
  return trie;
}

}  // namespace turnpike::router
