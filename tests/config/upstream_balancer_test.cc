// apisix.yaml upstream balancer fields: `type`, and for chash `hash_on` and `key`, validated as
// APISIX's upstream schema and check_upstream_conf do (reference §3.1): a key is required
// unless hash_on is consumer, and must suit hash_on; other types ignore both.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/upstream_spec.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;

LoadResult<RoutesConfig> Parse(const std::string& item) {
  return ParseRoutesConfig("upstreams:\n  - " + item + "\n#END\n", "apisix.yaml");
}

TEST(UpstreamBalancerTest, TypesAreKept) {
  for (const char* type : {"roundrobin", "chash", "ewma", "least_conn"}) {
    std::string item = std::string("{nodes: {\"10.0.0.1:80\": 1}, type: ") + type;
    if (std::string(type) == "chash") item += ", key: remote_addr";
    auto r = Parse(item + "}");
    ASSERT_EQ(r.value->upstreams.size(), 1u)
        << type << ": " << ::testing::PrintToString(Strings(r.errors));
    EXPECT_EQ(r.value->upstreams[0].type, type);
    EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  }
  auto absent = Parse("{nodes: {}}");
  EXPECT_EQ(absent.value->upstreams.at(0).type, "roundrobin");
  EXPECT_EQ(absent.value->upstreams.at(0).hash_on, "vars") << "APISIX's schema default";
}

TEST(UpstreamBalancerTest, ChashKeysThatSuitHashOn) {
  struct Case {
    const char* hash_on;
    const char* key;
  };
  for (const Case& c :
       {Case{"vars", "remote_addr"}, Case{"vars", "uri"}, Case{"vars", "request_uri"},
        Case{"vars", "hostname"}, Case{"vars", "mqtt_client_id"}, Case{"vars", "arg_user-id_2"},
        Case{"vars", "arg_a^b"},  // APISIX's [a-zA-z] spans ^
        Case{"header", "X-User_Id"}, Case{"cookie", "session"},
        Case{"vars_combinations", "$http_a-$arg_b and text"}, Case{"consumer", "anything"}}) {
    auto r = Parse(std::string("{nodes: {}, type: chash, hash_on: ") + c.hash_on + ", key: \"" +
                   c.key + "\"}");
    ASSERT_EQ(r.value->upstreams.size(), 1u)
        << c.hash_on << " " << c.key << ": " << ::testing::PrintToString(Strings(r.errors));
    EXPECT_EQ(r.value->upstreams[0].hash_on, c.hash_on);
    EXPECT_EQ(r.value->upstreams[0].key, c.key);
  }
  auto consumer = Parse("{nodes: {}, type: chash, hash_on: consumer}");
  EXPECT_EQ(consumer.value->upstreams.size(), 1u) << "consumer needs no key";
}

TEST(UpstreamBalancerTest, ChashKeyErrorsNameTheField) {
  auto missing = Parse("{nodes: {}, type: chash}");
  EXPECT_TRUE(missing.value->upstreams.empty());
  EXPECT_EQ(Strings(missing.errors),
            (Lines{"apisix.yaml:2:23: upstreams[0].key: missing key: type chash with hash_on "
                   "vars needs a key"}));

  auto bad_var = Parse("{nodes: {}, type: chash, key: http_x_user}");
  EXPECT_TRUE(bad_var.value->upstreams.empty());
  EXPECT_EQ(Strings(bad_var.errors),
            (Lines{"apisix.yaml:2:35: upstreams[0].key: invalid key \"http_x_user\" for hash_on "
                   "vars: must be one of uri, server_name, server_addr, request_uri, "
                   "remote_port, remote_addr, query_string, host, hostname, mqtt_client_id, or "
                   "arg_<name>"}));

  for (const char* key : {"arg_", "arg_a b", "arg_a.b", "args"}) {
    auto r = Parse(std::string("{nodes: {}, type: chash, key: \"") + key + "\"}");
    EXPECT_TRUE(r.value->upstreams.empty()) << key;
  }

  auto bad_header = Parse("{nodes: {}, type: chash, hash_on: header, key: \"x user\"}");
  EXPECT_TRUE(bad_header.value->upstreams.empty());
  EXPECT_EQ(Strings(bad_header.errors),
            (Lines{"apisix.yaml:2:52: upstreams[0].key: invalid key \"x user\" for hash_on "
                   "header: must match ^[a-zA-Z0-9-_]+$"}));
  auto bad_cookie = Parse("{nodes: {}, type: chash, hash_on: cookie, key: \"a=b\"}");
  EXPECT_EQ(Strings(bad_cookie.errors),
            (Lines{"apisix.yaml:2:52: upstreams[0].key: invalid key \"a=b\" for hash_on "
                   "cookie: must match ^[a-zA-Z0-9-_]+$"}));

  auto bad_hash_on = Parse("{nodes: {}, type: chash, hash_on: ip, key: remote_addr}");
  EXPECT_EQ(Strings(bad_hash_on.errors),
            (Lines{"apisix.yaml:2:39: upstreams[0].hash_on: invalid value \"ip\": must be one "
                   "of vars, header, cookie, consumer, vars_combinations"}));
  auto key_type = Parse("{nodes: {}, type: chash, key: [a]}");
  EXPECT_EQ(key_type.errors.size(), 1u) << "key must be a string";
}

TEST(UpstreamBalancerTest, OtherTypesIgnoreTheKey) {
  // APISIX checks the key only for chash.
  auto r = Parse("{nodes: {}, type: roundrobin, hash_on: header, key: \"not a header\"}");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  auto least = Parse("{nodes: {}, type: least_conn}");
  EXPECT_EQ(least.value->upstreams.size(), 1u);
}

TEST(UpstreamBalancerTest, InlineUpstreamsAreCheckedToo) {
  auto r = ParseRoutesConfig(R"(routes:
  - uri: /a
    upstream: {nodes: {"10.0.0.1:80": 1}, type: chash, hash_on: cookie}
  - uri: /b
    upstream: {nodes: {"10.0.0.1:80": 1}, type: chash, hash_on: cookie, key: sid}
#END
)",
                             "apisix.yaml");
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].uris, (Lines{"/b"}));
  EXPECT_EQ(r.value->routes[0].upstream->key, "sid");
  EXPECT_EQ(Strings(r.errors),
            (Lines{"apisix.yaml:3:49: routes[0].upstream.key: missing key: type chash with "
                   "hash_on cookie needs a key"}));
}

}  // namespace
}  // namespace turnpike::config
