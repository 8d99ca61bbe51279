// The prometheus plugin and its exporter through the real daemon (apisix-behaviour.md §4.3):
// requests through routes that carry the plugin (or a global rule), then the export listener
// on its own port answers GET export_uri with the summed series; `promtool check metrics`
// accepts the text; and a real Prometheus server scrapes Turnpike and reads a series back
// through its HTTP API.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "integration/itest.h"
#include "support/files.h"
#include "support/process.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;

constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr char kPrometheus[] = "/usr/bin/prometheus";

// The value of the sample line that starts with `series` ("name{labels}"), or -1.
double Sample(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::stod(text.substr(pos + series.size() + 1));
    pos += series.size();
  }
  return -1;
}

class PrometheusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 1u) << "backend did not start"; }

  // Starts the gateway with the exporter on a free port; `attr` adds plugin_attr lines
  // (indented by four spaces).
  void Start(const std::string& routes, const std::string& attr = "") {
    export_port_ = FreePort();
    ASSERT_NE(export_port_, 0);
    TurnpikeOptions options;
    options.top_extra =
        "plugin_attr:\n  prometheus:\n    export_addr:\n      ip: 127.0.0.1\n"
        "      port: " +
        std::to_string(export_port_) + "\n" + attr;
    std::string yaml = Fill(routes, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, yaml, options));
    ASSERT_TRUE(WaitForPort(export_port_, seconds(5))) << "export port not listening";
  }
  std::string Scrape(std::string_view path = "/apisix/prometheus/metrics") {
    HttpResponse r = Get(export_port_, path);
    EXPECT_EQ(r.status, 200) << r.DebugString();
    return r.body;
  }

  // Scrapes until the http_status series add up to `counted` requests: a worker runs the log
  // phase after the response went out, so a scrape right after it may not see it yet.
  std::string ScrapeCounted(int counted, const std::string& prefix = "apisix_") {
    std::string text;
    PollUntil(
        [&] {
          text = Scrape();
          double sum = 0;
          std::string start = prefix + "http_status{";
          for (size_t pos = text.find(start); pos != std::string::npos;
               pos = text.find(start, pos + 1)) {
            if (pos > 0 && text[pos - 1] != '\n') continue;
            size_t space = text.find("} ", pos);
            sum += std::stod(text.substr(space + 2));
          }
          return sum == counted;
        },
        seconds(5));
    return text;
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
  int export_port_ = 0;
};

constexpr char kRoutes[] = R"(
routes:
  - id: r1
    name: hello-route
    uri: /echo*
    hosts: [a.example.com]
    upstream: {A}
    plugins:
      prometheus: {}
  - id: r2
    name: named
    uri: /echo/named
    upstream: {A}
    plugins:
      prometheus: {prefer_name: true}
  - id: quiet
    uri: /echo/quiet
    upstream: {A}
#END
)";

TEST_F(PrometheusTest, CountsRequestsOfRoutesWithThePluginAndServesOnlyGetExportUri) {
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Get(gw_.port(), "/echo/x", {{"Host", "a.example.com"}}).status, 200);
  }
  EXPECT_EQ(Get(gw_.port(), "/echo/named").status, 200);
  EXPECT_EQ(Get(gw_.port(), "/echo/quiet").status, 200);  // no plugin: not counted
  EXPECT_EQ(Get(gw_.port(), "/nothing").status, 404);     // no route, no global rule: not counted

  std::string text = ScrapeCounted(4);
  std::string node = "127.0.0.1";
  EXPECT_EQ(Sample(text,
                   "apisix_http_status{code=\"200\",route=\"r1\",matched_uri=\"/echo*\","
                   "matched_host=\"a.example.com\",service=\"\",consumer=\"\",node=\"" +
                       node +
                       "\",request_type=\"traditional_http\",request_llm_model=\"\","
                       "llm_model=\"\",response_source=\"upstream\"}"),
            3)
      << text;
  EXPECT_EQ(Sample(text,
                   "apisix_http_status{code=\"200\",route=\"named\",matched_uri=\"/echo/named\","
                   "matched_host=\"\",service=\"\",consumer=\"\",node=\"" +
                       node +
                       "\",request_type=\"traditional_http\",request_llm_model=\"\","
                       "llm_model=\"\",response_source=\"upstream\"}"),
            1)
      << text;
  EXPECT_EQ(text.find("route=\"quiet\""), std::string::npos) << text;
  EXPECT_EQ(text.find("code=\"404\""), std::string::npos) << text;
  std::string latency_labels = "route=\"r1\",service=\"\",consumer=\"\",node=\"" + node +
                               "\",request_type=\"traditional_http\",request_llm_model=\"\","
                               "llm_model=\"\"";
  EXPECT_EQ(Sample(text, "apisix_http_latency_count{type=\"request\"," + latency_labels + "}"), 3);
  EXPECT_EQ(Sample(text, "apisix_http_latency_count{type=\"upstream\"," + latency_labels + "}"), 3);
  EXPECT_EQ(Sample(text, "apisix_http_latency_bucket{type=\"request\"," + latency_labels +
                             ",le=\"+Inf\"}"),
            3);
  EXPECT_NE(text.find("le=\"60000\""), std::string::npos);
  EXPECT_GT(Sample(text, "apisix_bandwidth{type=\"egress\"," + latency_labels + "}"), 3 * 50);
  EXPECT_GT(Sample(text, "apisix_bandwidth{type=\"ingress\"," + latency_labels + "}"), 3 * 20);
  EXPECT_GE(Sample(text, "apisix_http_requests_total"), 6);
  EXPECT_GE(Sample(text, "apisix_nginx_http_current_connections{state=\"accepted\"}"), 6);
  EXPECT_GE(Sample(text, "apisix_nginx_http_current_connections{state=\"handled\"}"), 6);
  EXPECT_NE(text.find("apisix_node_info{hostname=\""), std::string::npos);

  // Only GET export_uri.
  EXPECT_EQ(Get(export_port_, "/other").status, 404);
  HttpRequest post;
  post.method = "POST";
  post.target = "/apisix/prometheus/metrics";
  EXPECT_EQ(Fetch(export_port_, post).status, 404);
}

TEST_F(PrometheusTest, GlobalRuleCountsEverythingOnceAndMetadataAttrApply) {
  constexpr char kGlobal[] = R"(
routes:
  - id: r1
    uri: /echo
    upstream: {A}
    plugins:
      prometheus: {}
global_rules:
  - id: g
    plugins:
      prometheus: {}
plugin_metadata:
  - id: prometheus
    disabled_labels:
      http_status: [node]
#END
)";
  ASSERT_NO_FATAL_FAILURE(
      Start(kGlobal,
            "    metric_prefix: tp_\n    default_buckets: [5, 50]\n    metrics:\n"
            "      http_status:\n        extra_labels:\n          - method: $request_method\n"
            "          - zone: eu\n"));
  EXPECT_EQ(Get(gw_.port(), "/echo").status, 200);
  EXPECT_EQ(Get(gw_.port(), "/echo").status, 200);
  EXPECT_EQ(Get(gw_.port(), "/missing").status, 404);
  std::string text = ScrapeCounted(3, "tp_");
  // Counted once although both the global rule and the route carry the plugin.
  EXPECT_EQ(Sample(text,
                   "tp_http_status{code=\"200\",route=\"r1\",matched_uri=\"/echo\","
                   "matched_host=\"\",service=\"\",consumer=\"\",node=\"\","
                   "request_type=\"traditional_http\",request_llm_model=\"\","
                   "llm_model=\"\",response_source=\"upstream\",method=\"GET\",zone=\"eu\"}"),
            2)
      << text;
  EXPECT_EQ(Sample(text,
                   "tp_http_status{code=\"404\",route=\"\",matched_uri=\"\","
                   "matched_host=\"\",service=\"\",consumer=\"\",node=\"\","
                   "request_type=\"traditional_http\",request_llm_model=\"\","
                   "llm_model=\"\",response_source=\"apisix\",method=\"GET\",zone=\"eu\"}"),
            1)
      << text;
  EXPECT_NE(text.find("tp_http_latency_bucket{type=\"request\",route=\"r1\""), std::string::npos);
  EXPECT_NE(text.find(",le=\"50\"}"), std::string::npos) << text;
  EXPECT_EQ(text.find(",le=\"60000\"}"), std::string::npos) << text;
  EXPECT_GE(Sample(text, "tp_http_requests_total"), 3);
}

TEST_F(PrometheusTest, SeriesSurviveAReload) {
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes));
  EXPECT_EQ(Get(gw_.port(), "/echo/named").status, 200);
  std::string routes = std::string(kRoutes);
  routes.insert(routes.find("#END"),
                "  - {id: extra, uri: /echo/extra, upstream: " + std::string("{A}") + "}\n");
  ASSERT_TRUE(
      gw_.RewriteRoutes(Fill(routes, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"}})));
  ASSERT_TRUE(PollUntil([&] { return Get(gw_.port(), "/echo/extra").status == 200; }, seconds(10)));
  EXPECT_EQ(Get(gw_.port(), "/echo/named").status, 200);
  std::string text = ScrapeCounted(2);
  EXPECT_NE(text.find("apisix_http_status{code=\"200\",route=\"named\""), std::string::npos);
  size_t at = text.find("apisix_http_status{code=\"200\",route=\"named\"");
  size_t eol = text.find('\n', at);
  EXPECT_EQ(text.substr(eol - 2, 2), " 2") << text;
}

TEST_F(PrometheusTest, ASecondDaemonOnTheSameExportPortServesWithoutIt) {
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes));
  Turnpike second{kTurnpikeBin};
  TurnpikeOptions options;
  options.top_extra =
      "plugin_attr:\n  prometheus:\n    export_addr:\n      ip: 127.0.0.1\n"
      "      port: " +
      std::to_string(export_port_) + "\n";
  ASSERT_NO_FATAL_FAILURE(StartGateway(
      second, Fill(kRoutes, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"}}), options));
  EXPECT_EQ(Get(second.port(), "/echo/named").status, 200);
  EXPECT_NE(second.Stderr().find("metrics are not exported"), std::string::npos) << second.Stderr();
  EXPECT_EQ(Get(gw_.port(), "/echo/named").status, 200);
  EXPECT_NE(ScrapeCounted(1).find("route=\"named\""), std::string::npos);  // the first one's
}

TEST_F(PrometheusTest, PromtoolAcceptsTheExposition) {
  if (access(kPromtool, X_OK) != 0) GTEST_SKIP() << "promtool is not installed (prometheus)";
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes));
  EXPECT_EQ(Get(gw_.port(), "/echo/x", {{"Host", "a.example.com"}}).status, 200);
  EXPECT_EQ(Get(gw_.port(), "/echo/named").status, 200);
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("metrics.txt"), ScrapeCounted(2)));
  std::string error;
  ProcessOptions o;
  o.stdout_file = dir.File("out.txt");
  o.stderr_file = dir.File("err.txt");
  auto p = Process::Start(
      "/bin/sh", {"-c", std::string(kPromtool) + " check metrics < " + dir.File("metrics.txt")}, o,
      &error);
  ASSERT_NE(p, nullptr) << error;
  std::optional<ExitStatus> s = p->Wait(seconds(20));
  ASSERT_TRUE(s.has_value());
  // 0: clean; 3: parsed, with lint findings (1 would be a parse error). The only findings
  // allowed are those APISIX's own names carry: counters without a _total suffix, and the
  // gauge apisix_http_requests_total with one.
  std::string out = ReadFile(dir.File("out.txt")) + ReadFile(dir.File("err.txt"));
  EXPECT_TRUE(s->exited && (s->code == 0 || s->code == 3)) << s->ToString() << "\n" << out;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    EXPECT_TRUE(line == "apisix_http_status counter metrics should have \"_total\" suffix" ||
                line == "apisix_bandwidth counter metrics should have \"_total\" suffix" ||
                line ==
                    "apisix_http_requests_total non-counter metrics should not have \"_total\" "
                    "suffix")
        << line;
  }
}

TEST_F(PrometheusTest, ARealPrometheusScrapesTurnpike) {
  if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << "prometheus is not installed";
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Get(gw_.port(), "/echo/named").status, 200);
  TempDir dir;
  int web_port = FreePort();
  std::string config =
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: turnpike\n"
      "    metrics_path: /apisix/prometheus/metrics\n    static_configs:\n"
      "      - targets: ['127.0.0.1:" +
      std::to_string(export_port_) + "']\n";
  ASSERT_TRUE(WriteFile(dir.File("prometheus.yml"), config));
  ProcessOptions o;
  o.stderr_file = dir.File("prometheus.log");
  o.stdout_file = dir.File("prometheus.out");
  std::string error;
  std::unique_ptr<Process> prom = Process::Start(
      kPrometheus,
      {"--config.file=" + dir.File("prometheus.yml"), "--storage.tsdb.path=" + dir.File("data"),
       "--web.listen-address=127.0.0.1:" + std::to_string(web_port)},
      o, &error);
  ASSERT_NE(prom, nullptr) << error;
  ASSERT_TRUE(WaitForPort(web_port, seconds(20))) << ReadFile(dir.File("prometheus.log"));
  std::string answer;
  bool found = PollUntil(
      [&] {
        HttpResponse r =
            Get(web_port, "/api/v1/query?query=apisix_http_status%7Broute%3D%22named%22%7D");
        answer = r.body;
        return r.status == 200 && answer.find("\"4\"]") != std::string::npos;
      },
      seconds(30));
  EXPECT_TRUE(found) << answer << "\n" << ReadFile(dir.File("prometheus.log"));
  EXPECT_NE(answer.find("\"code\":\"200\""), std::string::npos) << answer;
  prom->Signal(SIGTERM);  // by PID; the destructor SIGKILLs it if it is still up
  prom->Wait(seconds(10));
}

}  // namespace
}  // namespace turnpike::itest
