// Hostile input (apisix.yaml, plugin configurations, apisix.json) must produce errors, never
// crashes, hangs or exceptions.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

#include "config/loader.h"
#include "config/yaml_tree.h"

// ASan (GCC defines __SANITIZE_ADDRESS__, clang has __has_feature) reserves terabytes of
// address space for its shadow memory, so an address-space cap cannot be used under it.
#if defined(__SANITIZE_ADDRESS__)
#define TURNPIKE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TURNPIKE_TEST_ASAN 1
#endif
#endif

namespace turnpike::config {
namespace {

TEST(RoutesConfigRobustnessTest, MalformedInputsAreReportedNotThrown) {
  const std::string inputs[] = {
      "routes: &x [*x]\n#END\n",
      "routes:\n  - &r {uri: /a, upstream: *r}\n#END\n",
      "routes: [*nowhere]\n#END\n",
      "? [a, b]\n: c\n#END\n",
      "routes:\n  - {? [a]: b, uri: /a, upstream_id: 1}\n#END\n",
      std::string(100000, '[') + "\n#END\n",
      std::string("\0\xff\xfe routes: \x01", 12) + "\n#END\n",
      "routes: !!binary aGVsbG8=\n#END\n",
      "%YAML 9.9\n---\nroutes: []\n#END\n",
      "routes: []\n---\nupstreams: []\n#END\n",
      "upstreams:\n  - nodes: {\"[\": 1, \"]:80\": 1, \"[::1]:\": 1, \":\": 1}\n#END\n",
  };
  for (const std::string& text : inputs) {
    LoadResult<RoutesConfig> r;
    ASSERT_NO_THROW(r = ParseRoutesConfig(text, "x.yaml")) << text.substr(0, 80);
    if (r.value) {
      EXPECT_TRUE(r.value->routes.empty()) << text.substr(0, 80);
    } else {
      EXPECT_FALSE(r.errors.empty()) << text.substr(0, 80);
    }
  }
}

// Hostile plugin configurations must produce errors, never crashes or exceptions.
TEST(PluginsRobustnessTest, MalformedConfigurationsAreReportedNotThrown) {
  std::string bomb = "a: &a [1,1,1,1,1,1,1,1,1,1]\n";
  for (char c = 'b'; c <= 'g'; ++c) {
    std::string ref = std::string("*") + static_cast<char>(c - 1);
    bomb += std::string(1, c) + ": &" + c + " [" + ref;
    for (int i = 0; i < 9; ++i) bomb += "," + ref;
    bomb += "]\n";
  }
  const std::string inputs[] = {
      "routes:\n  - &r {uri: /a, plugins: {p: *r}}\n#END\n",
      "routes:\n  - {uri: /a, plugins: &p {p: {q: *p}}}\n#END\n",
      "routes:\n  - {uri: /a, vars: &v [*v]}\n#END\n",
      "global_rules:\n  - {id: 1, plugins: {p: {<<: [1, 2]}}}\n#END\n",
      bomb + "routes:\n  - {uri: /a, plugins: {p: {v: *g}}}\n#END\n",  // 10^7 values
  };
  for (const std::string& text : inputs) {
    LoadResult<RoutesConfig> r;
    ASSERT_NO_THROW(r = ParseRoutesConfig(text, "x.yaml")) << text.substr(0, 80);
    ASSERT_TRUE(r.value.has_value()) << text.substr(0, 80);
    EXPECT_TRUE(r.value->routes.empty()) << text.substr(0, 80);
    EXPECT_TRUE(r.value->global_rules.empty()) << text.substr(0, 80);
    EXPECT_FALSE(r.errors.empty()) << text.substr(0, 80);
  }
}

// yaml-cpp 0.7 stops consuming tokens on this text and returns the same empty document on
// every HandleNextDocument() call; the loader collected them until memory ran out (found by
// tests/fuzz/yaml_config_fuzz). It must report an error instead. The parse runs in a child
// with its address space capped (not under ASan, whose shadow memory needs the room), so the
// old behaviour fails the test instead of the machine.
TEST(RoutesConfigRobustnessTest, YamlParserThatStopsMakingProgressIsAnError) {
  const std::string text =
      ",rang\x92\xa0\x96\xe9"
      "8[";
  auto parse = [&text] {
#if !defined(TURNPIKE_TEST_ASAN)
    rlimit limit{1u << 30, 1u << 30};
    setrlimit(RLIMIT_AS, &limit);
#endif
    std::string error;
    YamlMark mark;
    bool tree_failed = !YamlDocument::ParseAll(text, &error, &mark).has_value() &&
                       error == "the YAML parser stopped making progress" && mark.line == 0;
    LoadResult<RoutesConfig> r = ParseRoutesConfig(text + "\n#END\n", "x.yaml");
    bool reported = !r.value && r.errors.size() == 1 &&
                    r.errors[0].ToString() ==
                        "x.yaml:1:1: invalid YAML: the YAML parser stopped making progress";
    std::exit(tree_failed && reported ? 0 : 1);
  };
  EXPECT_EXIT(parse(), ::testing::ExitedWithCode(0), "");
}

TEST(JsonProviderRobustnessTest, MalformedInputsAreReportedNotThrown) {
  const std::string inputs[] = {
      std::string(100000, '[') + std::string(100000, ']'),
      "{\"routes\": " + std::string(5000, '[') + std::string(5000, ']') + "}",
      std::string("{\"a\": \"\0\"}", 10),
      "{\"a\": \"\\u0000\", \"routes\": [{\"uri\": \"/\\u0000\", \"upstream_id\": 1}]}",
      "{\"routes\": [{\"uri\": \"/a\", \"plugins\": {\"p\": {\"deep\": " + std::string(300, '[') +
          std::string(300, ']') + "}}}]}",
      "\xEF\xBB\xBF{\"routes\": []}",
      "{\"a\": 1e999999}",
      "{\"a\": \"\\\\ud83d\\\\ude00\"}",
  };
  for (const std::string& text : inputs) {
    LoadResult<RoutesConfig> r;
    ASSERT_NO_THROW(r = ParseRoutesConfigJson(text, "x.json")) << text.substr(0, 80);
    if (!r.value) {
      EXPECT_FALSE(r.errors.empty()) << text.substr(0, 80);
    }
  }
}

}  // namespace
}  // namespace turnpike::config
