// ByteTrie: an immutable, compact radix tree over bytes, used by the router for both URI
// tables (keys are paths, walked forward) and the host table (keys are reversed hosts, walked
// from the end of the request host so that a wildcard suffix becomes a prefix).
//
// Every key carries up to two values: an `exact` value, reported when the input equals the
// key, and a `prefix` value, reported when the key is a prefix of the input (equality
// included). Walk() reports the exact value first, then the prefix values from the longest
// matching key to the shortest, which is the bucket order of lua-resty-radixtree.
//
// Built once on the control thread; afterwards read-only and safe to share between threads.
// Walk() allocates nothing and costs O(length of the input): one pass down the tree, then a
// walk up a precomputed chain of the prefix-carrying ancestors.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::router {

class ByteTrie {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Entry {
    std::string key;
    uint32_t exact = kNone;
    uint32_t prefix = kNone;
  };

  // Control thread. Entries with the same key are merged (a later non-kNone value replaces an
  // earlier one). For a reverse walk the caller stores each key reversed.
  static ByteTrie Build(std::vector<Entry> entries);

  // Calls `visit(value, matched_length)` for the exact value of `input` (if any), then for the
  // prefix value of every key that is a prefix of `input`, longest key first, and stops as
  // soon as `visit` returns true. Returns whether some call returned true. With `kReverse`
  // the bytes of `input` are read from its end (matched_length then counts bytes from the
  // end). `visit` must be callable as `bool(uint32_t value, size_t matched_length)`.
  template <bool kReverse, typename Visit>
  bool Walk(std::string_view input, Visit&& visit) const;

  bool empty() const { return nodes_.empty(); }
  size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t label_begin = 0;  // the bytes from the parent to this node, in labels_
    uint32_t label_len = 0;    // 0 only for the root
    uint32_t depth = 0;        // key length at this node
    uint32_t first_child = 0;  // children are contiguous in nodes_, in byte order
    uint32_t child_count = 0;
    uint32_t exact = kNone;
    uint32_t prefix = kNone;
    uint32_t prefix_parent = kNone;  // nearest proper ancestor whose `prefix` is set
  };

  template <bool kReverse>
  static char At(std::string_view s, size_t i) {
    return kReverse ? s[s.size() - 1 - i] : s[i];
  }

  // The child of `node` whose label starts with `byte`, or kNone. Inline scan: nodes have
  // few children, and a libc call costs more than the scan at these sizes.
  uint32_t FindChild(const Node& node, char byte) const {
    const char* kids = first_bytes_.data() + node.first_child;
    if (node.child_count > 32) {
      const void* hit = std::memchr(kids, byte, node.child_count);
      return hit == nullptr
                 ? kNone
                 : node.first_child + static_cast<uint32_t>(static_cast<const char*>(hit) - kids);
    }
    for (uint32_t i = 0; i < node.child_count; ++i) {
      if (kids[i] == byte) return node.first_child + i;
    }
    return kNone;
  }

  // Labels are short; compares 8 bytes at a time without calling memcmp.
  static bool BytesEqual(const char* a, const char* b, size_t n) {
    for (; n >= 8; n -= 8, a += 8, b += 8) {
      uint64_t x;
      uint64_t y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      if (x != y) return false;
    }
    for (; n > 0; --n, ++a, ++b) {
      if (*a != *b) return false;
    }
    return true;
  }

  std::vector<Node> nodes_;
  std::string first_bytes_;  // first_bytes_[i] is the first label byte of nodes_[i]
  std::string labels_;
};

template <bool kReverse, typename Visit>
bool ByteTrie::Walk(std::string_view input, Visit&& visit) const {
  if (nodes_.empty()) return false;
  uint32_t at = 0;
  size_t depth = 0;
  uint32_t longest_prefix = nodes_[0].prefix != kNone ? 0 : kNone;
  bool whole_input = false;
  for (;;) {
    if (depth == input.size()) {
      whole_input = true;
      break;
    }
    const Node& node = nodes_[at];
    const uint32_t child = FindChild(node, At<kReverse>(input, depth));
    if (child == kNone) break;
    const Node& next = nodes_[child];
    if (input.size() - depth < next.label_len) break;
    // The first byte already matched through first_bytes_.
    const char* label = labels_.data() + next.label_begin;
    bool same = true;
    if constexpr (kReverse) {
      for (uint32_t i = 1; i < next.label_len; ++i) {
        if (At<true>(input, depth + i) != label[i]) {
          same = false;
          break;
        }
      }
    } else {
      same = BytesEqual(input.data() + depth + 1, label + 1, next.label_len - 1);
    }
    if (!same) break;
    depth += next.label_len;
    at = child;
    if (next.prefix != kNone) longest_prefix = child;
  }
  if (whole_input && nodes_[at].exact != kNone && visit(nodes_[at].exact, depth)) return true;
  for (uint32_t p = longest_prefix; p != kNone; p = nodes_[p].prefix_parent) {
    if (visit(nodes_[p].prefix, static_cast<size_t>(nodes_[p].depth))) return true;
  }
  return false;
}

}  // namespace turnpike::router
