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
// A hot path that sees the same label sets again and again binds them once (Counter::Bind,
// Histogram::Bind) and keeps the returned cell, which then costs no lookup at all.
//
// Bound: a metric registered with MetricOptions::max_series keeps at most that many cells
// (a cell is one label set on one worker). Past it a new label set is not recorded: its
// updates are dropped, and MetricsRegistry::dropped_series() counts the label sets refused.
#pragma once

#include <atomic>
#include <cstddef>
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
  size_t max_series = 0;                 // cells (label set x worker) kept; 0 = unbounded.
                                         // Not part of the shape: the first registration's
                                         // bound holds.
};

// One series of a counter on one worker (Counter::Bind): adding is a relaxed load and store
// of that worker's own cell. Empty (adds nothing) when the series was refused by the metric's
// bound. Valid as long as the registry. Worker thread that bound it only.
class CounterCell {
 public:
  CounterCell() = default;
  explicit CounterCell(std::atomic<uint64_t>* value) : value_(value) {}
  void Add(uint64_t delta) const {
    if (value_ != nullptr) {
      value_->store(value_->load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    }
  }
  bool empty() const { return value_ == nullptr; }

 private:
  std::atomic<uint64_t>* value_ = nullptr;
};

// One series of a histogram on one worker (Histogram::Bind); as CounterCell. Observe() is a
// binary search over the bounds and three relaxed stores.
class HistogramCell {
 public:
  HistogramCell() = default;
  HistogramCell(std::span<const double> bounds, std::atomic<uint64_t>* buckets,
                std::atomic<uint64_t>* count, std::atomic<double>* sum)
      : bounds_(bounds), buckets_(buckets), count_(count), sum_(sum) {}
  void Observe(double value) const;
  bool empty() const { return count_ == nullptr; }

 private:
  std::span<const double> bounds_;
  std::atomic<uint64_t>* buckets_ = nullptr;  // bounds_.size() + 1 (+Inf last)
  std::atomic<uint64_t>* count_ = nullptr;
  std::atomic<double>* sum_ = nullptr;
};

// A monotonically increasing integer.
class Counter {
 public:
  // Worker `worker`, hot path. REQUIRES: values.size() == label_names.size().
  virtual void Add(int worker, LabelValues values, uint64_t delta) = 0;
  void Add(int worker, std::initializer_list<std::string_view> values, uint64_t delta = 1) {
    Add(worker, LabelValues(values.begin(), values.size()), delta);
  }
  // Worker `worker`: the cell of this label set on this worker, created if needed (the first
  // time allocates). Empty past the metric's bound. REQUIRES: as Add.
  CounterCell Bind(int worker, LabelValues values) { return BindCounter(worker, values); }
  CounterCell Bind(int worker, std::initializer_list<std::string_view> values) {
    return BindCounter(worker, LabelValues(values.begin(), values.size()));
  }

 protected:
  ~Counter() = default;
  virtual CounterCell BindCounter(int worker, LabelValues values) = 0;
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
  // As Counter::Bind.
  HistogramCell Bind(int worker, LabelValues values) { return BindHistogram(worker, values); }
  HistogramCell Bind(int worker, std::initializer_list<std::string_view> values) {
    return BindHistogram(worker, LabelValues(values.begin(), values.size()));
  }

 protected:
  ~Histogram() = default;
  virtual HistogramCell BindHistogram(int worker, LabelValues values) = 0;
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
  // Label sets refused so far by the metrics' max_series bounds (any thread).
  virtual uint64_t dropped_series() const { return 0; }

 protected:
  ~MetricsRegistry() = default;
};

inline void HistogramCell::Observe(double value) const {
  if (count_ == nullptr) return;
  // First bound >= value: `le` is inclusive. Most observations (latencies in ms, small
  // sizes) fall in the first bucket: tested before the binary search.
  size_t lo = 0, hi = bounds_.size();
  if (hi != 0 && value <= bounds_[0]) hi = 0;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (bounds_[mid] < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  auto bump = [](std::atomic<uint64_t>& a) {
    a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  };
  bump(buckets_[lo]);
  bump(*count_);
  sum_->store(sum_->load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
}

}  // namespace turnpike
