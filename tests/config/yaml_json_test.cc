// YamlToJson / ReadJson: YAML values as the JSON APISIX's Lua side would see.
#include <gtest/gtest.h>

#include <cmath>

#include "config/yaml_util.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;
using Json = nlohmann::json;

Json Convert(const std::string& yaml) { return YamlToJson(testing::LoadYaml(yaml)); }

TEST(YamlToJsonTest, ScalarsKeepTheirYamlType) {
  Json j = Convert(R"(
int: 42
neg: -7
octal: 0755
hex: 0x1F
under: 1_000
big: 99999999999999999999
float: 1.5
exp: 1e3
yes_word: yes
off_word: off
t: true
f: False
null1: null
null2: ~
null3:
plain: hello
quoted_int: "42"
single_quoted_bool: 'true'
quoted_null: "null"
str_tag: !!str 7
ip: 10.0.0.1
time: 1:30
)");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["int"].is_number_integer());
  EXPECT_EQ(j["int"], 42);
  EXPECT_EQ(j["neg"], -7);
  EXPECT_EQ(j["octal"], 493);
  EXPECT_EQ(j["hex"], 31);
  EXPECT_EQ(j["under"], 1000);
  EXPECT_TRUE(j["big"].is_number_float());
  EXPECT_EQ(j["big"].get<double>(), 1e20);
  EXPECT_TRUE(j["float"].is_number_float());
  EXPECT_EQ(j["float"], 1.5);
  EXPECT_TRUE(j["exp"].is_number_float());
  EXPECT_EQ(j["exp"], 1000.0);
  EXPECT_EQ(j["yes_word"], true);
  EXPECT_EQ(j["off_word"], false);
  EXPECT_EQ(j["t"], true);
  EXPECT_EQ(j["f"], false);
  EXPECT_TRUE(j["null1"].is_null());
  EXPECT_TRUE(j["null2"].is_null());
  EXPECT_TRUE(j["null3"].is_null());
  EXPECT_EQ(j["plain"], "hello");
  EXPECT_EQ(j["quoted_int"], "42");
  EXPECT_EQ(j["single_quoted_bool"], "true");
  EXPECT_EQ(j["quoted_null"], "null");
  EXPECT_EQ(j["str_tag"], "7");
  EXPECT_EQ(j["ip"], "10.0.0.1");
  EXPECT_EQ(j["time"], 90);
}

TEST(YamlToJsonTest, CollectionsAndAliases) {
  Json j = Convert(R"(
list: [1, "a", [true, ~], {k: v}]
empty_map: {}
empty_list: []
base: &b {x: 1, y: 2}
copy: *b
"1": numeric key
? 2
: other key
)");
  EXPECT_EQ(j["list"], Json::parse(R"([1, "a", [true, null], {"k": "v"}])"));
  EXPECT_TRUE(j["empty_map"].is_object());
  EXPECT_TRUE(j["empty_list"].is_array());
  EXPECT_EQ(j["copy"], Json::parse(R"({"x": 1, "y": 2})"));
  EXPECT_EQ(j["1"], "numeric key");  // keys are the key's text
  EXPECT_EQ(j["2"], "other key");
  EXPECT_EQ(Convert("[1, 2]"), Json::parse("[1, 2]"));
  EXPECT_EQ(Convert("just text"), "just text");
  EXPECT_TRUE(Convert("").is_null());
  EXPECT_TRUE(YamlToJson(YamlNode()).is_null());
}

TEST(YamlToJsonTest, MergeKeysLikeLyaml) {
  Json j = Convert(R"(
defaults: &d {a: 1, b: 2}
more: &m {b: 20, c: 30}
one:
  b: 0
  <<: *d
two:
  <<: [*m, *d]
  c: 3
)");
  EXPECT_EQ(j["one"], Json::parse(R"({"a": 1, "b": 0})"));          // explicit key wins
  EXPECT_EQ(j["two"], Json::parse(R"({"a": 1, "b": 20, "c": 3})"));  // first merge wins
}

TEST(YamlToJsonTest, RepeatedKeyKeepsTheLastValue) {
  EXPECT_EQ(Convert("{a: 1, a: 2}"), Json::parse(R"({"a": 2})"));
}

TEST(YamlToJsonTest, UnconvertibleValuesAreDiscarded) {
  EXPECT_TRUE(Convert("{[a, b]: 1}").is_discarded());
  EXPECT_TRUE(Convert("&x [*x]").is_discarded());         // recursive alias
  EXPECT_TRUE(Convert("&x {a: *x}").is_discarded());
  EXPECT_TRUE(Convert("{<<: 5}").is_discarded());
  std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_TRUE(Convert(deep).is_discarded());
  std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_FALSE(Convert(ok).is_discarded());
  // Billion laughs: 10^7 values after alias expansion.
  std::string bomb = "a: &a [1,1,1,1,1,1,1,1,1,1]\n";
  for (char c = 'b'; c <= 'g'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ",*" + prev + ",*" + prev + ",*" +
            prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" +
            prev + "]\n";
  }
  EXPECT_TRUE(Convert(bomb).is_discarded());
}

TEST(YamlToJsonTest, InfinityAndNanAreNumbers) {
  Json j = Convert("[.inf, -.inf, .nan]");
  EXPECT_TRUE(std::isinf(j[0].get<double>()));
  EXPECT_LT(j[1].get<double>(), 0);
  EXPECT_TRUE(std::isnan(j[2].get<double>()));
}

// AppendYamlAsJson writes the text YamlToJson's tree dumps to, whatever the input (the tree
// is the oracle): scalars of every kind, escapes, aliases, merge keys, limits.
TEST(AppendYamlAsJsonTest, WritesWhatTheTreeDumps) {
  const char* cases[] = {
      "{int: 42, neg: -7, octal: 0755, hex: 0x1F, big: 99999999999999999999, float: 1.5}",
      "{exp: 1e3, yes_word: yes, f: False, n1: null, n2: ~, n3: , plain: hello}",
      "{quoted_int: \"42\", sq: 'true', str_tag: !!str 7, ip: 10.0.0.1, time: 1:30}",
      "{esc: \"a\\\"b\\\\c\\nd\\te\\u0001\\u001f\", utf8: \"h\\u00e9llo \\u2603\", slash: /a/b}",
      "[.inf, -.inf, .nan]",
      "list: [1, \"a\", [true, ~], {k: v}]\nempty_map: {}\nempty_list: []\n",
      "base: &b {x: 1, y: 2}\ncopy: *b\n\"1\": numeric key\n? 2\n: other key\n",
      "defaults: &d {a: 1, b: 2}\none:\n  b: 0\n  <<: *d\n",
      "{a: 1, a: 2}",
      "{[a, b]: 1}",
      "&x [*x]",
      "just text",
      "",
      "routes:\n  - id: 1\n    uri: /hello\n    upstream: {nodes: {\"127.0.0.1:80\": 1}}\n",
  };
  for (const char* yaml : cases) {
    YamlNode node = testing::LoadYaml(yaml);
    std::string text = "prefix:";  // appends, keeps what was there
    AppendYamlAsJson(node, &text);
    ASSERT_EQ(text.substr(0, 7), "prefix:") << yaml;
    Json tree = YamlToJson(node);
    Json want = tree.is_discarded() ? Json() : Json::parse(tree.dump());
    Json got = Json::parse(text.substr(7), nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(got.is_discarded()) << yaml << " -> " << text;
    EXPECT_EQ(got, want) << yaml << " -> " << text;
  }
  std::string compact;
  AppendYamlAsJson(testing::LoadYaml("{a: [1, {b: c}], s: \"x y\"}"), &compact);
  EXPECT_EQ(compact, R"({"a":[1,{"b":"c"}],"s":"x y"})");
}

TEST(ReadJsonTest, ReportsProblemsWithPositionsAndPaths) {
  YamlNode root = testing::LoadYaml(R"(conf:
  a: 1
  nested:
    list:
      - {x: 1, x: 2}
      - {[k]: v}
  <<: 7
)");
  Diagnostics d("t.yaml");
  std::vector<Field> fields = MapEntries(root, "p", d);
  EXPECT_EQ(ReadJson(fields[0], d), std::nullopt);
  EXPECT_EQ(Strings(d.errors()),
            (Lines{
                "t.yaml:5:16: p.conf.nested.list[0].x: duplicate key",
                "t.yaml:6:10: p.conf.nested.list[1]: map keys must be strings",
                "t.yaml:7:7: p.conf[\"<<\"]: a merge key (<<) needs a map or a list of maps",
            }));

  YamlNode cyclic = testing::LoadYaml("conf: &x {a: [*x]}\n");
  Diagnostics d2("t.yaml");
  std::vector<Field> f2 = MapEntries(cyclic, "", d2);
  EXPECT_EQ(ReadJson(f2[0], d2), std::nullopt);
  ASSERT_EQ(d2.errors().size(), 1u);
  EXPECT_EQ(d2.errors()[0].message, "nested more than 256 levels deep (a recursive alias?)");

  YamlNode fine = testing::LoadYaml("conf: {a: [1, {b: c}]}\n");
  Diagnostics d3("t.yaml");
  std::vector<Field> f3 = MapEntries(fine, "", d3);
  EXPECT_EQ(ReadJson(f3[0], d3), Json::parse(R"({"a": [1, {"b": "c"}]})"));
  EXPECT_TRUE(d3.errors().empty());
}

}  // namespace
}  // namespace turnpike::config
