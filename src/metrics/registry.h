// metrics::Registry: the MetricsRegistry of the process (include/turnpike/metrics.h), with
// per-worker cells summed at scrape (Seastar's discipline) and rendering to the Prometheus
// text exposition format (version 0.0.4).
//
// Layout. Every metric family holds one series table per worker. A worker's update builds
// the series key from the label values in a scratch string of that table (its capacity is
// reused, so no allocation once warm) and looks it up without a lock: only that worker ever
// inserts into its table. A series seen for the first time on a worker is inserted under the
// table's mutex, which the scrape also takes while it reads that table; values are atomics
// written only by their worker with relaxed loads and stores (plain moves on x86: no locked
// instruction, no shared cache line between workers), read by the scrape.
//
// Threads. Add*() and RenderPrometheus() may run on any control-plane thread (a snapshot
// build on the thread pool, the exporter on the control loop), serialized by a mutex that no
// worker takes. Handle updates run on the worker they name.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "turnpike/metrics.h"

namespace turnpike::metrics {

class Family;

class Registry final : public MetricsRegistry {
 public:
  // REQUIRES: worker_count >= 1.
  explicit Registry(int worker_count);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  StatusOr<Counter*> AddCounter(const MetricOptions& options) override;
  StatusOr<Gauge*> AddGauge(const MetricOptions& options) override;
  StatusOr<Histogram*> AddHistogram(const MetricOptions& options,
                                    const std::vector<double>& buckets) override;
  uint64_t dropped_series() const override;

  // Every family in registration order: `# HELP`, `# TYPE`, then its series (each label set
  // summed over the workers) ordered by label values. A family without labels shows its
  // zero value before any update. Cost: O(series x workers), allocates; never on a worker.
  std::string RenderPrometheus() const;

  int worker_count() const { return worker_count_; }

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  StatusOr<Family*> Add(Type type, const MetricOptions& options,
                        const std::vector<double>& buckets);

  int worker_count_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
};

// Prometheus text helpers, shared with tests.
// A sample value: integers without a fraction, else the shortest round-trip form; "+Inf",
// "-Inf", "NaN".
std::string FormatValue(double v);
// A label value inside quotes: backslash, double quote and newline escaped.
void AppendEscapedLabelValue(std::string* out, std::string_view v);

}  // namespace turnpike::metrics
