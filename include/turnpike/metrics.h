// Metrics: counters, gauges and histograms that plugins and services register at load time
// and update on the hot path (Seastar's discipline: every worker writes cells of its own,
// and a scrape sums them).
//
//   // Control thread, in PluginFactory::Create (or Service::Start):
//   StatusOr<Counter*> requests = ctx.metrics().AddCounter(
//       {"http_requests_total", "The total number of client requests", {"route", "code"}});
//   // Worker `w`, per request:
//   requests.value()->Add(w, {route_id, status_text});
//
// Registration is idempotent: adding a metric whose name is already registered with the same
// type, label names (and buckets) returns the existing handle, so a factory may register on
// every snapshot build; a name registered with a different shape is an error. Handles stay
// valid as long as the registry (the process, in the daemon), never per snapshot.
//
// Updating costs one lookup of the label values in the calling worker's own series table
// (no lock, no shared write, no allocation once that series exists on that worker); the first
// use of a label set on a worker allocates its cell. Cells are written only by their worker
// and read by the scrape; a worker index is 0..worker_count-1 (FactoryContext::worker_count).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "turnpike/status.h"

namespace turnpike {

// One value per label name, in the order of MetricOptions::label_names. Views are read during
// the call only.
using LabelValues = std::span<const std::string_view>;

struct MetricOptions {
  std::string name;                      // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;                      // free text (escaped when rendered)
  std::vector<std::string> label_names;  // [a-zA-Z_][a-zA-Z0-9_]*, not "__..."; not "le" for
                                         // histograms
};

// A monotonically increasing integer.
class Counter {
 public:
  // Worker `worker`, hot path. REQUIRES: values.size() == label_names.size().
  virtual void Add(int worker, LabelValues values, uint64_t delta) = 0;
  void Add(int worker, std::initializer_list<std::string_view> values, uint64_t delta = 1) {
    Add(worker, LabelValues(values.begin(), values.size()), delta);
  }

 protected:
  ~Counter() = default;
};

// A value that goes up and down. Each worker holds its own value; the scrape shows the sum
// over the workers (so "connections in use" works as each worker's share).
class Gauge {
 public:
  // Worker `worker`, hot path. REQUIRES: values.size() == label_names.size().
  virtual void Set(int worker, LabelValues values, double value) = 0;
  virtual void Add(int worker, LabelValues values, double delta) = 0;
  void Set(int worker, std::initializer_list<std::string_view> values, double value) {
    Set(worker, LabelValues(values.begin(), values.size()), value);
  }
  void Add(int worker, std::initializer_list<std::string_view> values, double delta) {
    Add(worker, LabelValues(values.begin(), values.size()), delta);
  }

 protected:
  ~Gauge() = default;
};

// Observations counted into buckets with upper bounds (Prometheus's cumulative `le`
// buckets, `_sum` and `_count`).
class Histogram {
 public:
  // Worker `worker`, hot path. A binary search over the bounds. REQUIRES: values.size() ==
  // label_names.size().
  virtual void Observe(int worker, LabelValues values, double value) = 0;
  void Observe(int worker, std::initializer_list<std::string_view> values, double value) {
    Observe(worker, LabelValues(values.begin(), values.size()), value);
  }

 protected:
  ~Histogram() = default;
};

// Where metrics are registered. Control thread only; the registry owns every handle.
class MetricsRegistry {
 public:
  // Errors: "invalid metric name 'x-y'", "metric 'a' already registered as a gauge with
  // labels [...]", "invalid label name '__x'", "histogram buckets must increase".
  virtual StatusOr<Counter*> AddCounter(const MetricOptions& options) = 0;
  virtual StatusOr<Gauge*> AddGauge(const MetricOptions& options) = 0;
  // `buckets`: upper bounds, strictly increasing, finite; +Inf is implicit.
  virtual StatusOr<Histogram*> AddHistogram(const MetricOptions& options,
                                            const std::vector<double>& buckets) = 0;

 protected:
  ~MetricsRegistry() = default;
};

}  // namespace turnpike
