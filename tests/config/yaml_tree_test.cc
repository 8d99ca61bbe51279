// YamlDocument: the event-built tree, and the split parse that must build the same tree as
// the whole-text parse (positions included) or decline.
#include "config/yaml_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace turnpike::config {
namespace {

// The tree as text: type, tag, position and content of every node, children indented.
void Dump(YamlNode n, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  YamlMark m = n.Mark();
  *out += std::to_string(m.line) + ":" + std::to_string(m.column) + " [" + n.Tag() + "] ";
  if (!n.IsDefined()) {
    *out += "undefined\n";
  } else if (n.IsNull()) {
    *out += "null\n";
  } else if (n.IsScalar()) {
    *out += "scalar " + n.Scalar() + "\n";
  } else if (n.IsSequence()) {
    *out += "seq " + std::to_string(n.size()) + "\n";
    for (size_t i = 0; i < n.size(); ++i) Dump(n.item(i), depth + 1, out);
  } else {
    *out += "map " + std::to_string(n.size()) + "\n";
    for (size_t i = 0; i < n.size(); ++i) {
      Dump(n.key(i), depth + 1, out);
      Dump(n.value(i), depth + 2, out);
    }
  }
}

std::string DumpOf(YamlNode n) {
  std::string out;
  Dump(n, 0, &out);
  return out;
}

// A large routes file with the constructs that could trip a cut: block scalars, comments at
// every indentation, flow collections, quoted text containing "- ", nested lists.
std::string BigRoutes(int n, const std::string& indent) {
  std::string s = "# header comment\nupstreams:\n  - id: u1\n    nodes: {\"127.0.0.1:80\": 1}\nroutes:\n";
  s += "\n# a comment before the first route\n";
  for (int i = 0; i < n; ++i) {
    std::string id = std::to_string(i);
    s += indent + "- id: r" + id + "\n";
    s += indent + "  uri: /api/v1/items" + id + "/*\n";
    if (i % 7 == 0) s += indent + "  # a comment inside an item\n";
    if (i % 5 == 0) s += indent + "  hosts: [a" + id + ".example.com, \"- b.example.com\"]\n";
    if (i % 11 == 0) {
      s += indent + "  desc: |\n" + indent + "    line one\n" + indent + "    - not an item\n";
      s += indent + "    # not a comment either\n";
    }
    if (i % 13 == 0) s += indent + "  methods:\n" + indent + "  - GET\n" + indent + "  - POST\n";
    if (i % 17 == 0) s += "# a comment at column 0 inside the list\n";
    s += indent + "  upstream_id: u1\n";
  }
  s += "global_rules: []\n#END\n";
  return s;
}

TEST(YamlTreeTest, KeepsTypesTagsPositionsAndOrder) {
  std::optional<YamlDocument> doc =
      YamlDocument::Parse("a: 1\nb: 'x'\nc:\nd: [1, {e: f}]\na: 2\n");
  ASSERT_TRUE(doc);
  YamlNode root = doc->root();
  ASSERT_TRUE(root.IsMap());
  EXPECT_EQ(root.size(), 5u);  // the duplicate key is kept; callers report it
  EXPECT_EQ(root["a"].Scalar(), "1");
  EXPECT_EQ(root["a"].Tag(), "?");
  EXPECT_EQ(root["b"].Tag(), "!");
  EXPECT_TRUE(root["c"].IsNull());
  EXPECT_TRUE(root["c"].IsDefined());
  EXPECT_FALSE(root["zz"].IsDefined());
  EXPECT_EQ(root["d"].item(1)["e"].Scalar(), "f");
  EXPECT_EQ(root["d"].Mark().line, 3);
  EXPECT_EQ(root["d"].Mark().column, 3);
  EXPECT_EQ(root.key(4).Mark().line, 4);
}

TEST(YamlTreeTest, AliasesShareTheAnchoredNode) {
  std::optional<YamlDocument> doc = YamlDocument::Parse("a: &x {k: v}\nb: *x\n");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->root()["b"]["k"].Scalar(), "v");
  EXPECT_EQ(doc->root()["b"].Mark().line, 0);  // the anchored node itself
}

TEST(YamlTreeTest, SyntaxErrorsCarryAPosition) {
  std::string error;
  YamlMark mark;
  EXPECT_FALSE(YamlDocument::Parse("a: [1, 2\nb: 3\n", &error, &mark));
  EXPECT_FALSE(error.empty());
  EXPECT_GE(mark.line, 1);
  EXPECT_FALSE(YamlDocument::Parse("a: *nope\n", &error, &mark));
}

TEST(YamlTreeTest, EmptyTextHasAnUndefinedRoot) {
  std::optional<YamlDocument> doc = YamlDocument::Parse("# nothing\n");
  ASSERT_TRUE(doc);
  EXPECT_FALSE(doc->root().IsDefined());
}

TEST(YamlSplitTest, BuildsTheSameTreeAsTheWholeParse) {
  for (const std::string& indent : {std::string("  "), std::string(""), std::string("    ")}) {
    std::string text = BigRoutes(6000, indent);
    ASSERT_GT(text.size(), 256u * 1024);
    std::optional<YamlDocument> whole = YamlDocument::Parse(text);
    ASSERT_TRUE(whole);
    for (int threads : {2, 3, 8}) {
      std::optional<YamlDocument> split = YamlDocument::ParseSplit(text, threads);
      ASSERT_TRUE(split) << "indent '" << indent << "' threads " << threads;
      EXPECT_EQ(split->root()["routes"].size(), 6000u);
      EXPECT_EQ(DumpOf(split->root()), DumpOf(whole->root()))
          << "indent '" << indent << "' threads " << threads;
    }
  }
}

TEST(YamlSplitTest, DeclinesWhatItCannotCutSafely) {
  std::string big = BigRoutes(6000, "  ");
  EXPECT_FALSE(YamlDocument::ParseSplit(big, 1));                       // one thread
  EXPECT_FALSE(YamlDocument::ParseSplit(BigRoutes(50, "  "), 4));       // small
  EXPECT_FALSE(YamlDocument::ParseSplit("x: &a 1\n" + big, 4));         // anchor
  EXPECT_FALSE(YamlDocument::ParseSplit("x: !!str 1\n" + big, 4));      // tag
  EXPECT_FALSE(YamlDocument::ParseSplit("%YAML 1.2\n---\n" + big, 4));  // directive
  EXPECT_FALSE(YamlDocument::ParseSplit(big + "---\nb: 1\n", 4));       // two documents
  // A syntax error inside a piece: the caller's whole-text parse reports it.
  std::string broken = big;
  broken.insert(broken.find("  - id: r3000\n"), "  - id: [unclosed\n");
  EXPECT_FALSE(YamlDocument::ParseSplit(broken, 4));
  // The key appears twice at the top: the whole parse decides what that means.
  EXPECT_FALSE(YamlDocument::ParseSplit(big + "routes: 1\n", 4));
}

TEST(YamlSplitTest, QuotedTextSpanningACutFallsBack) {
  // A double-quoted scalar whose continuation line looks like an item: the pieces do not
  // parse, so the split declines rather than building a different tree.
  std::string text = BigRoutes(3000, "  ");
  size_t at = text.find("  - id: r1500\n");
  text.insert(at, "  - desc: \"starts here\n");
  text.insert(text.find("  - id: r1500\n") + 14, "    ends here\"\n");
  std::optional<YamlDocument> whole = YamlDocument::Parse(text);
  std::optional<YamlDocument> split = YamlDocument::ParseSplit(text, 2);
  if (split) {
    ASSERT_TRUE(whole);
    EXPECT_EQ(DumpOf(split->root()), DumpOf(whole->root()));
  }
}

}  // namespace
}  // namespace turnpike::config
