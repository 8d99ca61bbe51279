#include "config/yaml_util.h"

#include <gtest/gtest.h>

#include "config_test_util.h"

namespace turnpike::config {
namespace {

TEST(ConfigErrorTest, ToStringFormats) {
  EXPECT_EQ(
      (ConfigError{{"conf/apisix.yaml", 12, 7}, "routes[1].upstream.nodes", "bad"}).ToString(),
      "conf/apisix.yaml:12:7: routes[1].upstream.nodes: bad");
  EXPECT_EQ((ConfigError{{"conf/apisix.yaml", 3, 1}, "", "oops"}).ToString(),
            "conf/apisix.yaml:3:1: oops");
  EXPECT_EQ((ConfigError{{"conf/apisix.yaml", 0, 0}, "", "missing"}).ToString(),
            "conf/apisix.yaml: missing");
}

TEST(YamlPathTest, ChildAndIndexPaths) {
  EXPECT_EQ(ChildPath("", "routes"), "routes");
  EXPECT_EQ(ChildPath(IndexPath("routes", 0), "uri"), "routes[0].uri");
  EXPECT_EQ(ChildPath("apisix", "node_listen"), "apisix.node_listen");
  EXPECT_EQ(ChildPath("u.nodes", "127.0.0.1:80"), "u.nodes[\"127.0.0.1:80\"]");
  EXPECT_EQ(ChildPath("p", "a\"b"), "p[\"a\\\"b\"]");
  EXPECT_EQ(ChildPath("plugins", "limit-count"), "plugins.limit-count");
}

TEST(ValueKindTest, QuotingDecidesTheType) {
  YamlNode n = testing::LoadYaml(
      "a: 1\nb: '1'\nc: true\nd: \"true\"\ne: 1.5\nf: -2e3\ng: ~\nh:\ni: abc\nj: [1]\n"
      "k: {x: 1}\nl: yes\nm: 99999999999999999999\nn: !!str 7\no: .5\np: 1.2.3\n");
  auto kind = [&](const char* key) { return KindName(KindOf(n[key])); };
  EXPECT_STREQ(kind("a"), "integer");
  EXPECT_STREQ(kind("b"), "string");
  EXPECT_STREQ(kind("c"), "boolean");
  EXPECT_STREQ(kind("d"), "string");
  EXPECT_STREQ(kind("e"), "number");
  EXPECT_STREQ(kind("f"), "number");
  EXPECT_STREQ(kind("g"), "null");
  EXPECT_STREQ(kind("h"), "null");
  EXPECT_STREQ(kind("i"), "string");
  EXPECT_STREQ(kind("j"), "list");
  EXPECT_STREQ(kind("k"), "map");
  EXPECT_STREQ(kind("l"), "boolean");
  EXPECT_STREQ(kind("m"), "number");  // too large for an integer
  EXPECT_STREQ(kind("n"), "string");
  EXPECT_STREQ(kind("o"), "number");
  EXPECT_STREQ(kind("p"), "string");
}

TEST(TypedReadTest, ReportsTypeAndRangeErrors) {
  YamlNode root = testing::LoadYaml("a: x\nb: 0\nc: 0\nd: 7\ne: on\n");
  Diagnostics d("t.yaml");
  std::vector<Field> f = MapEntries(root, "s", d);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(ReadInt(f[0], d, 0, 10), std::nullopt);
  EXPECT_EQ(ReadInt(f[1], d, 1, 10), std::nullopt);
  EXPECT_EQ(ReadNumber(f[2], d, 0, /*exclusive_min=*/true), std::nullopt);
  EXPECT_EQ(ReadNumber(f[3], d, 0, false), 7.0);
  EXPECT_EQ(ReadBool(f[4], d), true);
  EXPECT_EQ(ReadEnum(f[0], d, {"y", "z"}), std::nullopt);
  EXPECT_EQ(testing::Strings(d.errors()),
            (std::vector<std::string>{
                "t.yaml:1:4: s.a: wrong type: expected integer, got string",
                "t.yaml:2:4: s.b: must be between 1 and 10",
                "t.yaml:3:4: s.c: must be > 0",
                "t.yaml:1:4: s.a: invalid value \"x\": must be one of y, z",
            }));
}

TEST(TypedReadTest, PlainScalarsResolveAsLyaml) {
  YamlNode root = testing::LoadYaml("a: 0x10\nb: 1_000\nc: 010\nd: .inf\ne: '0x10'\nf: 1:30\n");
  Diagnostics d("t.yaml");
  std::vector<Field> f = MapEntries(root, "s", d);
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(ReadInt(f[0], d, 0, 100), 16);
  EXPECT_EQ(ReadInt(f[1], d, 0, 10000), 1000);
  EXPECT_EQ(ReadInt(f[2], d, 0, 100), 8);
  EXPECT_EQ(ReadNumber(f[3], d, 0, false), std::nullopt);
  EXPECT_EQ(ReadString(f[4], d), "0x10");
  EXPECT_EQ(ReadNumber(f[5], d, 0, false), 90.0);
  EXPECT_EQ(testing::Strings(d.errors()),
            (std::vector<std::string>{"t.yaml:4:4: s.d: number out of range"}));
}

TEST(MapEntriesTest, DuplicateKeysAreErrors) {
  YamlNode root = testing::LoadYaml("a: 1\nb: 2\na: 3\n");
  Diagnostics d("t.yaml");
  std::vector<Field> f = MapEntries(root, "", d);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_EQ(testing::Strings(d.errors()),
            (std::vector<std::string>{"t.yaml:3:1: a: duplicate key"}));
}

TEST(MapEntriesTest, NullValuesPointAtTheirKey) {
  YamlNode root = testing::LoadYaml("a:\nb: 1\n");
  Diagnostics d("t.yaml");
  std::vector<Field> f = MapEntries(root, "", d);
  ReadString(f[0], d);
  EXPECT_EQ(testing::Strings(d.errors()),
            (std::vector<std::string>{"t.yaml:1:1: a: wrong type: expected string, got null"}));
}

TEST(LoadDocumentTest, RejectsNonMapTopLevelAndBadYaml) {
  Diagnostics d("t.yaml");
  EXPECT_FALSE(LoadDocument("- a\n- b\n", d).has_value());
  EXPECT_TRUE(LoadDocument("", d).has_value());
  EXPECT_TRUE(LoadDocument("# nothing\n", d).has_value());
  EXPECT_FALSE(LoadDocument("a: [1, 2\nb: 3\n", d).has_value());
  EXPECT_FALSE(LoadDocument("a: 1\n---\nb: 2\n", d).has_value());
  EXPECT_TRUE(LoadDocument("---\na: 1\n---\n", d).has_value());
  EXPECT_EQ(testing::Strings(d.errors()),
            (std::vector<std::string>{
                "t.yaml:1:1: top level must be a map, got list",
                "t.yaml:2:2: invalid YAML: end of sequence flow not found",
                "t.yaml:3:1: multiple YAML documents in one file are not supported"}));
}

}  // namespace
}  // namespace turnpike::config
