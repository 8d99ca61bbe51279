// The nacos provider's config rules (APISIX's schema for discovery.nacos) and the Nacos v1 wire
// pieces: request targets, the signature, login and instance-list answers, the hosts-text scan.
#include "discovery/nacos_api.h"

#include <gtest/gtest.h>

#include "discovery/nacos_config.h"

namespace turnpike::discovery {
namespace {

std::string ConfigError(const char* json) {
  StatusOr<NacosProviderConfig> c = ParseNacosProviderConfig(nlohmann::json::parse(json));
  return c.ok() ? "" : c.status().message();
}

TEST(NacosConfigTest, DefaultsAsApisix) {
  StatusOr<NacosProviderConfig> c =
      ParseNacosProviderConfig(nlohmann::json::parse(R"({"host": ["http://127.0.0.1:8848"]})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const NacosProviderConfig& v = c.value();
  ASSERT_EQ(v.hosts.size(), 1u);
  EXPECT_EQ(v.hosts[0].host, "127.0.0.1");
  EXPECT_EQ(v.hosts[0].port, 8848);
  EXPECT_FALSE(v.hosts[0].has_credentials());
  EXPECT_EQ(v.prefix, "/nacos/v1/");
  EXPECT_EQ(v.fetch_interval_ms, 30000u);
  EXPECT_EQ(v.weight, 100);
  EXPECT_DOUBLE_EQ(v.connect_timeout, 2);
  EXPECT_DOUBLE_EQ(v.send_timeout, 2);
  EXPECT_DOUBLE_EQ(v.read_timeout, 5);
}

TEST(NacosConfigTest, EveryField) {
  StatusOr<NacosProviderConfig> c = ParseNacosProviderConfig(nlohmann::json::parse(R"({
    "host": ["http://nacos:p@ss:w@nacos.example:80", "http://10.0.0.1"],
    "prefix": "/x/v1", "fetch_interval": 1, "weight": 7,
    "timeout": {"connect": 100, "read": 300},
    "access_key": "ak", "secret_key": "sk"})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const NacosProviderConfig& v = c.value();
  // user:pass split at the first ':', the host after the last '@'.
  EXPECT_EQ(v.hosts[0].username, "nacos");
  EXPECT_EQ(v.hosts[0].password, "p@ss:w");
  EXPECT_EQ(v.hosts[0].host, "nacos.example");
  EXPECT_EQ(v.hosts[0].url, "http://nacos.example:80");
  EXPECT_EQ(v.hosts[1].port, 80);
  EXPECT_EQ(v.prefix, "/x/v1/");
  EXPECT_EQ(v.fetch_interval_ms, 1000u);
  EXPECT_EQ(v.weight, 7);
  EXPECT_DOUBLE_EQ(v.connect_timeout, 0.1);
  EXPECT_DOUBLE_EQ(v.send_timeout, 2);
  EXPECT_DOUBLE_EQ(v.read_timeout, 0.3);
  EXPECT_EQ(v.access_key, "ak");
  EXPECT_EQ(v.secret_key, "sk");
}

TEST(NacosConfigTest, ErrorsNameTheField) {
  EXPECT_EQ(ConfigError(R"({})"), "host: is required");
  EXPECT_EQ(ConfigError(R"({"host": []})"), "host: must be a non-empty list");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a:1", "ftp://b"]})"),
            "host[1]: \"ftp://b\" is not http://[user:pass@]host[:port]");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a b"]})"),
            "host[0]: \"http://a b\" is not http://[user:pass@]host[:port]");
  EXPECT_EQ(ConfigError(R"({"host": ["https://a:1"]})"),
            "host[0]: \"https://a:1\": https is not supported (Turnpike has no TLS client yet)");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a:70000"]})"),
            "host[0]: \"http://a:70000\": the port must be 1..65535");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a"], "fetch_interval": 0})"),
            "fetch_interval: must be an integer >= 1 (seconds)");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a"], "fetch_interval": 1.5})"),
            "fetch_interval: must be an integer >= 1 (seconds)");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a"], "weight": 0})"),
            "weight: must be an integer >= 1");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a"], "timeout": {"read": 0}})"),
            "timeout.read: must be an integer >= 1 (milliseconds)");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a"], "prefix": "/a b/"})"),
            "prefix: must be 1 to 100 characters of [/a-zA-Z0-9-_.]");
  EXPECT_EQ(ConfigError(R"({"host": ["http://a"], "servers": []})"), "unknown field \"servers\"");
  EXPECT_NE(ConfigError(R"([{"id": "a", "hosts": ["http://a"]}])").find("not supported"),
            std::string::npos);
}

TEST(NacosApiTest, Targets) {
  EXPECT_EQ(NacosLoginTarget("/nacos/v1/", "na cos", "p&w"),
            "/nacos/v1/auth/login?username=na%20cos&password=p%26w");
  NacosListQuery q;
  q.service_name = "web/x";
  q.namespace_id = "public";
  q.group_name = "DEFAULT_GROUP";
  EXPECT_EQ(NacosListTarget("/nacos/v1/", q),
            "/nacos/v1/ns/instance/list?healthyOnly=true&serviceName=web%2Fx"
            "&namespaceId=public&groupName=DEFAULT_GROUP");
  q.access_token = "t0k";
  q.access_key = "ak";
  q.secret_key = "key";
  q.now_ms = 1700000000123;
  std::string data = "1700000000123@@DEFAULT_GROUP@@web/x";
  EXPECT_EQ(NacosListTarget("/nacos/v1/", q),
            "/nacos/v1/ns/instance/list?healthyOnly=true&serviceName=web%2Fx&accessToken=t0k"
            "&namespaceId=public&groupName=DEFAULT_GROUP&ak=ak&data=" +
                NacosEncode(data) + "&signature=" + NacosEncode(NacosSignature("key", data)));
}

TEST(NacosApiTest, SignatureIsBase64HmacSha1) {
  // RFC 2104 style vector: HMAC-SHA1("key", "The quick brown fox jumps over the lazy dog").
  EXPECT_EQ(NacosSignature("key", "The quick brown fox jumps over the lazy dog"),
            "3nybhbi3iqa8ino29wqQcBydtNk=");
}

TEST(NacosApiTest, LoginAnswers) {
  std::string token;
  uint64_t ttl = 1;
  ASSERT_TRUE(ParseNacosLogin(R"({"accessToken":"abc","tokenTtl":18000,"globalAdmin":true})",
                              &token, &ttl));
  EXPECT_EQ(token, "abc");
  EXPECT_EQ(ttl, 18000u);
  ASSERT_TRUE(ParseNacosLogin(R"({"accessToken":"abc"})", &token, &ttl));
  EXPECT_EQ(ttl, 0u);
  EXPECT_FALSE(ParseNacosLogin(R"({"accessToken":""})", &token, &ttl));
  EXPECT_FALSE(ParseNacosLogin(R"({"tokenTtl":5})", &token, &ttl));
  EXPECT_FALSE(ParseNacosLogin("unknown user!", &token, &ttl));
}

TEST(NacosApiTest, FindTopLevelMemberSkipsStringsAndNesting) {
  std::string_view body =
      R"({"name":"G@@s","x":{"hosts":[9]},"s":"\"hosts\":[8]", "hosts" : [{"ip":"a]"},{"m":[1,{}]}] ,"t":1})";
  std::optional<std::string_view> hosts = FindTopLevelMember(body, "hosts");
  ASSERT_TRUE(hosts.has_value());
  EXPECT_EQ(*hosts, R"([{"ip":"a]"},{"m":[1,{}]}])");
  EXPECT_EQ(FindTopLevelMember(body, "t").value_or(""), "1");
  EXPECT_FALSE(FindTopLevelMember(body, "nope").has_value());
  EXPECT_FALSE(FindTopLevelMember("[1]", "hosts").has_value());
  EXPECT_FALSE(FindTopLevelMember(R"({"hosts":[1,2)", "hosts").has_value());
}

TEST(NacosApiTest, InstancesBecomeNodesAsApisixMakesThem) {
  DiscoveredNodes nodes;
  std::string error;
  ASSERT_TRUE(ParseNacosInstances(R"({"hosts":[
      {"ip":"10.0.0.1","port":8080,"weight":1.0,"healthy":true,"enabled":true},
      {"ip":"10.0.0.2","port":8081},
      {"ip":"10.0.0.3","port":8082,"weight":0.5},
      {"ip":"10.0.0.4","port":70000,"weight":3},
      {"port":1,"weight":2},
      {"ip":"nacos.test","weight":0},
      {"ip":"10.0.0.5","port":-1,"weight":18446744073709551615},
      {"ip":"10.0.0.6","port":80.0,"weight":null}]})",
                                  100, &nodes, &error))
      << error;
  EXPECT_EQ(nodes, (DiscoveredNodes{{"10.0.0.1", 8080, 1, 0},
                                    {"10.0.0.2", 8081, 100, 0},
                                    {"10.0.0.3", 8082, -1, 0},
                                    {"10.0.0.4", -1, 3, 0},
                                    {"", 1, 2, 0},
                                    {"nacos.test", 0, 0, 0},
                                    {"10.0.0.5", -1, -1, 0},
                                    {"10.0.0.6", 80, 100, 0}}));
  ASSERT_TRUE(ParseNacosInstances(R"({"hosts":[]})", 100, &nodes, &error));
  EXPECT_TRUE(nodes.empty());
  ASSERT_TRUE(ParseNacosInstances(R"({"name":"x"})", 100, &nodes, &error));
  EXPECT_TRUE(nodes.empty());
  EXPECT_FALSE(ParseNacosInstances("not json", 100, &nodes, &error));
  EXPECT_EQ(error, "the answer is not JSON");
  EXPECT_FALSE(ParseNacosInstances("[]", 100, &nodes, &error));
  EXPECT_FALSE(ParseNacosInstances(R"({"hosts":[1]})", 100, &nodes, &error));
}

}  // namespace
}  // namespace turnpike::discovery
