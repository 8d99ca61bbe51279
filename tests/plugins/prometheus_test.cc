// prometheus (reference §4.3): config errors in APISIX's words, and what a log hook records:
// label values, buckets, disabled_labels, prefer_name, extra_labels, one count per request,
// and the series bound.

#include "plugins/prometheus/prometheus.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/fake_plugin_context.h"
#include "support/fake_factory_context.h"

namespace turnpike::plugins::prometheus {
namespace {

using nlohmann::json;
using turnpike::testing::FakeFactoryContext;

// The fake context plus what the proxy reports in the log phase.
class Context : public plugins::testing::FakePluginContext {
 public:
  MatchedRoute matched_route() const override { return route; }
  bool response_from_upstream() const override { return from_upstream; }
  RequestTiming timing() const override { return time; }
  RequestSizes sizes() const override { return size; }
  MatchedRoute route;
  bool from_upstream = true;
  RequestTiming time{0, 12, 10};
  RequestSizes size{0, 0};
};

std::string Error(const json& conf, const json& metadata = json::object()) {
  StatusOr<Config> c = ParseConfig(conf, metadata);
  return c.ok() ? "ok" : c.status().message();
}
std::string AttrError(const json& attr) {
  StatusOr<Attr> a = ParseAttr(attr);
  return a.ok() ? "ok" : a.status().message();
}

TEST(PrometheusConfigTest, ErrorsReadLikeApisix) {
  EXPECT_EQ(Error({{"prefer_name", "yes"}}),
            "property \"prefer_name\" validation failed: wrong type: expected boolean, got string");
  EXPECT_EQ(Error(json::object(), {{"disabled_labels", {{"http_status", {"code"}}}}}),
            "plugin_metadata: property \"disabled_labels.http_status\" validation failed: label "
            "\"code\" cannot be disabled");
  EXPECT_EQ(Error(json::object(), {{"disabled_labels", {{"nope", json::array()}}}}),
            "plugin_metadata: property \"disabled_labels\" validation failed: additional "
            "properties forbidden, found nope");
  EXPECT_EQ(AttrError({{"export_addr", {{"port", 70000}}}}),
            "plugin_attr.prometheus: property \"export_addr\" validation failed: property "
            "\"port\" validation failed: expected 70000 to be at most 65535");
  EXPECT_EQ(AttrError({{"default_buckets", {5, 1}}}),
            "plugin_attr.prometheus: property \"default_buckets\" validation failed: buckets "
            "must be finite and increasing");
  EXPECT_EQ(AttrError({{"metrics", {{"http_status", {{"extra_labels", {{{"a", "$nope"}}}}}}}}}),
            "plugin_attr.prometheus: property \"metrics.http_status.extra_labels\" validation "
            "failed: failed to validate item 1: unknown variable 'nope'")
      << "the message names the variable";
  EXPECT_EQ(AttrError({{"metrics", {{"bandwidth", {{"extra_labels", {{{"node", "$host"}}}}}}}}}),
            "plugin_attr.prometheus: property \"metrics.bandwidth.extra_labels\" validation "
            "failed: label \"node\" is a built-in label");
  EXPECT_EQ(AttrError({{"export_uri", "metrics"}}),
            "plugin_attr.prometheus: property \"export_uri\" validation failed: must start with "
            "\"/\"");
  StatusOr<Attr> defaults = ParseAttr(json::object());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults.value().export_uri, "/apisix/prometheus/metrics");
  EXPECT_EQ(defaults.value().export_ip, "127.0.0.1");
  EXPECT_EQ(defaults.value().export_port, 9091);
  EXPECT_TRUE(defaults.value().enable_export_server);
  EXPECT_EQ(defaults.value().metric_prefix, "apisix_");
  EXPECT_EQ(defaults.value().default_buckets.size(), 15u);
}

class PrometheusPluginTest : public ::testing::Test {
 protected:
  PluginConstSharedPtr Make(const json& conf) {
    PrometheusFactory factory;
    StatusOr<PluginConstSharedPtr> p = factory.Create(conf, fctx_);
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? p.value() : nullptr;
  }
  void Request(const Plugin& plugin, int status = 200) {
    ctx_.status = status;
    plugin.Log(ctx_);
    ctx_.NextRequest();
  }
  std::string Text() { return fctx_.registry().RenderPrometheus(); }

  FakeFactoryContext fctx_;
  Context ctx_;
  std::string uri_ = "/hello*";
};

TEST_F(PrometheusPluginTest, LabelsComeFromTheRouteAndTheRequest) {
  PluginConstSharedPtr p = Make(json::object());
  ctx_.route = {7, "r1", "hello", "s1", "svc", uri_, ""};
  ctx_.vars = {{"balancer_ip", "10.0.0.1"}};
  ctx_.size = {.request_length = 100, .bytes_sent = 250};
  Request(*p);
  Request(*p);
  Request(*p, 502);
  std::string text = Text();
  EXPECT_NE(text.find("apisix_http_status{code=\"200\",route=\"r1\",matched_uri=\"/hello*\","
                      "matched_host=\"\",service=\"s1\",consumer=\"\",node=\"10.0.0.1\","
                      "request_type=\"traditional_http\",request_llm_model=\"\",llm_model=\"\","
                      "response_source=\"upstream\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_http_status{code=\"502\""), std::string::npos);
  std::string l =
      "route=\"r1\",service=\"s1\",consumer=\"\",node=\"10.0.0.1\",request_type="
      "\"traditional_http\",request_llm_model=\"\",llm_model=\"\"";
  // 12 ms total, 10 upstream, 2 apisix: the buckets are cumulative, `le` inclusive.
  EXPECT_NE(text.find("apisix_http_latency_bucket{type=\"request\"," + l + ",le=\"10\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_http_latency_bucket{type=\"request\"," + l + ",le=\"20\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("apisix_http_latency_bucket{type=\"upstream\"," + l + ",le=\"10\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("apisix_http_latency_bucket{type=\"apisix\"," + l + ",le=\"2\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("apisix_http_latency_sum{type=\"request\"," + l + "} 36\n"),
            std::string::npos);
  EXPECT_NE(text.find("apisix_bandwidth{type=\"ingress\"," + l + "} 300\n"), std::string::npos);
  EXPECT_NE(text.find("apisix_bandwidth{type=\"egress\"," + l + "} 750\n"), std::string::npos);
}

TEST_F(PrometheusPluginTest, PreferNameDisabledLabelsAndExtraLabels) {
  fctx_.metadata_json = {{"disabled_labels", {{"http_status", {"node", "matched_uri"}}}}};
  fctx_.attr_json = {
      {"default_buckets", {100}},
      {"metrics",
       {{"http_status", {{"extra_labels", {{{"method", "$request_method"}}, {{"dc", "eu"}}}}}}}}};
  PluginConstSharedPtr p = Make({{"prefer_name", true}});
  ctx_.route = {8, "r1", "hello", "s1", "", uri_, "*.a.com"};
  ctx_.vars = {{"balancer_ip", "10.0.0.1"}, {"request_method", "POST"}};
  ctx_.from_upstream = false;
  ctx_.time = {0, 3, -1};
  Request(*p, 404);
  std::string text = Text();
  EXPECT_NE(text.find("apisix_http_status{code=\"404\",route=\"hello\",matched_uri=\"\","
                      "matched_host=\"*.a.com\",service=\"s1\",consumer=\"\",node=\"\","
                      "request_type=\"traditional_http\",request_llm_model=\"\",llm_model=\"\","
                      "response_source=\"apisix\",method=\"POST\",dc=\"eu\"} 1\n"),
            std::string::npos)
      << text;
  // No upstream contacted: no upstream observation; apisix = request.
  EXPECT_EQ(text.find("apisix_http_latency_count{type=\"upstream\",route=\"hello\",service=\"s1\","
                      "consumer=\"\",node=\"10.0.0.1\",request_type=\"traditional_http\","
                      "request_llm_model=\"\",llm_model=\"\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_http_latency_bucket{type=\"apisix\",route=\"hello\",service=\"s1\","
                      "consumer=\"\",node=\"10.0.0.1\",request_type=\"traditional_http\","
                      "request_llm_model=\"\",llm_model=\"\",le=\"100\"} 1\n"),
            std::string::npos)
      << text;
  // A new extra-label value is a new series (the cache keys on it).
  ctx_.vars["request_method"] = "GET";
  Request(*p, 404);
  EXPECT_NE(Text().find("method=\"GET\",dc=\"eu\"} 1\n"), std::string::npos);
}

TEST_F(PrometheusPluginTest, ARequestCountsOnceAcrossInstances) {
  PluginConstSharedPtr global = Make(json::object());
  PluginConstSharedPtr route = Make(json::object());
  ctx_.route = {9, "r1", "", "", "", uri_, ""};
  ctx_.status = 200;
  global->Log(ctx_);
  route->Log(ctx_);
  ctx_.NextRequest();
  EXPECT_NE(Text().find("response_source=\"upstream\"} 1\n"), std::string::npos) << Text();
}

// The previous request's label set is tried first: every field of it must match, so
// alternating nodes, statuses and routes still count into their own series.
TEST_F(PrometheusPluginTest, AlternatingLabelSetsCountApart) {
  PluginConstSharedPtr p = Make(json::object());
  for (int i = 0; i < 12; ++i) {
    ctx_.route = {i % 4 < 2 ? 7u : 8u, i % 4 < 2 ? "r7" : "r8", "", "", "", uri_, ""};
    ctx_.vars = {{"balancer_ip", i % 2 == 0 ? "10.0.0.1" : "10.0.0.2"}};
    Request(*p, i % 3 == 0 ? 502 : 200);
  }
  std::string text = Text();
  auto count = [&](std::string_view code, std::string_view route, std::string_view node) {
    std::string series = "apisix_http_status{code=\"" + std::string(code) + "\",route=\"" +
                         std::string(route) +
                         "\",matched_uri=\"/hello*\",matched_host=\"\","
                         "service=\"\",consumer=\"\",node=\"" +
                         std::string(node) + "\",";
    size_t at = text.find(series);
    if (at == std::string::npos) return std::string("absent");
    size_t end = text.find('\n', at);
    return text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1);
  };
  // i: 0..11; route r7 for i%4 in {0,1}; node .1 for even i; 502 for i%3 == 0.
  EXPECT_EQ(count("502", "r7", "10.0.0.1"), "1");  // 0
  EXPECT_EQ(count("200", "r7", "10.0.0.1"), "2");  // 4, 8
  EXPECT_EQ(count("502", "r7", "10.0.0.2"), "1");  // 9
  EXPECT_EQ(count("200", "r7", "10.0.0.2"), "2");  // 1, 5
  EXPECT_EQ(count("502", "r8", "10.0.0.2"), "1");  // 3
  EXPECT_EQ(count("200", "r8", "10.0.0.2"), "2");  // 7, 11
  EXPECT_EQ(count("502", "r8", "10.0.0.1"), "1");  // 6
  EXPECT_EQ(count("200", "r8", "10.0.0.1"), "2");  // 2, 10
}

TEST_F(PrometheusPluginTest, ManyLabelSetsPastTheCacheStayExactAndTheBoundDrops) {
  fctx_.attr_json = {{"max_series", 3000}};
  PluginConstSharedPtr p = Make(json::object());
  ctx_.route = {10, "r1", "", "", "", uri_, ""};
  // 2500 nodes, twice: more than the cache holds, so entries are rebound; counts stay exact.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 2500; ++i) {
      ctx_.vars["balancer_ip"] = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
      Request(*p);
    }
  }
  std::string text = Text();
  EXPECT_NE(text.find("node=\"10.0.9.195\",request_type=\"traditional_http\",request_llm_model="
                      "\"\",llm_model=\"\",response_source=\"upstream\"} 2\n"),
            std::string::npos);
  // http_status keeps 2500 cells; the latency histogram needs three per node: past 3000 the
  // new label sets are dropped and counted.
  EXPECT_GT(fctx_.registry().dropped_series(), 0u);
}

}  // namespace
}  // namespace turnpike::plugins::prometheus
