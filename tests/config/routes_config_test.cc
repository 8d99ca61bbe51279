// apisix.yaml: file-level rules, collections, routes, ids.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;

LoadResult<RoutesConfig> Parse(const std::string& text) {
  return ParseRoutesConfig(text, "apisix.yaml");
}

TEST(RoutesConfigTest, LoadsRoutesAndUpstreams) {
  auto r = Parse(R"(routes:
  - id: r1
    name: hello
    uri: /hello
    hosts: [Foo.Example.com, "*.Bar.com"]
    methods: [GET, POST]
    priority: 10
    upstream_id: 1
  - uris: ["/a/*", /b]
    status: 0
    timeout: {connect: 1, send: 2.5, read: 3}
    upstream:
      nodes:
        "127.0.0.1:1980": 1
upstreams:
  - id: 1
    nodes:
      - {host: 10.0.0.1, port: 8080, weight: 2}
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  const RoutesConfig& c = *r.value;
  EXPECT_EQ(c.file, "apisix.yaml");
  ASSERT_EQ(c.routes.size(), 2u);
  const RouteSpec& r1 = c.routes[0];
  EXPECT_EQ(r1.id, "r1");
  EXPECT_EQ(r1.name, "hello");
  EXPECT_EQ(r1.uris, (Lines{"/hello"}));
  EXPECT_EQ(r1.hosts, (Lines{"foo.example.com", "*.bar.com"}));
  EXPECT_EQ(r1.methods, (Lines{"GET", "POST"}));
  EXPECT_EQ(r1.priority, 10);
  EXPECT_EQ(r1.status, 1);
  EXPECT_EQ(r1.upstream_id, "1");
  EXPECT_FALSE(r1.upstream.has_value());
  EXPECT_EQ(r1.loc.file, "apisix.yaml");
  EXPECT_EQ(r1.loc.line, 2);
  EXPECT_EQ(r1.loc.col, 5);

  const RouteSpec& r2 = c.routes[1];
  EXPECT_EQ(r2.id, "arr_2");
  EXPECT_EQ(r2.uris, (Lines{"/a/*", "/b"}));
  EXPECT_EQ(r2.status, 0);
  ASSERT_TRUE(r2.timeout.has_value());
  EXPECT_EQ(r2.timeout->connect, 1);
  EXPECT_EQ(r2.timeout->send, 2.5);
  EXPECT_EQ(r2.timeout->read, 3);
  ASSERT_TRUE(r2.upstream.has_value());
  EXPECT_EQ(r2.upstream->id, "");
  ASSERT_EQ(r2.upstream->nodes.size(), 1u);
  EXPECT_EQ(r2.upstream->nodes[0].host, "127.0.0.1");
  EXPECT_EQ(r2.upstream->nodes[0].port, 1980);
  EXPECT_EQ(r2.upstream_id, "");

  ASSERT_EQ(c.upstreams.size(), 1u);
  EXPECT_EQ(c.upstreams[0].id, "1");
  ASSERT_EQ(c.upstreams[0].nodes.size(), 1u);
  EXPECT_EQ(c.upstreams[0].nodes[0].weight, 2);
  EXPECT_EQ(c.upstreams[0].loc.line, 16);
}

// ------------------------------------------------------------------ #END marker

TEST(RoutesConfigTest, MissingEndFlagRejectsTheFile) {
  auto r = Parse("routes: []\n");
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(Strings(r.errors), (Lines{"apisix.yaml: missing valid end flag `#END`"}));
}

TEST(RoutesConfigTest, EndFlagMayBeFollowedByWhitespaceOnly) {
  EXPECT_TRUE(Parse("routes: []\n#END").value.has_value());
  EXPECT_TRUE(Parse("routes: []\n#END\n").value.has_value());
  EXPECT_TRUE(Parse("routes: []\n#END \t\r\n\n").value.has_value());
  EXPECT_TRUE(Parse("#END").value.has_value());
  EXPECT_TRUE(Parse("routes: []\n#END" + std::string(6, ' ')).value.has_value());   // 10 bytes
  EXPECT_FALSE(Parse("routes: []\n#END" + std::string(7, ' ')).value.has_value());  // 11
  EXPECT_FALSE(Parse("routes: []\n#END\n\n\n\n\n\n\n").value.has_value());
  EXPECT_FALSE(Parse("routes: []\n#ENDX\n").value.has_value());
  EXPECT_FALSE(Parse("routes: []\n#END\nx: 1\n").value.has_value());
  EXPECT_FALSE(Parse("routes: []\n# END\n").value.has_value());
  EXPECT_FALSE(Parse("").value.has_value());
}

TEST(RoutesConfigTest, OnlyEndFlagIsAnEmptyConfig) {
  auto r = Parse("# nothing yet\n#END\n");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_TRUE(r.value->upstreams.empty());
  EXPECT_TRUE(r.errors.empty());
}

// ------------------------------------------------------------------ file-level errors

TEST(RoutesConfigTest, InvalidYamlRejectsTheFile) {
  auto r = Parse("routes:\n  - uri: [/a\n    upstream_id: 1\n#END\n");
  EXPECT_FALSE(r.value.has_value());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].loc.line, 3);
  EXPECT_EQ(r.errors[0].ToString().rfind("apisix.yaml:3:", 0), 0u) << r.errors[0].ToString();
  EXPECT_NE(r.errors[0].message.find("invalid YAML: "), std::string::npos);
}

TEST(RoutesConfigTest, TopLevelMustBeAMap) {
  auto r = Parse("- uri: /a\n#END\n");
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(Strings(r.errors), (Lines{"apisix.yaml:1:1: top level must be a map, got list"}));
  EXPECT_FALSE(Parse("just text\n#END\n").value.has_value());
}

TEST(RoutesConfigTest, OtherTopLevelKeysAreWarnings) {
  auto r = Parse(R"(consumers: []
consumer_groups: []
plugin_metadata: []
ssls: []
stream_routes: []
protos: []
secrets: []
routs: []
routes:
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(Strings(r.warnings), (Lines{
                                     "apisix.yaml:1:1: consumers: not supported yet, ignored",
                                     "apisix.yaml:2:1: consumer_groups: not supported yet, ignored",
                                     "apisix.yaml:4:1: ssls: not supported yet, ignored",
                                     "apisix.yaml:5:1: stream_routes: not supported yet, ignored",
                                     "apisix.yaml:6:1: protos: not supported yet, ignored",
                                     "apisix.yaml:7:1: secrets: not supported yet, ignored",
                                     "apisix.yaml:8:1: routs: unknown key, ignored",
                                 }));
}

// A collection that is not a list is a whole-file error, like a missing `#END`: applying the
// file as "no routes" would take every route down on a typo.
TEST(RoutesConfigTest, CollectionThatIsNotAListRejectsTheFile) {
  auto r = Parse("routes: {uri: /x}\nupstreams:\n  - nodes: {}\n#END\n");
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(Strings(r.errors),
            (Lines{"apisix.yaml:1:9: routes: wrong type: expected list, got map; the file is "
                   "rejected"}));
  EXPECT_EQ(Strings(Parse("routes: 5\n#END\n").errors),
            (Lines{"apisix.yaml:1:9: routes: wrong type: expected list, got integer; the file "
                   "is rejected"}));
  EXPECT_EQ(Strings(Parse("routes: \"abc\"\n#END\n").errors),
            (Lines{"apisix.yaml:1:9: routes: wrong type: expected list, got string; the file "
                   "is rejected"}));
}

TEST(RoutesConfigTest, EveryCollectionMustBeAList) {
  for (const char* key :
       {"routes", "upstreams", "services", "plugin_configs", "global_rules", "plugins", "consumers",
        "consumer_groups", "plugin_metadata", "ssls", "stream_routes", "protos", "secrets"}) {
    for (const char* value : {"{id: 1}", "5", "abc", "true", "\"\""}) {
      SCOPED_TRACE(std::string(key) + ": " + value);
      std::string valid = std::string(key) == "routes" ? "upstreams:\n  - nodes: {}\n"
                                                       : "routes:\n  - {uri: /a, upstream_id: 1}\n";
      auto r = Parse(valid + key + ": " + value + "\n#END\n");
      EXPECT_FALSE(r.value.has_value());
      ASSERT_EQ(r.errors.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
      EXPECT_EQ(r.errors[0].loc.line, 3);
      EXPECT_EQ(r.errors[0].path, key);
      EXPECT_NE(r.errors[0].message.find("expected list"), std::string::npos);
    }
  }
}

TEST(RoutesConfigTest, EveryMisshapenCollectionIsReported) {
  auto r = Parse("routes: 1\nservices: []\nupstreams: {a: 1}\n#END\n");
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:1:9: routes: wrong type: expected list, got integer; the file is "
                "rejected",
                "apisix.yaml:3:12: upstreams: wrong type: expected list, got map; the file is "
                "rejected",
            }));
}

// `routes:` with every item commented out is null: no routes, as when the key is absent.
// `{}` is empty too: APISIX cannot tell it from `[]` (both are an empty Lua table).
TEST(RoutesConfigTest, NullOrEmptyCollectionIsEmpty) {
  for (const char* value : {"", " ~", " null", " []", " {}"}) {
    SCOPED_TRACE(std::string("routes:") + value);
    auto r = Parse(std::string("routes:") + value +
                   "\n#  - {uri: /a, upstream_id: 1}\nupstreams:\n  - nodes: {}\n#END\n");
    ASSERT_TRUE(r.value.has_value()) << ::testing::PrintToString(Strings(r.errors));
    EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
    EXPECT_TRUE(r.value->routes.empty());
    EXPECT_EQ(r.value->upstreams.size(), 1u);
  }
  auto plugins = Parse("plugins: {}\n#END\n");
  ASSERT_TRUE(plugins.value.has_value());
  ASSERT_TRUE(plugins.value->enabled_plugins.has_value());
  EXPECT_TRUE(plugins.value->enabled_plugins->empty());
}

TEST(RoutesConfigTest, UnknownKeyOfAnyShapeIsOnlyAWarning) {
  auto r = Parse("routs: {uri: /x}\nroutes: []\n#END\n");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(Strings(r.warnings), (Lines{"apisix.yaml:1:1: routs: unknown key, ignored"}));
}

TEST(RoutesConfigTest, EnvSubstitution) {
  testing::ScopedEnv uri("TP_CFG_TEST_URI", "/from-env");
  testing::ScopedEnv unset("TP_CFG_TEST_MISSING", std::nullopt);
  auto r = Parse(R"(routes:
  - uri: ${{TP_CFG_TEST_URI}}
    upstream:
      nodes:
        "${{TP_CFG_TEST_MISSING:=127.0.0.1}}:${{TP_CFG_TEST_MISSING:=81}}": 1
#END
)");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].uris, (Lines{"/from-env"}));
  EXPECT_EQ(r.value->routes[0].upstream->nodes[0].port, 81);

  auto missing = Parse("routes:\n  - uri: ${{TP_CFG_TEST_MISSING}}\n#END\n");
  EXPECT_FALSE(missing.value.has_value());
  EXPECT_EQ(Strings(missing.errors),
            (Lines{"apisix.yaml:2:10: environment variable `TP_CFG_TEST_MISSING` is not set and "
                   "has no default (use ${{TP_CFG_TEST_MISSING:=value}})"}));
}

// ------------------------------------------------------------------ per-item validation

TEST(RoutesConfigTest, BadItemIsSkippedAndTheRestApplies) {
  auto r = Parse(R"(routes:
  - id: good
    uri: /a
    upstream_id: u1
  - id: bad
    uri: /b
    upstream:
      nodes:
        - host: 10.0.0.1
          port: 70000
          weight: 1
  - id: also-good
    uri: /c
    upstream_id: u1
#END
)");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->routes.size(), 2u);
  EXPECT_EQ(r.value->routes[0].id, "good");
  EXPECT_EQ(r.value->routes[1].id, "also-good");
  EXPECT_EQ(Strings(r.errors),
            (Lines{"apisix.yaml:10:17: routes[1].upstream.nodes[0].port: must be between 1 and "
                   "65535"}));
}

TEST(RoutesConfigTest, ItemThatIsNotAMapIsSkipped) {
  auto r = Parse("routes:\n  - /a\n  - {uri: /b, upstream_id: 1}\n#END\n");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].id, "arr_2");
  EXPECT_EQ(Strings(r.errors),
            (Lines{"apisix.yaml:2:5: routes[0]: wrong type: expected map, got string"}));
}

TEST(RoutesConfigTest, WarningsOfSkippedItemsAreDropped) {
  auto r = Parse(R"(routes:
  - uri: /a
    plugins: {}
    bogus: 1
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(Strings(r.errors), (Lines{"apisix.yaml:4:5: routes[0].bogus: unknown field"}));
}

TEST(RoutesConfigTest, DuplicateKeyInItemIsAnError) {
  auto r = Parse("routes:\n  - uri: /a\n    uri: /b\n    upstream_id: 1\n#END\n");
  EXPECT_TRUE(r.value->routes.empty());
  EXPECT_EQ(Strings(r.errors), (Lines{"apisix.yaml:3:5: routes[0].uri: duplicate key"}));
}

// ------------------------------------------------------------------ ids

TEST(RoutesConfigTest, IdsAreNormalizedToStrings) {
  auto r = Parse(R"(routes:
  - {id: 7, uri: /a, upstream_id: 12}
  - {id: "007", uri: /b, upstream_id: "u.1-x_y"}
  - {uri: /c, upstream_id: 1}
upstreams:
  - {nodes: {}}
  - {id: 12, nodes: []}
#END
)");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.errors.empty()) << ::testing::PrintToString(Strings(r.errors));
  ASSERT_EQ(r.value->routes.size(), 3u);
  EXPECT_EQ(r.value->routes[0].id, "7");
  EXPECT_EQ(r.value->routes[0].upstream_id, "12");
  EXPECT_EQ(r.value->routes[1].id, "007");
  EXPECT_EQ(r.value->routes[1].upstream_id, "u.1-x_y");
  EXPECT_EQ(r.value->routes[2].id, "arr_3");
  ASSERT_EQ(r.value->upstreams.size(), 2u);
  EXPECT_EQ(r.value->upstreams[0].id, "arr_1");
  EXPECT_EQ(r.value->upstreams[1].id, "12");
}

TEST(RoutesConfigTest, InvalidIdsSkipTheItem) {
  const std::string long_id(65, 'a');
  auto r = Parse(
      "routes:\n  - {id: 0, uri: /a, upstream_id: 1}\n  - {id: \"a b\", uri: /a, "
      "upstream_id: 1}\n  - {id: " +
      long_id + ", uri: /a, upstream_id: 1}\n" + "  - {id: " + std::string(64, 'b') +
      ", uri: /a, upstream_id: [1]}\n#END\n");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_TRUE(r.value->routes.empty());
  const std::string msg =
      "invalid id: must be a string of 1-64 characters from [a-zA-Z0-9-_.] or an integer >= 1";
  EXPECT_EQ(Strings(r.errors), (Lines{
                                   "apisix.yaml:2:10: routes[0].id: must be >= 1",
                                   "apisix.yaml:3:10: routes[1].id: " + msg,
                                   "apisix.yaml:4:10: routes[2].id: " + msg,
                                   "apisix.yaml:5:98: routes[3].upstream_id: " + msg,
                               }));
}

TEST(RoutesConfigTest, DuplicateIdSkipsTheLaterItem) {
  auto r = Parse(R"(routes:
  - id: 1
    uri: /first
    upstream_id: 1
  - id: "1"
    uri: /second
    upstream_id: 1
  - uri: /third
    upstream_id: 1
  - id: arr_3
    uri: /fourth
    upstream_id: 1
upstreams:
  - {id: u, nodes: {}}
  - {id: u, nodes: {}}
#END
)");
  ASSERT_TRUE(r.value.has_value());
  ASSERT_EQ(r.value->routes.size(), 2u);
  EXPECT_EQ(r.value->routes[0].uris, (Lines{"/first"}));
  EXPECT_EQ(r.value->routes[1].uris, (Lines{"/third"}));
  EXPECT_EQ(r.value->upstreams.size(), 1u);
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:5:5: routes[1].id: duplicate id \"1\" (first defined at line 2), "
                "item skipped",
                "apisix.yaml:10:5: routes[3].id: duplicate id \"arr_3\" (first defined at line "
                "8), item skipped",
                "apisix.yaml:15:5: upstreams[1].id: duplicate id \"u\" (first defined at line "
                "14), item skipped",
            }));
}

// ------------------------------------------------------------------ route schema

// Parses a single route given as flow/block YAML lines under `routes:`.
LoadResult<RoutesConfig> ParseRoute(const std::string& route_yaml) {
  return Parse("routes:\n" + route_yaml + "#END\n");
}

TEST(RouteSchemaTest, UriAndUrisRules) {
  auto both = ParseRoute("  - {uri: /a, uris: [/b], upstream_id: 1}\n");
  EXPECT_EQ(Strings(both.errors),
            (Lines{"apisix.yaml:2:15: routes[0].uris: only one of \"uri\" and \"uris\" is "
                   "allowed"}));
  auto none = ParseRoute("  - {upstream_id: 1}\n");
  EXPECT_EQ(Strings(none.errors),
            (Lines{"apisix.yaml:2:5: routes[0]: missing required field \"uri\" or \"uris\""}));
  auto empty = ParseRoute("  - {uris: [], upstream_id: 1}\n");
  EXPECT_EQ(Strings(empty.errors), (Lines{"apisix.yaml:2:12: routes[0].uris: must not be empty"}));
  auto dup = ParseRoute("  - {uris: [/a, /a], upstream_id: 1}\n");
  EXPECT_EQ(Strings(dup.errors),
            (Lines{"apisix.yaml:2:17: routes[0].uris[1]: duplicate item \"/a\""}));
  auto blank = ParseRoute("  - {uri: \"\", upstream_id: 1}\n");
  EXPECT_EQ(Strings(blank.errors),
            (Lines{"apisix.yaml:2:11: routes[0].uri: must be 1-4096 characters"}));
  auto too_long = ParseRoute("  - {uri: /" + std::string(4096, 'a') + ", upstream_id: 1}\n");
  EXPECT_EQ(too_long.errors.size(), 1u);
  auto max_len = ParseRoute("  - {uri: /" + std::string(4095, 'a') + ", upstream_id: 1}\n");
  EXPECT_TRUE(max_len.errors.empty());
  auto type = ParseRoute("  - {uri: 5, upstream_id: 1}\n");
  EXPECT_EQ(Strings(type.errors),
            (Lines{"apisix.yaml:2:11: routes[0].uri: wrong type: expected string, got integer"}));
}

TEST(RouteSchemaTest, RequiresSomethingToRouteTo) {
  auto r = ParseRoute("  - uri: /a\n    name: x\n    plugin_config_id: 1\n");
  EXPECT_EQ(Strings(r.errors),
            (Lines{"apisix.yaml:2:5: routes[0]: one of \"plugins\", \"upstream\", "
                   "\"upstream_id\", \"service_id\" or \"script\" is required"}));
  // Any one of them is enough (APISIX's anyOf), even an empty plugins object.
  auto ok = ParseRoute(
      "  - {uri: /a, plugins: {}}\n"
      "  - {uri: /b, service_id: s}\n"
      "  - {uri: /c, upstream_id: u}\n"
      "  - {uri: /d, upstream: {nodes: {}}}\n");
  EXPECT_EQ(ok.value->routes.size(), 4u);
  EXPECT_TRUE(ok.errors.empty()) << ::testing::PrintToString(Strings(ok.errors));
  EXPECT_TRUE(ok.warnings.empty()) << ::testing::PrintToString(Strings(ok.warnings));
}

TEST(RouteSchemaTest, HostRules) {
  auto ok = ParseRoute(
      "  - {uri: /, host: API.Example.COM, upstream_id: 1}\n"
      "  - {uri: /, hosts: [\"*\", \"[::1]\", a_b-c.d:8080], upstream_id: 1}\n");
  ASSERT_EQ(ok.value->routes.size(), 2u);
  EXPECT_EQ(ok.value->routes[0].hosts, (Lines{"api.example.com"}));
  EXPECT_EQ(ok.value->routes[1].hosts, (Lines{"*", "[::1]", "a_b-c.d:8080"}));

  auto bad = ParseRoute(
      "  - {uri: /, host: \"a b\", upstream_id: 1}\n"
      "  - {uri: /, hosts: [\"a.*\"], upstream_id: 1}\n"
      "  - {uri: /, host: a, hosts: [b], upstream_id: 1}\n"
      "  - {uri: /, hosts: [A.com, a.com], upstream_id: 1}\n"
      "  - {uri: /, host: \"**.a\", upstream_id: 1}\n");
  EXPECT_TRUE(bad.value->routes.empty());
  const std::string pattern = ": must be `*` or match ^\\*?[0-9a-zA-Z-._\\[\\]:]+$";
  EXPECT_EQ(Strings(bad.errors),
            (Lines{
                "apisix.yaml:2:20: routes[0].host: invalid host \"a b\"" + pattern,
                "apisix.yaml:3:22: routes[1].hosts[0]: invalid host \"a.*\"" + pattern,
                "apisix.yaml:4:23: routes[2].hosts: only one of \"host\" and \"hosts\" is allowed",
                "apisix.yaml:5:29: routes[3].hosts[1]: duplicate item \"a.com\"",
                "apisix.yaml:6:20: routes[4].host: invalid host \"**.a\"" + pattern,
            }));
}

TEST(RouteSchemaTest, Methods) {
  auto ok = ParseRoute(
      "  - {uri: /, methods: [], upstream_id: 1}\n"
      "  - {uri: /, methods: [GET, PURGE, OPTIONS], upstream_id: 1}\n");
  ASSERT_EQ(ok.value->routes.size(), 2u);
  EXPECT_TRUE(ok.value->routes[0].methods.empty());
  EXPECT_EQ(ok.value->routes[1].methods, (Lines{"GET", "PURGE", "OPTIONS"}));

  auto bad = ParseRoute(
      "  - {uri: /, methods: [get], upstream_id: 1}\n"
      "  - {uri: /, methods: [GET, GET], upstream_id: 1}\n"
      "  - {uri: /, methods: GET, upstream_id: 1}\n");
  EXPECT_TRUE(bad.value->routes.empty());
  EXPECT_EQ(Strings(bad.errors),
            (Lines{
                "apisix.yaml:2:24: routes[0].methods[0]: invalid value \"get\": must be one of "
                "GET, POST, PUT, DELETE, PATCH, HEAD, OPTIONS, CONNECT, TRACE, PURGE",
                "apisix.yaml:3:29: routes[1].methods[1]: duplicate item \"GET\"",
                "apisix.yaml:4:23: routes[2].methods: wrong type: expected list, got string",
            }));
}

TEST(RouteSchemaTest, PriorityStatusAndTimeout) {
  auto bad = ParseRoute(R"(  - uri: /a
    upstream_id: 1
    priority: high
    status: 2
    timeout: {connect: 0, send: -1, extra: 1}
)");
  EXPECT_TRUE(bad.value->routes.empty());
  EXPECT_EQ(Strings(bad.errors),
            (Lines{
                "apisix.yaml:4:15: routes[0].priority: wrong type: expected integer, got string",
                "apisix.yaml:5:13: routes[0].status: must be between 0 and 1",
                "apisix.yaml:6:24: routes[0].timeout.connect: must be > 0",
                "apisix.yaml:6:33: routes[0].timeout.send: must be > 0",
                "apisix.yaml:6:14: routes[0].timeout: missing required field \"read\"",
            }));
  EXPECT_TRUE(bad.warnings.empty());

  auto neg = ParseRoute("  - {uri: /, priority: -5, upstream_id: 1}\n");
  EXPECT_EQ(neg.value->routes[0].priority, -5);
}

TEST(RouteSchemaTest, AcceptedButUnsupportedFieldsWarn) {
  auto r = ParseRoute(R"(  - id: r1
    uri: /a
    desc: demo
    labels: {env: prod}
    filter_func: "function(vars) return true end"
    script_id: s1
    create_time: 1700000000
    update_time: 1700000001
    upstream_id: 1
  - uri: /b
    script: "local _M = {} return _M"
)");
  ASSERT_EQ(r.value->routes.size(), 2u) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(Strings(r.warnings),
            (Lines{
                "apisix.yaml:6:5: routes[0].filter_func: not supported yet, ignored",
                "apisix.yaml:7:5: routes[0].script_id: not supported yet, ignored",
                "apisix.yaml:12:5: routes[1].script: not supported yet, ignored",
            }));
}

TEST(RouteSchemaTest, FieldTypesAreChecked) {
  auto r = ParseRoute(R"(  - uri: /a
    upstream_id: 1
    plugins: [limit-count]
    enable_websocket: "yes"
    remote_addr: 1.2.3.4
    remote_addrs: [1.2.3.4]
    labels: {env: ""}
    service_id: 0
    plugin_config_id: "a b"
    filter_func: 5
)");
  EXPECT_TRUE(r.value->routes.empty());
  const std::string id_msg =
      "invalid id: must be a string of 1-64 characters from [a-zA-Z0-9-_.] or an integer >= 1";
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:4:14: routes[0].plugins: wrong type: expected map, got list",
                "apisix.yaml:5:23: routes[0].enable_websocket: wrong type: expected boolean, got "
                "string",
                "apisix.yaml:8:19: routes[0].labels.env: must be 1-256 characters",
                "apisix.yaml:9:17: routes[0].service_id: must be >= 1",
                "apisix.yaml:10:23: routes[0].plugin_config_id: " + id_msg,
                "apisix.yaml:11:18: routes[0].filter_func: wrong type: expected string, got "
                "integer",
                "apisix.yaml:7:5: routes[0].remote_addrs: only one of \"remote_addr\" and "
                "\"remote_addrs\" is allowed",
            }));
}

TEST(RouteSchemaTest, MissingUpstreamReferenceStillLoads) {
  auto r = ParseRoute("  - {uri: /a, upstream_id: nowhere}\n");
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].upstream_id, "nowhere");
  EXPECT_TRUE(r.errors.empty());
}

}  // namespace
}  // namespace turnpike::config
