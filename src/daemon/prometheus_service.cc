#include "daemon/prometheus_service.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "plugins/prometheus/config.h"

namespace turnpike::daemon {

PrometheusService::PrometheusService(
    nlohmann::json attr, const metrics::Registry* registry,
    std::function<ProcessCounters()> counters,
    std::function<std::vector<health::TargetStatus>()> upstream_status)
    : attr_json_(std::move(attr)),
      registry_(registry),
      counters_(std::move(counters)),
      upstream_status_(std::move(upstream_status)) {
  char buf[256] = {};
  hostname_ = gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "localhost";
}

PrometheusService::~PrometheusService() = default;

Status PrometheusService::Start(uv_loop_t* loop) {
  StatusOr<plugins::prometheus::Attr> attr = plugins::prometheus::ParseAttr(attr_json_);
  if (!attr.ok()) return attr.status();
  attr_ = std::make_unique<plugins::prometheus::Attr>(std::move(attr).value());
  if (!attr_->enable_export_server) return Status::Ok();
  server_ = std::make_unique<admin::StatusServer>(
      loop, [this](base::Method method, std::string_view path) { return Answer(method, path); });
  Status listening = server_->Listen({attr_->export_ip, attr_->export_port});
  if (!listening.ok()) {
    // Not fatal (nginx would refuse to start): prometheus is enabled by default, and a second
    // daemon on the host (a test run, a blue/green switch) must still serve traffic.
    spdlog::error("plugin_attr.prometheus.export_addr: {}; metrics are not exported",
                  listening.message());
    server_->Close();
    return Status::Ok();
  }
  spdlog::info("prometheus metrics on {}:{}{}", attr_->export_ip, server_->port(),
               attr_->export_uri);
  return Status::Ok();
}

admin::HttpAnswer PrometheusService::Answer(base::Method method, std::string_view path) {
  if (method != base::Method::kGet || path != attr_->export_uri) {
    return {404, "application/json", "{\"error_msg\":\"404 Not Found\"}\n"};
  }
  return {200, "text/plain; version=0.0.4; charset=utf-8", Render()};
}

std::string PrometheusService::Render() {
  if (attr_ == nullptr) attr_ = std::make_unique<plugins::prometheus::Attr>();  // before Start
  std::string out = registry_->RenderPrometheus();
  ProcessCounters c = counters_ ? counters_() : ProcessCounters{};
  const std::string& p = attr_->metric_prefix;
  auto family = [&](std::string_view name, std::string_view help, std::string_view type) {
    out.append("# HELP ").append(p).append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(p).append(name).append(" ").append(type).append("\n");
  };
  auto sample = [&](std::string_view name, std::string_view labels, uint64_t v) {
    out.append(p).append(name).append(labels).append(" ").append(std::to_string(v));
    out.push_back('\n');
  };
  family("http_requests_total", "The total number of client requests since APISIX started",
         "gauge");
  sample("http_requests_total", "", c.requests);
  // nginx's stub_status states. active, accepted and handled are exact; writing counts the
  // connections with a request in progress (head read, response not finished), waiting the
  // other open ones, and reading is 0: a worker reads a head in one go, and a connection
  // waiting for the rest of a head counts as waiting.
  family("nginx_http_current_connections", "Number of HTTP connections", "gauge");
  uint64_t writing = std::min(c.in_flight, c.active);
  sample("nginx_http_current_connections", "{state=\"accepted\"}", c.accepted);
  sample("nginx_http_current_connections", "{state=\"active\"}", c.active);
  sample("nginx_http_current_connections", "{state=\"handled\"}", c.accepted - c.refused);
  sample("nginx_http_current_connections", "{state=\"reading\"}", 0);
  sample("nginx_http_current_connections", "{state=\"waiting\"}", c.active - writing);
  sample("nginx_http_current_connections", "{state=\"writing\"}", writing);
  family("node_info", "Info of APISIX node", "gauge");
  std::string labels = "{hostname=\"";
  metrics::AppendEscapedLabelValue(&labels, hostname_);
  labels.append("\",version=\"" TURNPIKE_VERSION "\"}");
  sample("node_info", labels, 1);
  // APISIX's exporter sets it from the health checkers at every collection (control/v1.lua's
  // get_health_checkers): the targets of the checkers that exist, 1 when healthy.
  std::vector<health::TargetStatus> statuses;
  if (upstream_status_) statuses = upstream_status_();
  if (!statuses.empty()) {
    family("upstream_status", "Upstream status from health check", "gauge");
    for (const health::TargetStatus& t : statuses) {
      labels = "{name=\"";
      metrics::AppendEscapedLabelValue(&labels, t.name);
      labels.append("\",ip=\"");
      metrics::AppendEscapedLabelValue(&labels, t.ip);
      labels.append("\",port=\"").append(std::to_string(t.port)).append("\"}");
      sample("upstream_status", labels, t.healthy ? 1 : 0);
    }
  }
  uint64_t dropped = registry_->dropped_series();
  out.append(
      "# HELP turnpike_metrics_dropped_series_total Label sets not recorded: a metric reached "
      "its max_series\n# TYPE turnpike_metrics_dropped_series_total counter\n"
      "turnpike_metrics_dropped_series_total ");
  out.append(std::to_string(dropped)).push_back('\n');
  if (dropped > warned_dropped_) {
    spdlog::warn("prometheus: {} label sets dropped so far (plugin_attr.prometheus.max_series {})",
                 dropped, attr_->max_series);
    warned_dropped_ = dropped;
  }
  return out;
}

}  // namespace turnpike::daemon
