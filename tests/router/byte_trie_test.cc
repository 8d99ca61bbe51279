#include "router/byte_trie.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace turnpike::router {
namespace {

constexpr uint32_t kNone = ByteTrie::kNone;

// Every (value, matched length) Walk() reports when no visit stops it.
template <bool kReverse>
std::vector<std::pair<uint32_t, size_t>> All(const ByteTrie& t, std::string_view input) {
  std::vector<std::pair<uint32_t, size_t>> out;
  EXPECT_FALSE(t.Walk<kReverse>(input, [&](uint32_t v, size_t len) {
    out.emplace_back(v, len);
    return false;
  }));
  return out;
}

using Hits = std::vector<std::pair<uint32_t, size_t>>;

TEST(ByteTrieTest, Empty) {
  ByteTrie t = ByteTrie::Build({});
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(All<false>(t, "abc"), Hits{});
}

TEST(ByteTrieTest, ExactThenPrefixesLongestFirst) {
  ByteTrie t = ByteTrie::Build({{"/a/b", 1, 11},
                                {"/a/", kNone, 12},
                                {"", kNone, 13},
                                {"/a/bc", 4, kNone},
                                {"/a", 5, kNone},
                                {"/x", kNone, 16}});
  EXPECT_EQ(All<false>(t, "/a/b"), (Hits{{1, 4}, {11, 4}, {12, 3}, {13, 0}}));
  EXPECT_EQ(All<false>(t, "/a/bcd"), (Hits{{11, 4}, {12, 3}, {13, 0}}));
  EXPECT_EQ(All<false>(t, "/a/bc"), (Hits{{4, 5}, {11, 4}, {12, 3}, {13, 0}}));
  EXPECT_EQ(All<false>(t, "/a"), (Hits{{5, 2}, {13, 0}}));
  EXPECT_EQ(All<false>(t, "/"), (Hits{{13, 0}}));
  EXPECT_EQ(All<false>(t, ""), (Hits{{13, 0}}));
  EXPECT_EQ(All<false>(t, "/xyz"), (Hits{{16, 2}, {13, 0}}));
  EXPECT_EQ(All<false>(t, "/y"), (Hits{{13, 0}}));
}

TEST(ByteTrieTest, InputEndingInsideAnEdge) {
  ByteTrie t = ByteTrie::Build({{"/abcdef", 1, 2}});
  EXPECT_EQ(All<false>(t, "/abc"), Hits{});
  EXPECT_EQ(All<false>(t, "/abcdeX"), Hits{});
  EXPECT_EQ(All<false>(t, "/abcdef/"), (Hits{{2, 7}}));
}

TEST(ByteTrieTest, StopsWhenVisitReturnsTrue) {
  ByteTrie t = ByteTrie::Build({{"ab", 1, 2}, {"a", kNone, 3}});
  std::vector<uint32_t> seen;
  EXPECT_TRUE(t.Walk<false>("ab", [&](uint32_t v, size_t) {
    seen.push_back(v);
    return v == 2;
  }));
  EXPECT_EQ(seen, (std::vector<uint32_t>{1, 2}));
}

TEST(ByteTrieTest, DuplicateKeysMerge) {
  ByteTrie t = ByteTrie::Build({{"k", 1, kNone}, {"k", kNone, 2}});
  EXPECT_EQ(All<false>(t, "k"), (Hits{{1, 1}, {2, 1}}));
}

TEST(ByteTrieTest, ReverseWalkMatchesSuffixes) {
  // Keys stored reversed: "moc.oof." is the suffix ".foo.com".
  ByteTrie t = ByteTrie::Build({{"moc.oof.", kNone, 1},
                                {"moc.oof.a", 2, kNone},
                                {"moc.", kNone, 3},
                                {"", kNone, 4},
                                {"moc.oof", 5, kNone}});
  EXPECT_EQ(All<true>(t, "a.foo.com"), (Hits{{2, 9}, {1, 8}, {3, 4}, {4, 0}}));
  EXPECT_EQ(All<true>(t, "b.a.foo.com"), (Hits{{1, 8}, {3, 4}, {4, 0}}));
  EXPECT_EQ(All<true>(t, "foo.com"), (Hits{{5, 7}, {3, 4}, {4, 0}}));
  EXPECT_EQ(All<true>(t, "foo.org"), (Hits{{4, 0}}));
}

TEST(ByteTrieTest, AllByteValues) {
  std::vector<ByteTrie::Entry> entries;
  for (int b = 0; b < 256; ++b) {
    entries.push_back(
        {std::string(1, static_cast<char>(b)) + "z", static_cast<uint32_t>(b), kNone});
  }
  ByteTrie t = ByteTrie::Build(std::move(entries));
  for (int b = 0; b < 256; ++b) {
    std::string key = std::string(1, static_cast<char>(b)) + "z";
    EXPECT_EQ(All<false>(t, key), (Hits{{static_cast<uint32_t>(b), 2}}));
  }
}

}  // namespace
}  // namespace turnpike::router
