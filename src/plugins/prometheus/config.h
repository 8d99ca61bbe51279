// prometheus: config part (reference §4.3). Three sources, all compiled on the control thread:
//
//   # apisix.yaml: on a route, service or global rule
//   plugins:
//     prometheus:
//       prefer_name: true        # route/service label: the name when there is one, else the id
//   plugin_metadata:
//     - id: prometheus
//       disabled_labels:         # these labels are exported as ""
//         http_status: [matched_uri, node]
//   # config.yaml
//   plugin_attr:
//     prometheus:
//       export_uri: /apisix/prometheus/metrics
//       export_addr: {ip: 127.0.0.1, port: 9091}
//       enable_export_server: true
//       metric_prefix: apisix_
//       default_buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000,
//       60000] metrics:
//         http_status:
//           extra_labels: [{upstream_addr: $upstream_addr}]   # "$var", or a constant
//           expire: 0
//       max_series: 200000       # Turnpike: cells (label set x worker) per metric
//
// Schema rules: prefer_name a boolean; disabled_labels maps http_status / http_latency /
// bandwidth to lists of their labels, and `code` / `type` cannot be disabled; export_uri a
// string starting with "/"; export_addr.port 1..65535; default_buckets a non-empty list of
// increasing numbers; extra_labels a list of one-key objects whose value is "$variable" (a
// known variable) or a constant; expire an integer >= 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/request_vars.h"
#include "turnpike/status.h"

namespace turnpike::plugins::prometheus {

// The metrics with per-request labels, as plugin_attr and disabled_labels name them.
enum Metric : uint8_t { kHttpStatus = 0, kHttpLatency = 1, kBandwidth = 2, kMetricCount = 3 };
inline constexpr std::array<const char*, kMetricCount> kMetricNames = {"http_status",
                                                                       "http_latency", "bandwidth"};

// One of `metrics.<name>.extra_labels`: a label whose value is a variable, or a constant.
struct ExtraLabel {
  std::string name;
  bool is_var = false;
  VarRef var;         // is_var
  std::string value;  // !is_var
};

struct MetricAttr {
  std::vector<ExtraLabel> extra_labels;
  int64_t expire = 0;  // seconds; accepted, not applied (series live for the process)
};

// plugin_attr.prometheus.
struct Attr {
  std::string export_uri = "/apisix/prometheus/metrics";
  std::string export_ip = "127.0.0.1";
  int export_port = 9091;
  bool enable_export_server = true;
  std::string metric_prefix = "apisix_";
  std::vector<double> default_buckets = {1,   2,    5,    10,   20,    50,    100,  200,
                                         500, 1000, 2000, 5000, 10000, 30000, 60000};
  std::array<MetricAttr, kMetricCount> metrics;
  size_t max_series = 200000;
};

// Errors read `plugin_attr.prometheus: property "export_addr" validation failed: ...`.
StatusOr<Attr> ParseAttr(const nlohmann::json& attr);

// The built-in labels of each metric, in exposition order (extra labels follow).
std::span<const std::string_view> BuiltinLabels(Metric m);

// The route conf and the metadata, with the built-in labels each metric keeps.
struct Config {
  bool prefer_name = false;
  // disabled[m][i]: built-in label i of metric m is exported as "".
  std::array<std::vector<bool>, kMetricCount> disabled;
};

StatusOr<Config> ParseConfig(const nlohmann::json& conf, const nlohmann::json& metadata);

}  // namespace turnpike::plugins::prometheus
