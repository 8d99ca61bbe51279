// apisix.yaml upstream objects: nodes in both forms, IPv6, supported and ignored fields.
#include "config/upstream_spec.h"

#include <gtest/gtest.h>

#include "config/loader.h"
#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;
using Lines = std::vector<std::string>;

// Parses `upstreams:` with the given item lines.
LoadResult<RoutesConfig> ParseUpstreams(const std::string& items) {
  return ParseRoutesConfig("upstreams:\n" + items + "#END\n", "apisix.yaml");
}

struct HostPort {
  std::string host;
  int port;
  bool operator==(const HostPort&) const = default;
};

std::vector<HostPort> Nodes(const UpstreamSpec& u) {
  std::vector<HostPort> out;
  for (const NodeSpec& n : u.nodes) out.push_back({n.host, n.port});
  return out;
}

TEST(SplitHostPortTest, Forms) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("10.0.0.1:8080", 80, &host, &port));
  EXPECT_EQ(host, "10.0.0.1");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(SplitHostPort("example.com", 443, &host, &port));
  EXPECT_EQ(host, "example.com");
  EXPECT_EQ(port, 443);
  ASSERT_TRUE(SplitHostPort("[::1]:9000", 80, &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 9000);
  ASSERT_TRUE(SplitHostPort("[fe80::1]", 80, &host, &port));
  EXPECT_EQ(host, "fe80::1");
  EXPECT_EQ(port, 80);
  ASSERT_TRUE(SplitHostPort("2001:db8::5", 80, &host, &port));
  EXPECT_EQ(host, "2001:db8::5");
  EXPECT_EQ(port, 80);

  EXPECT_FALSE(SplitHostPort("", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("a:0", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("a:65536", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("a:", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort(":80", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("a:b", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("[::1", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("[::1]80", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("[]:80", 80, &host, &port));
  EXPECT_FALSE(SplitHostPort("a b:80", 80, &host, &port));
}

TEST(UpstreamSchemaTest, MapFormNodes) {
  auto r = ParseUpstreams(R"(  - id: u1
    nodes:
      "10.0.0.1:8080": 3
      "[::1]:9000": 1
      "[fe80::2]": 1
      backend.local: 0
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  const UpstreamSpec& u = r.value->upstreams[0];
  EXPECT_EQ(Nodes(u),
            (std::vector<HostPort>{
                {"10.0.0.1", 8080}, {"::1", 9000}, {"fe80::2", 80}, {"backend.local", 80}}));
  EXPECT_EQ(u.nodes[0].weight, 3);
  EXPECT_EQ(u.nodes[3].weight, 0);
  EXPECT_EQ(u.nodes[0].priority, 0);
  EXPECT_EQ(u.type, "roundrobin");
  EXPECT_EQ(u.scheme, "http");
  EXPECT_EQ(u.pass_host, PassHost::kPass);
  EXPECT_FALSE(u.retries.has_value());
  EXPECT_FALSE(u.timeout.has_value());
  EXPECT_FALSE(u.keepalive_pool.has_value());
}

TEST(UpstreamSchemaTest, ListFormNodes) {
  auto r = ParseUpstreams(R"(  - nodes:
      - {host: 10.0.0.1, port: 8080, weight: 1}
      - {host: "[::1]", port: 81, weight: 2, priority: -1}
      - {host: "::2", weight: 1, metadata: {zone: a}}
      - {host: svc.local, port: 82, weight: 1, extra: x}
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  const UpstreamSpec& u = r.value->upstreams[0];
  EXPECT_EQ(Nodes(u), (std::vector<HostPort>{
                          {"10.0.0.1", 8080}, {"::1", 81}, {"::2", 80}, {"svc.local", 82}}));
  EXPECT_EQ(u.nodes[1].weight, 2);
  EXPECT_EQ(u.nodes[1].priority, -1);
  EXPECT_EQ(Strings(r.warnings),
            (Lines{"apisix.yaml:6:48: upstreams[0].nodes[3].extra: unknown key, ignored"}));
}

TEST(UpstreamSchemaTest, EmptyNodesAreAllowed) {
  auto r = ParseUpstreams("  - {id: a, nodes: {}}\n  - {id: b, nodes: []}\n");
  ASSERT_EQ(r.value->upstreams.size(), 2u);
  EXPECT_TRUE(r.value->upstreams[0].nodes.empty());
  EXPECT_TRUE(r.errors.empty());
}

TEST(UpstreamSchemaTest, BadNodes) {
  auto r = ParseUpstreams(R"(  - nodes: {"10.0.0.1:0": 1}
  - nodes: {"10.0.0.1": -1}
  - nodes: [{host: 10.0.0.1, port: 80}]
  - nodes: [{port: 80, weight: 1}]
  - nodes: [{host: "a b", weight: 1}]
  - nodes: "10.0.0.1:80"
  - nodes: {"10.0.0.1": "1"}
  - {}
)");
  EXPECT_TRUE(r.value->upstreams.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:2:13: upstreams[0].nodes[\"10.0.0.1:0\"]: invalid node address "
                "\"10.0.0.1:0\": expected host, host:port or [ipv6]:port",
                "apisix.yaml:3:25: upstreams[1].nodes[\"10.0.0.1\"]: must be between 0 and "
                "2147483647",
                "apisix.yaml:4:13: upstreams[2].nodes[0]: missing required field \"weight\"",
                "apisix.yaml:5:13: upstreams[3].nodes[0]: missing required field \"host\"",
                "apisix.yaml:6:20: upstreams[4].nodes[0].host: invalid node host \"a b\"",
                "apisix.yaml:7:12: upstreams[5].nodes: wrong type: expected map or list, got "
                "string",
                "apisix.yaml:8:25: upstreams[6].nodes[\"10.0.0.1\"]: wrong type: expected "
                "integer, got string",
                "apisix.yaml:9:5: upstreams[7]: missing required field \"nodes\"",
            }));
}

TEST(UpstreamSchemaTest, SupportedFields) {
  auto r = ParseUpstreams(R"(  - id: u1
    name: backend
    desc: the backend
    labels: {team: a}
    type: roundrobin
    scheme: http
    retries: 0
    retry_timeout: 1.5
    timeout: {connect: 0.5, send: 2, read: 3}
    pass_host: rewrite
    upstream_host: internal.example.com
    keepalive_pool: {size: 8, idle_timeout: 0, requests: 50}
    create_time: 1
    update_time: 2
    nodes: {"10.0.0.1:80": 1}
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty());
  const UpstreamSpec& u = r.value->upstreams[0];
  EXPECT_EQ(u.retries, 0);
  EXPECT_EQ(u.retry_timeout, 1.5);
  ASSERT_TRUE(u.timeout.has_value());
  EXPECT_EQ(u.timeout->connect, 0.5);
  EXPECT_EQ(u.pass_host, PassHost::kRewrite);
  EXPECT_EQ(u.upstream_host, "internal.example.com");
  ASSERT_TRUE(u.keepalive_pool.has_value());
  EXPECT_EQ(u.keepalive_pool->size, 8);
  EXPECT_EQ(u.keepalive_pool->idle_timeout, 0);
  EXPECT_EQ(u.keepalive_pool->requests, 50);
  EXPECT_EQ(u.loc.line, 2);
  EXPECT_EQ(u.loc.col, 5);

  auto partial_pool =
      ParseUpstreams("  - {nodes: {}, keepalive_pool: {size: 2}, pass_host: node}\n");
  const UpstreamSpec& p = partial_pool.value->upstreams.at(0);
  EXPECT_EQ(p.keepalive_pool->size, 2);
  EXPECT_EQ(p.keepalive_pool->idle_timeout, 60);
  EXPECT_EQ(p.keepalive_pool->requests, 1000);
  EXPECT_EQ(p.pass_host, PassHost::kNode);
}

TEST(UpstreamSchemaTest, InvalidFields) {
  auto r = ParseUpstreams(R"(  - nodes: {}
    type: random
    retries: -1
    retry_timeout: -1
    pass_host: rewrite
    keepalive_pool: {size: 0}
    scheme: https
    bogus: 1
)");
  EXPECT_TRUE(r.value->upstreams.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:3:11: upstreams[0].type: invalid value \"random\": must be one of "
                "roundrobin, chash, ewma, least_conn",
                "apisix.yaml:4:14: upstreams[0].retries: must be between 0 and 2147483647",
                "apisix.yaml:5:20: upstreams[0].retry_timeout: must be >= 0",
                "apisix.yaml:7:28: upstreams[0].keepalive_pool.size: must be between 1 and "
                "2147483647",
                "apisix.yaml:8:13: upstreams[0].scheme: scheme \"https\" is not supported yet "
                "(only http)",
                "apisix.yaml:9:5: upstreams[0].bogus: unknown field",
                "apisix.yaml:6:16: upstreams[0].pass_host: pass_host is rewrite but "
                "upstream_host is missing or empty",
            }));
}

TEST(UpstreamSchemaTest, UnimplementedFeaturesWarn) {
  auto r = ParseUpstreams(R"(  - nodes: {"10.0.0.1:80": 1}
    type: chash
    hash_on: header
    key: x-user
    tls: {client_cert_id: 1}
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_EQ(r.value->upstreams[0].type, "chash");
  EXPECT_EQ(Strings(r.warnings),
            (Lines{
                "apisix.yaml:6:5: upstreams[0].tls: not supported yet, ignored",
            }));
}

TEST(UpstreamChecksTest, DefaultsAsApisix) {
  auto r = ParseUpstreams(R"(  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {http_path: /health}}
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  const std::optional<HealthChecksSpec>& c = r.value->upstreams[0].checks;
  ASSERT_TRUE(c.has_value());
  const ActiveCheckSpec& a = c->active;
  EXPECT_EQ(a.type, "http");
  EXPECT_EQ(a.timeout, 1);
  EXPECT_EQ(a.concurrency, 10);
  EXPECT_EQ(a.http_path, "/health");
  EXPECT_EQ(a.http_method, "GET");
  EXPECT_EQ(a.host, "");
  EXPECT_EQ(a.port, 0);
  EXPECT_EQ(a.healthy_interval, 1);
  EXPECT_EQ(a.healthy_statuses, (std::vector<int>{200, 302}));
  EXPECT_EQ(a.healthy_successes, 2);
  EXPECT_EQ(a.unhealthy_interval, 1);
  EXPECT_EQ(a.unhealthy_statuses, (std::vector<int>{429, 404, 500, 501, 502, 503, 504, 505}));
  EXPECT_EQ(a.unhealthy_http_failures, 5);
  EXPECT_EQ(a.unhealthy_tcp_failures, 2);
  EXPECT_EQ(a.unhealthy_timeouts, 3);
  EXPECT_FALSE(c->passive.has_value());
}

TEST(UpstreamChecksTest, EveryField) {
  auto r = ParseUpstreams(R"(  - nodes: {"10.0.0.1:80": 1}
    checks:
      active:
        type: tcp
        timeout: 0.5
        concurrency: 3
        host: health.example.com
        port: 8081
        http_method: HEAD
        http_path: /ping?x=1
        http_req_body: hi
        https_verify_certificate: false
        req_headers: ["User-Agent: probe", "X-A:  b c "]
        healthy: {interval: 2, http_statuses: [200, 204], successes: 3}
        unhealthy: {interval: 4, http_statuses: [500], http_failures: 6, tcp_failures: 7,
                    timeouts: 8}
      passive:
        type: tcp
        healthy: {http_statuses: [201], successes: 0}
        unhealthy: {http_statuses: [502], http_failures: 0, tcp_failures: 9, timeouts: 10}
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  const HealthChecksSpec& c = *r.value->upstreams[0].checks;
  const ActiveCheckSpec& a = c.active;
  EXPECT_EQ(a.type, "tcp");
  EXPECT_EQ(a.timeout, 0.5);
  EXPECT_EQ(a.concurrency, 3);
  EXPECT_EQ(a.host, "health.example.com");
  EXPECT_EQ(a.port, 8081);
  EXPECT_EQ(a.http_method, "HEAD");
  EXPECT_EQ(a.http_path, "/ping?x=1");
  EXPECT_EQ(a.http_req_body, "hi");
  EXPECT_FALSE(a.https_verify_certificate);
  using Header = std::pair<std::string, std::string>;
  EXPECT_EQ(a.req_headers, (std::vector<Header>{{"User-Agent", "probe"}, {"X-A", "b c"}}));
  EXPECT_EQ(a.healthy_interval, 2);
  EXPECT_EQ(a.healthy_statuses, (std::vector<int>{200, 204}));
  EXPECT_EQ(a.healthy_successes, 3);
  EXPECT_EQ(a.unhealthy_interval, 4);
  EXPECT_EQ(a.unhealthy_statuses, (std::vector<int>{500}));
  EXPECT_EQ(a.unhealthy_http_failures, 6);
  EXPECT_EQ(a.unhealthy_tcp_failures, 7);
  EXPECT_EQ(a.unhealthy_timeouts, 8);
  ASSERT_TRUE(c.passive.has_value());
  EXPECT_EQ(c.passive->type, "tcp");
  EXPECT_EQ(c.passive->healthy_statuses, (std::vector<int>{201}));
  EXPECT_EQ(c.passive->healthy_successes, 0);
  EXPECT_EQ(c.passive->unhealthy_statuses, (std::vector<int>{502}));
  EXPECT_EQ(c.passive->unhealthy_http_failures, 0);
  EXPECT_EQ(c.passive->unhealthy_tcp_failures, 9);
  EXPECT_EQ(c.passive->unhealthy_timeouts, 10);

  // Passive defaults (lua-resty-healthcheck's, as APISIX fills them).
  auto d = ParseUpstreams(R"(  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {}, passive: {}}
)");
  ASSERT_EQ(d.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(d.errors));
  const PassiveCheckSpec& p = *d.value->upstreams[0].checks->passive;
  EXPECT_EQ(p.type, "http");
  EXPECT_EQ(p.healthy_statuses.size(), 19u);
  EXPECT_EQ(p.healthy_successes, 5);
  EXPECT_EQ(p.unhealthy_statuses, (std::vector<int>{429, 500, 503}));
  EXPECT_EQ(p.unhealthy_http_failures, 5);
  EXPECT_EQ(p.unhealthy_tcp_failures, 2);
  EXPECT_EQ(p.unhealthy_timeouts, 7);
}

TEST(UpstreamChecksTest, ErrorsNameTheField) {
  auto r = ParseUpstreams(R"(  - nodes: {"10.0.0.1:80": 1}
    checks: {passive: {}}
  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {type: https}}
  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {healthy: {interval: 0, successes: 255, http_statuses: [200, 200]}}}
  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {unhealthy: {http_statuses: [], tcp_failures: 0}, port: 0}}
  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {timeout: 0, req_headers: ["nocolon"], http_path: "x"}, other: 1}
  - nodes: {"10.0.0.1:80": 1}
    checks: {active: {}, passive: {unhealthy: {timeouts: -1, http_statuses: [600]}}}
)");
  EXPECT_TRUE(r.value->upstreams.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:3:13: upstreams[0].checks: missing required field "
                "\"active\"",
                "apisix.yaml:5:29: upstreams[1].checks.active.type: type \"https\" "
                "is not "
                "supported yet (Turnpike has no TLS to upstream nodes): use http or "
                "tcp",
                "apisix.yaml:7:43: upstreams[2].checks.active.healthy.interval: must "
                "be between 1 "
                "and 31536000",
                "apisix.yaml:7:57: upstreams[2].checks.active.healthy.successes: "
                "must be between 1 "
                "and 254",
                "apisix.yaml:7:83: "
                "upstreams[2].checks.active.healthy.http_statuses[1]: duplicate "
                "item 200",
                "apisix.yaml:9:50: "
                "upstreams[3].checks.active.unhealthy.http_statuses: must not be "
                "empty",
                "apisix.yaml:9:68: "
                "upstreams[3].checks.active.unhealthy.tcp_failures: must be "
                "between 1 and 254",
                "apisix.yaml:9:78: upstreams[3].checks.active.port: must be between "
                "1 and 65535",
                "apisix.yaml:11:32: upstreams[4].checks.active.timeout: must be > 0",
                "apisix.yaml:11:49: upstreams[4].checks.active.req_headers[0]: "
                "invalid header "
                "\"nocolon\": expected \"Name: value\"",
                "apisix.yaml:11:72: upstreams[4].checks.active.http_path: invalid "
                "path \"x\": "
                "must start with / (no spaces)",
                "apisix.yaml:11:78: upstreams[4].checks.other: unknown field",
                "apisix.yaml:13:58: upstreams[5].checks.passive.unhealthy.timeouts: "
                "must be "
                "between 0 and 254",
                "apisix.yaml:13:78: "
                "upstreams[5].checks.passive.unhealthy.http_statuses[0]: must "
                "be between 200 and 599",
            }));
}

TEST(UpstreamSchemaTest, DiscoveryUpstreams) {
  auto r = ParseUpstreams(R"(  - id: d
    discovery_type: nacos
    service_name: users
    discovery_args: {namespace_id: ns, group_name: g}
    type: roundrobin
)");
  ASSERT_EQ(r.value->upstreams.size(), 1u) << ::testing::PrintToString(Strings(r.errors));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  const UpstreamSpec& u = r.value->upstreams[0];
  EXPECT_EQ(u.discovery_type, "nacos");
  EXPECT_EQ(u.service_name, "users");
  EXPECT_EQ(u.discovery_args,
            (std::map<std::string, std::string>{{"group_name", "g"}, {"namespace_id", "ns"}}));
  EXPECT_TRUE(u.nodes.empty());
  EXPECT_EQ(u.discovery_path, "upstreams[0].discovery_type");
  EXPECT_EQ(u.discovery_loc.line, 3);
}

TEST(UpstreamSchemaTest, DiscoveryRulesNameTheField) {
  // APISIX: oneOf {nodes} | {service_name + discovery_type}; service_name 1..256 characters;
  // discovery_args has namespace_id and group_name.
  auto r = ParseUpstreams(R"(  - {discovery_type: dns}
  - {service_name: svc}
  - {discovery_type: dns, service_name: svc, nodes: {"10.0.0.1:80": 1}}
  - {discovery_type: dns, service_name: ""}
  - {discovery_type: "", service_name: svc}
  - {discovery_type: dns, service_name: svc, discovery_args: {cluster: x}}
  - {discovery_type: dns, service_name: 7}
)");
  EXPECT_TRUE(r.value->upstreams.empty());
  EXPECT_EQ(Strings(r.errors),
            (Lines{
                "apisix.yaml:2:5: upstreams[0]: missing required field \"service_name\" (with "
                "discovery_type)",
                "apisix.yaml:3:5: upstreams[1]: missing required field \"discovery_type\" (with "
                "service_name)",
                "apisix.yaml:4:6: upstreams[2].discovery_type: not allowed together with \"nodes\"",
                "apisix.yaml:5:41: upstreams[3].service_name: length must be 1 to 256",
                "apisix.yaml:6:22: upstreams[4].discovery_type: must not be empty",
                "apisix.yaml:7:63: upstreams[5].discovery_args.cluster: unknown field",
                "apisix.yaml:8:41: upstreams[6].service_name: wrong type: expected string, got "
                "integer",
            }));
}

TEST(UpstreamSchemaTest, InlineUpstreamErrorsSkipTheRoute) {
  auto r = ParseRoutesConfig(R"(routes:
  - uri: /a
    upstream:
      id: inline
      scheme: grpc
      nodes: {"10.0.0.1:80": 1}
  - uri: /b
    upstream:
      type: ewma
      nodes: {"10.0.0.1:80": 1}
#END
)",
                             "apisix.yaml");
  ASSERT_EQ(r.value->routes.size(), 1u);
  EXPECT_EQ(r.value->routes[0].uris, (Lines{"/b"}));
  EXPECT_EQ(r.value->routes[0].upstream->id, "");
  EXPECT_EQ(Strings(r.errors),
            (Lines{"apisix.yaml:5:15: routes[0].upstream.scheme: scheme \"grpc\" is not "
                   "supported yet (only http)"}));
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(Strings(r.warnings));
  EXPECT_EQ(r.value->routes[0].upstream->type, "ewma");
}

}  // namespace
}  // namespace turnpike::config
